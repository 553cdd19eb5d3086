// Package redisfanout shares a fleet's change notifications through Redis
// pub/sub: set mcp.ServerOptions.Fanout to a Fanout on the same channel in
// every instance, and a resource updated (or a list changed) through one
// instance reaches the listen streams held by all of them.
//
// Redis pub/sub is fire and forget: a message published while an
// instance is reconnecting is lost for it. That suits these notifications,
// which only tell clients to look again.
package redisfanout

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// DefaultChannel is the channel New uses when given none.
const DefaultChannel = "mcp:changes"

// maxMessage bounds a message taken from the channel; a larger one is
// ignored (a change is a kind and a URI).
const maxMessage = 16 << 10

// Fanout is an mcp.Fanout over one Redis pub/sub channel.
type Fanout struct {
	client  redis.UniversalClient
	channel string
	origin  string // this instance, so that its own messages are skipped
}

// New returns a Fanout publishing to and subscribed to channel (empty
// means DefaultChannel). Use one Fanout per server.
func New(client redis.UniversalClient, channel string) *Fanout {
	if channel == "" {
		channel = DefaultChannel
	}
	var id [12]byte
	_, _ = rand.Read(id[:])
	return &Fanout{client: client, channel: channel, origin: hex.EncodeToString(id[:])}
}

type message struct {
	Origin string `json:"origin"`
	mcp.Change
}

// Publish sends c to the other instances.
func (f *Fanout) Publish(ctx context.Context, c mcp.Change) error {
	b, err := json.Marshal(message{Origin: f.origin, Change: c})
	if err != nil {
		return err
	}
	if err := f.client.Publish(ctx, f.channel, b).Err(); err != nil {
		return fmt.Errorf("redisfanout: publish: %w", err)
	}
	return nil
}

// Subscribe delivers the changes other instances publish until ctx ends.
// Malformed messages are skipped.
func (f *Fanout) Subscribe(ctx context.Context, deliver func(mcp.Change)) error {
	ps := f.client.Subscribe(ctx, f.channel)
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil { // the subscription is in place
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("redisfanout: subscribe: %w", err)
	}
	ch := ps.Channel()
	for {
		select {
		case <-ctx.Done():
			return nil
		case m, ok := <-ch:
			if !ok {
				return nil
			}
			var msg message
			if len(m.Payload) > maxMessage || json.Unmarshal([]byte(m.Payload), &msg) != nil || msg.Origin == f.origin {
				continue
			}
			deliver(msg.Change)
		}
	}
}
