package apps_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// serve runs srv behind a Streamable HTTP endpoint on loopback.
func serve(t *testing.T, srv *mcp.Server) string {
	t.Helper()
	hs := httptest.NewServer(mcp.NewHTTPHandler(srv, nil))
	t.Cleanup(hs.Close)
	return hs.URL
}

// wire keeps the last raw result of each method a client received.
type wire struct {
	mu      sync.Mutex
	results map[string]json.RawMessage
}

func (w *wire) get(t *testing.T, method string) json.RawMessage {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	b, ok := w.results[method]
	if !ok {
		t.Fatalf("no %s result was received", method)
	}
	return b
}

// connect returns a 2026-07-28 client of url declaring caps (nil: none)
// and the record of what it received.
func connect(t *testing.T, url string, caps *mcp.ClientCapabilities) (*mcp.Client, *wire) {
	t.Helper()
	w := &wire{results: map[string]json.RawMessage{}}
	c := mcp.NewClient(mcp.NewHTTPClientTransport(url, nil), &mcp.ClientOptions{
		Capabilities: caps,
		Middleware: []mcp.ClientMiddleware{func(next mcp.ClientHandler) mcp.ClientHandler {
			return func(ctx context.Context, req *mcp.ClientRequest) (json.RawMessage, error) {
				res, err := next(ctx, req)
				if err == nil {
					w.mu.Lock()
					w.results[req.Method] = append(json.RawMessage(nil), res...)
					w.mu.Unlock()
				}
				return res, err
			}
		}},
	})
	t.Cleanup(func() { c.Close() })
	return c, w
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return c
}

var schema struct {
	once sync.Once
	root *jsonschema.Schema
	err  error
	mu   sync.Mutex
	defs map[string]*jsonschema.Resolved
}

// validate checks b against a definition of the 2026-07-28 schema.
func validate(t *testing.T, def string, b []byte) {
	t.Helper()
	schema.once.Do(func() {
		raw, err := os.ReadFile("../testdata/schema-2026-07-28.json")
		if err != nil {
			schema.err = err
			return
		}
		schema.root = new(jsonschema.Schema)
		schema.err = json.Unmarshal(raw, schema.root)
		schema.defs = map[string]*jsonschema.Resolved{}
	})
	if schema.err != nil {
		t.Fatalf("loading the schema: %v", schema.err)
	}
	schema.mu.Lock()
	r := schema.defs[def]
	if r == nil {
		s := &jsonschema.Schema{Schema: schema.root.Schema, Ref: "#/$defs/" + def, Defs: schema.root.Defs}
		var err error
		if r, err = s.Resolve(nil); err != nil {
			schema.mu.Unlock()
			t.Fatalf("resolving %s: %v", def, err)
		}
		schema.defs[def] = r
	}
	schema.mu.Unlock()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("invalid JSON %s: %v", b, err)
	}
	if err := r.Validate(v); err != nil {
		t.Errorf("%s does not validate as %s: %v", b, def, err)
	}
}

// member decodes the JSON at a path of object keys and array indexes
// (as numbers) in b.
func member(t *testing.T, b []byte, path ...any) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("%v: not an object at %q in %s", path, k, b)
			}
			v = m[k]
		case int:
			a, ok := v.([]any)
			if !ok || k >= len(a) {
				t.Fatalf("%v: no element %d in %s", path, k, b)
			}
			v = a[k]
		}
	}
	return v
}

// js is the canonical JSON of v, for comparisons.
func js(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mustPanic(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Errorf("%s: no panic", what)
		}
	}()
	f()
}
