package mcp

import (
	"context"
	"time"
)

// A fleet of instances serving one MCP server shares its change
// notifications through a Fanout: a resource updated through one
// instance, or a list changed on one, reaches the subscriptions/listen
// streams (and 2025-11-25 GET streams) held by every instance. The
// notifications only say "look again", so delivery is best effort: a lost
// message costs a client a stale list until the next change, never wrong
// data. mcp/redisfanout is the Redis (pub/sub) implementation.

// Change is one change notification as it travels between instances.
type Change struct {
	// Kind is ChangeTools, ChangePrompts or ChangeResources (a list
	// changed) or ChangeResource (URI was updated).
	Kind ChangeKind `json:"kind"`
	URI  string     `json:"uri,omitempty"`
}

// ChangeKind says what a Change is about.
type ChangeKind string

// Change kinds.
const (
	ChangeTools     ChangeKind = "tools"
	ChangePrompts   ChangeKind = "prompts"
	ChangeResources ChangeKind = "resources"
	ChangeResource  ChangeKind = "resource"
)

// Fanout carries changes between the instances of a fleet.
type Fanout interface {
	// Publish sends c to the other instances. The server calls it from
	// one goroutine of its own, never from the code that made the change.
	Publish(ctx context.Context, c Change) error
	// Subscribe calls deliver for each change published by another
	// instance (never for this instance's own) until ctx ends, then
	// returns. The server calls it when it is made, on a goroutine of its
	// own, and again (after a growing delay, up to 30 s) whenever it
	// returns before ctx ends, with or without an error.
	Subscribe(ctx context.Context, deliver func(Change)) error
}

// fanoutQueue bounds the changes waiting to be published; beyond it the
// oldest waiting are not sent (the clients look again at the next one).
const fanoutQueue = 256

type fanoutState struct {
	out  chan Change
	stop context.CancelFunc
}

func (s *Server) startFanout(f Fanout) {
	ctx, cancel := context.WithCancel(context.Background())
	s.fanout = &fanoutState{out: make(chan Change, fanoutQueue), stop: cancel}
	go func() {
		// Subscribe again whenever it ends early (the store restarted or
		// was unreachable when the server started), backing off to 30 s.
		wait := time.Second
		for {
			err := f.Subscribe(ctx, s.receiveChange)
			if ctx.Err() != nil {
				return
			}
			s.log.Warn("mcp: fan-out subscription ended; subscribing again", "err", err, "in", wait)
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			wait = min(2*wait, 30*time.Second)
		}
	}()
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case c := <-s.fanout.out:
				pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
				if err := f.Publish(pctx, c); err != nil && ctx.Err() == nil {
					s.log.Warn("mcp: fan-out publish failed", "kind", c.Kind, "err", err)
				}
				pcancel()
			}
		}
	}()
}

// changed delivers a change to this instance's streams and queues it for
// the fleet.
func (s *Server) changed(ch change) {
	s.hub.publish(ch, s.visibleChange)
	if s.fanout == nil {
		return
	}
	c := Change{Kind: changeNames[ch.kind], URI: ch.uri}
	for {
		select {
		case s.fanout.out <- c:
			return
		default:
		}
		select { // full: drop the oldest waiting change
		case <-s.fanout.out:
		default:
		}
	}
}

var changeNames = [...]ChangeKind{changeTools: ChangeTools, changePrompts: ChangePrompts, changeResources: ChangeResources, changeResource: ChangeResource}

// receiveChange delivers a change from another instance to this one's
// streams only.
func (s *Server) receiveChange(c Change) {
	for k, name := range changeNames {
		if name != "" && name == c.Kind {
			if changeKind(k) == changeResource && c.URI == "" {
				return
			}
			// Another instance's list change names no features: every
			// stream that wants its kind is told (visible.go). A
			// resource update names its resource, hidden as here.
			ch := change{kind: changeKind(k), uri: c.URI}
			if ch.kind == changeResource {
				ch.feature, ch.names = FeatureResource, []string{c.URI}
			}
			s.hub.publish(ch, s.visibleChange)
			return
		}
	}
}
