package mcp

import (
	"context"
	"testing"
	"time"
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
	for len(l.ch) > 0 {
		<-l.ch
	}
	for _, c := range []Change{{Kind: "bogus"}, {Kind: ChangeResource}, {Kind: ChangeResource, URI: "other"}, {Kind: ChangePrompts}, {Kind: ChangeTools}} {
		f.in <- c
	}
	select {
	case c := <-l.ch:
		if c.kind != changeTools {
			t.Fatalf("delivered %+v", c)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the tools change was not delivered")
	}
	if len(l.ch) != 0 {
		t.Errorf("%d more changes delivered", len(l.ch))
	}
}
