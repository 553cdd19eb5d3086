package mcp

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// rawRequest sends a request of the session and returns the raw bytes
// of the response message (a JSON body or the SSE event that answers).
func (c *legacyClient) rawRequest(t *testing.T, id int, method, params string) []byte {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":` + itoa(id) + `,"method":"` + method + `","params":` + params + `}`
	r, _ := http.NewRequest(http.MethodPost, c.url, strings.NewReader(body))
	c.headers(r)
	r.Header.Set("Accept", "application/json") // one JSON body: the wire as sent
	resp, err := c.hc.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSpace(b)
}

// No result of a session of an earlier revision carries cache hints
// (ttlMs and cacheScope are 2026-07-28's), whatever the server's
// ListTTL and CacheScope and a handler's own hints; a 2026-07-28 request
// to the same server gets them.
func TestLegacyResultsCarryNoCacheHints(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, &ServerOptions{ListTTL: 5 * time.Minute, CacheScope: CachePublic})
	s.AddResource(&Resource{URI: "test://hinted", Name: "hinted"}, func(_ context.Context, r *ReadResourceRequest) (*ReadResourceResult, error) {
		return &ReadResourceResult{Contents: []*ResourceContents{{URI: r.URI, Text: "x"}}, Cache: Cache{TTLMs: 60000, CacheScope: CachePublic}}, nil
	})
	ts, _ := legacyServer(t, s, nil)
	calls := [][2]string{
		{MethodToolsList, `{}`}, {methodPromptsList, `{}`}, {MethodResourcesList, `{}`}, {methodResourceTemplatesList, `{}`},
		{MethodResourcesRead, `{"uri":"test://static"}`}, {MethodResourcesRead, `{"uri":"test://hinted"}`},
		{MethodResourcesRead, `{"uri":"test://items/1"}`},
	}
	for _, version := range []string{LegacyProtocolVersion, "2025-06-18", "2025-03-26", "2024-11-05"} {
		c := newLegacyClientAt(t, ts.URL, version, `{}`)
		for i, call := range calls {
			wire := c.rawRequest(t, i+1, call[0], call[1])
			t.Logf("%s %s: %s", version, call[0], wire)
			if !bytes.Contains(wire, []byte(`"result":`)) {
				t.Fatalf("%s %s: %s", version, call[0], wire)
			}
			if bytes.Contains(wire, []byte(`"ttlMs"`)) || bytes.Contains(wire, []byte(`"cacheScope"`)) {
				t.Errorf("%s %s carries cache hints: %s", version, call[0], wire)
			}
		}
	}
	// The same server's 2026-07-28 answer has them.
	v := post(t, NewHTTPHandler(s, nil), req(1, MethodResourcesRead, `"uri":"test://hinted"`)).last(t)
	if r := result(t, v); r["ttlMs"] != 60000.0 || r["cacheScope"] != string(CachePublic) {
		t.Fatalf("2026-07-28 read: %v", r)
	}
}
