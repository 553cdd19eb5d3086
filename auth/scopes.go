package auth

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
)

// Per-target scopes (BearerOptions.ToolScopes, PromptScopes,
// ResourceScopes): RequireBearer reads the JSON-RPC method and the
// target's name or URI from a POST body before the MCP handler does,
// with the same decoder (internal/jsonrpc), so that the two cannot read
// one body differently. Where a body could be read two ways by some
// decoder (a member repeated, or spelled in another case, which the MCP
// handler refuses anyway), the scopes of every reading are required.

// maxBatchScan bounds the messages of a batch examined for scopes; a
// larger batch is refused here (the MCP handler takes 64 at most).
const maxBatchScan = 1024

// bodyReadTimeout bounds how long RequireBearer waits for a body it
// reads for scopes.
const bodyReadTimeout = 30 * time.Second

func (b *bearerHandler) hasTargetScopes() bool {
	return len(b.o.ToolScopes) > 0 || len(b.o.PromptScopes) > 0 || len(b.o.ResourceScopes) > 0
}

// targetScopes reads r's body (putting it back for the next handler)
// and returns the scopes its requests' targets need. ok is false when
// it answered the request itself (a body too large or unreadable).
func (b *bearerHandler) targetScopes(w http.ResponseWriter, r *http.Request) (need []string, ok bool) {
	max := b.o.MaxBodyBytes
	if r.ContentLength > max {
		http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
		return nil, false
	}
	rc := http.NewResponseController(w)
	timed := rc.SetReadDeadline(time.Now().Add(bodyReadTimeout)) == nil
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	if timed {
		_ = rc.SetReadDeadline(time.Time{})
	}
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
		} else {
			http.Error(w, "the request body could not be read", http.StatusBadRequest)
		}
		return nil, false
	}
	need, ok = b.scopesOf(body)
	if !ok {
		http.Error(w, "batch too large", http.StatusRequestEntityTooLarge)
		return nil, false
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return need, true
}

// scopesOf returns the scopes the requests of a message or batch need
// (a body that does not decode needs none: the MCP handler refuses it).
// ok is false for a batch of more than maxBatchScan messages, whose
// scopes are not looked for.
func (b *bearerHandler) scopesOf(body []byte) (need []string, ok bool) {
	add := func(m *jsonrpc.Message) {
		for _, s := range b.messageScopes(m) {
			need = appendNew(need, s)
		}
	}
	if jsonrpc.IsBatch(body) {
		if !jsonrpc.Valid(body) {
			return nil, true
		}
		n := 0
		_ = jsonrpc.Elements(body, func([]byte) error { n++; return nil })
		if n > maxBatchScan {
			return nil, false
		}
		entries, e := jsonrpc.DecodeBatch(body, maxBatchScan)
		if e != nil {
			return nil, true
		}
		for i := range entries {
			if entries[i].Err == nil {
				add(&entries[i].Msg)
			}
		}
		return need, true
	}
	m, e := jsonrpc.Decode(body)
	if e == nil {
		add(&m)
	}
	return need, true
}

// messageScopes returns the scopes the target of one request needs.
func (b *bearerHandler) messageScopes(m *jsonrpc.Message) []string {
	var table map[string][]string
	var member string
	switch m.Method {
	case "tools/call":
		table, member = b.o.ToolScopes, "name"
	case "prompts/get":
		table, member = b.o.PromptScopes, "name"
	case "resources/read", "resources/subscribe", "resources/unsubscribe":
		table, member = b.o.ResourceScopes, "uri"
	default:
		return nil
	}
	if len(table) == 0 || jsonrpc.KindOf(m.Params) != jsonrpc.KindObject {
		return nil
	}
	var need []string
	_ = jsonrpc.Fields(m.Params, func(rawKey, v []byte) error {
		if !jsonrpc.EqualFold(jsonrpc.Key(rawKey), member) {
			return nil
		}
		if name, ok := jsonrpc.String(v); ok {
			for _, s := range table[name] {
				need = appendNew(need, s)
			}
		}
		return nil
	})
	return need
}

func appendNew(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}
