package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// TestEchoExtensionIsServedInBothEras calls the everything-server's own
// extension with roundtrip's client, as custom-method.mjs does with the
// TypeScript one: the plain method with its notifications, and the
// carrier method completed by the client's loop, on 2026-07-28 and on a
// 2025-11-25 session.
func TestEchoExtensionIsServedInBothEras(t *testing.T) {
	srv := newServer(slog.New(slog.NewTextHandler(io.Discard, nil)), mcp.RequestStateOptions{}, nil)
	ts := httptest.NewServer(mcp.NewHTTPHandler(srv, nil))
	defer ts.Close()
	for _, mode := range []mcp.ClientMode{mcp.ModeAuto, mcp.ModeLegacy} {
		var mu sync.Mutex
		var heard []string
		c := mcp.NewClient(mcp.NewHTTPClientTransport(ts.URL, nil), &mcp.ClientOptions{
			Mode: mode,
			Extensions: &mcp.ClientExtensions{
				Declared: map[string]json.RawMessage{extEcho: nil},
				OnNotification: func(method string, params json.RawMessage) {
					mu.Lock()
					heard = append(heard, method+" "+string(params))
					mu.Unlock()
				},
			},
			Elicitation: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: map[string]any{"ok": true}}, nil
			},
		})
		ctx := context.Background()
		out, err := mcp.CallMethodAs[sayOut](ctx, c, &mcp.MethodCall{Method: methodSay, Params: map[string]any{"text": "hi", "times": 2}}, nil)
		if err != nil || out.Echoed != "hi hi" || out.Times != 2 {
			t.Errorf("mode %d: say = %+v, %v; want hi hi", mode, out, err)
		}
		mu.Lock()
		if len(heard) != 2 || heard[0] != noteHeard+` {"index":0,"text":"hi"}` {
			t.Errorf("mode %d: notifications = %q, want two %s", mode, heard, noteHeard)
		}
		mu.Unlock()
		conf, err := mcp.CallMethodAs[confirmOut](ctx, c, &mcp.MethodCall{Method: methodConfirm, Params: map[string]any{"text": "yo"}, TargetMember: "text", Carrier: true}, nil)
		if err != nil || !conf.Confirmed || conf.Text != "yo" {
			t.Errorf("mode %d: confirm = %+v, %v; want confirmed", mode, conf, err)
		}
		c.Close()
	}
}
