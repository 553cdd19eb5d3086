package redisfanout

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/roundtrip-mcp/roundtrip/mcp"
	"github.com/roundtrip-mcp/roundtrip/redis/redistest"
)

var uris = []string{"test://warm-a", "test://warm-b", "test://x", "test://marker"}

// instance is one server of the fleet on loopback HTTP, with a client
// listening to it; notes receives what the client is told (after the
// acknowledgement).
type instance struct {
	s     *mcp.Server
	notes chan *mcp.ListenNotification
}

func newInstance(t *testing.T, sock string) *instance {
	t.Helper()
	s := mcp.NewServer(mcp.Implementation{Name: "fleet", Version: "1"}, &mcp.ServerOptions{Fanout: New(redistest.Client(t, sock), "")})
	t.Cleanup(func() { s.Close() })
	for _, u := range uris {
		s.AddResource(&mcp.Resource{URI: u, Name: u}, func(ctx context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{}, nil
		})
	}
	ts := httptest.NewServer(mcp.NewHTTPHandler(s, nil))
	t.Cleanup(ts.Close)
	c := mcp.NewClient(mcp.NewHTTPClientTransport(ts.URL, nil), nil)
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	in := &instance{s: s, notes: make(chan *mcp.ListenNotification, 256)}
	acked := make(chan struct{})
	go c.Listen(ctx, mcp.SubscriptionFilter{ToolsListChanged: true, ResourceSubscriptions: uris}, func(n *mcp.ListenNotification) {
		if n.Method == mcp.NotificationSubscriptionsAck {
			close(acked)
			return
		}
		in.notes <- n
	})
	select {
	case <-acked:
	case <-time.After(5 * time.Second):
		t.Fatal("no listen acknowledgement")
	}
	return in
}

// until repeats publish until in hears of uri: the fan-out subscriptions
// are made asynchronously when the servers start.
func (in *instance) until(t *testing.T, uri string, publish func()) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		publish()
		select {
		case n := <-in.notes:
			if n.Method == mcp.NotificationResourceUpdated && n.URI == uri {
				return
			}
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			t.Fatalf("never heard of %s", uri)
		}
	}
}

// next returns the next notification other than a warm-up.
func (in *instance) next(t *testing.T) *mcp.ListenNotification {
	t.Helper()
	for {
		select {
		case n := <-in.notes:
			if n.URI == "test://warm-a" || n.URI == "test://warm-b" {
				continue
			}
			return n
		case <-time.After(5 * time.Second):
			t.Fatal("no notification")
			return nil
		}
	}
}

func TestChangesReachTheWholeFleet(t *testing.T) {
	sock := redistest.Start(t)
	a, b := newInstance(t, sock), newInstance(t, sock)
	b.until(t, "test://warm-a", func() { a.s.ResourceUpdated("test://warm-a") })
	a.until(t, "test://warm-b", func() { b.s.ResourceUpdated("test://warm-b") })

	// A resource updated through A reaches B's client.
	a.s.ResourceUpdated("test://x")
	if n := b.next(t); n.Method != mcp.NotificationResourceUpdated || n.URI != "test://x" {
		t.Fatalf("B heard %s %q", n.Method, n.URI)
	}
	// A's own client hears it once: locally, not again from Redis. The
	// marker, published by B after Redis delivered x, comes after any
	// echo of x on A's subscription.
	if n := a.next(t); n.URI != "test://x" {
		t.Fatalf("A heard %s %q first", n.Method, n.URI)
	}
	b.s.ResourceUpdated("test://marker")
	if n := a.next(t); n.URI != "test://marker" {
		t.Fatalf("A heard %s %q before the marker: its own change came back", n.Method, n.URI)
	}
	if n := b.next(t); n.URI != "test://marker" {
		t.Fatalf("B heard %s %q", n.Method, n.URI)
	}

	// A tool list changed on B reaches A's client.
	b.s.AddTool(&mcp.Tool{Name: "new"}, func(context.Context, *mcp.CallToolRequest) (mcp.ToolResponse, error) {
		return mcp.TextResult("ok"), nil
	})
	if n := a.next(t); n.Method != mcp.NotificationToolListChanged {
		t.Fatalf("A heard %s", n.Method)
	}

	// B closing does not stop A serving its own clients.
	b.s.Close()
	a.s.ResourceUpdated("test://x")
	if n := a.next(t); n.URI != "test://x" {
		t.Fatalf("A heard %s %q", n.Method, n.URI)
	}
}

// Messages that are not changes are skipped, never delivered.
func TestMalformedMessagesAreSkipped(t *testing.T) {
	sock := redistest.Start(t)
	rdb := redistest.Client(t, sock)
	f := New(redistest.Client(t, sock), "chan")
	got := make(chan mcp.Change, 8)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- f.Subscribe(ctx, func(c mcp.Change) { got <- c }) }()
	// Wait for the subscription, then send junk and one good message.
	deadline := time.Now().Add(5 * time.Second)
	for n, _ := rdb.PubSubNumSub(ctx, "chan").Result(); n["chan"] == 0; n, _ = rdb.PubSubNumSub(ctx, "chan").Result() {
		if time.Now().After(deadline) {
			t.Fatal("no subscriber")
		}
		time.Sleep(10 * time.Millisecond)
	}
	big := make([]byte, maxMessage+1)
	for i := range big {
		big[i] = ' '
	}
	for _, junk := range []any{"not json", `{"kind":`, string(big), `{"origin":"` + f.origin + `","kind":"tools"}`} {
		rdb.Publish(ctx, "chan", junk)
	}
	rdb.Publish(ctx, "chan", `{"origin":"other","kind":"resource","uri":"u"}`)
	select {
	case c := <-got:
		if c.Kind != mcp.ChangeResource || c.URI != "u" {
			t.Fatalf("delivered %+v", c)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the good message was not delivered")
	}
	select {
	case c := <-got:
		t.Fatalf("delivered %+v too", c)
	case <-time.After(100 * time.Millisecond):
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Subscribe after cancel: %v", err)
	}
}
