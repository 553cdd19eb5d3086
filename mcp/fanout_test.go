package mcp

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/testutil"
)

// stuckFanout never finishes publishing and hands out what the test
// sends on in.
type stuckFanout struct {
	in        chan Change
	published chan Change
}

func (f *stuckFanout) Publish(ctx context.Context, c Change) error {
	f.published <- c
	<-ctx.Done()
	return ctx.Err()
}

func (f *stuckFanout) Subscribe(ctx context.Context, deliver func(Change)) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case c := <-f.in:
			deliver(c)
		}
	}
}

// A fleet that does not keep up never holds up the code making changes,
// and what comes from the fleet reaches only streams that want it.
func TestFanoutNeverBlocksAndFiltersWhatArrives(t *testing.T) {
	t.Parallel()
	f := &stuckFanout{in: make(chan Change), published: make(chan Change, 1)}
	s := NewServer(Implementation{Name: "t", Version: "1"}, &ServerOptions{Fanout: f})
	defer s.Close()
	l := s.hub.add(SubscriptionFilter{ToolsListChanged: true, ResourceSubscriptions: []string{"u"}})
	defer s.hub.remove(l)

	start := time.Now()
	for i := 0; i < 3*fanoutQueue; i++ {
		s.ResourceUpdated("u")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("changes waited for the fleet: %v", d)
	}
	select {
	case c := <-f.published:
		if c != (Change{Kind: ChangeResource, URI: "u"}) {
			t.Errorf("published %+v", c)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("nothing published")
	}
	l.take()
	for _, c := range []Change{{Kind: "bogus"}, {Kind: ChangeResource}, {Kind: ChangeResource, URI: "other"}, {Kind: ChangePrompts}, {Kind: ChangeTools}} {
		f.in <- c
	}
	var got []change
	testutil.Eventually(t, 5*time.Second, "a delivery", func() bool {
		select {
		case <-l.ready:
			got = append(got, l.take()...)
		default:
		}
		return len(got) != 0
	})
	if len(got) != 1 || got[0].kind != changeTools {
		t.Fatalf("delivered %+v, want the tools change alone", got)
	}
}

// flakyFanout fails its first subscriptions, then delivers.
type flakyFanout struct {
	calls chan struct{}
	in    chan Change
}

func (f *flakyFanout) Publish(context.Context, Change) error { return nil }

func (f *flakyFanout) Subscribe(ctx context.Context, deliver func(Change)) error {
	f.calls <- struct{}{}
	if len(f.calls) < 2 {
		return errors.New("store unreachable")
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case c := <-f.in:
			deliver(c)
		}
	}
}

// A subscription that fails (the store down when the server starts) is
// made again, and changes from the fleet flow once it holds. The pause
// before subscribing again is the bubble's clock.
func TestFanoutSubscribesAgain(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := &flakyFanout{calls: make(chan struct{}, 8), in: make(chan Change)}
		s := NewServer(Implementation{Name: "t", Version: "1"}, &ServerOptions{Fanout: f})
		defer s.Close()
		l := s.hub.add(SubscriptionFilter{ToolsListChanged: true})
		defer s.hub.remove(l)
		select {
		case f.in <- Change{Kind: ChangeTools}:
		case <-time.After(10 * time.Second):
			t.Fatal("never subscribed again")
		}
		select {
		case <-l.ready:
		case <-time.After(5 * time.Second):
			t.Fatal("the change was not delivered")
		}
		if n := len(f.calls); n != 2 {
			t.Errorf("%d subscriptions, want 2", n)
		}
	})
}
