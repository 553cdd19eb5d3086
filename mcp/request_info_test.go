package mcp

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// tenantServer has a tool that answers with what RequestInfoFrom and
// RequestHeader tell it: the X-Tenant header, the transport, the
// revision and the session.
func tenantServer(t *testing.T) *Server {
	s := newTestServer(t, nil)
	s.AddTool(&Tool{Name: "whoami", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
			info, ok := RequestInfoFrom(ctx)
			if !ok {
				return nil, NewError(CodeInternalError, "no request info", nil)
			}
			tenant := RequestHeader(ctx).Get("X-Tenant")
			b, _ := json.Marshal(map[string]any{"tenant": tenant, "transport": info.Transport, "version": info.ProtocolVersion,
				"session": info.SessionID != "", "method": info.Method, "http": info.HTTP != nil})
			return TextResult(string(b)), nil
		})
	return s
}

func whoami(t *testing.T, text string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(text), &m); err != nil {
		t.Fatalf("%q: %v", text, err)
	}
	return m
}

type tenantHeader struct{ next http.RoundTripper }

func (h tenantHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Tenant", "acme")
	return h.next.RoundTrip(r)
}

// A handler reads the HTTP request's headers, in both eras and on both
// HTTP transports; on a byte stream there is no HTTP request.
func TestHandlerReadsTheRequestHeadersInEveryEra(t *testing.T) {
	t.Parallel()
	s := tenantServer(t)
	mux := http.NewServeMux()
	mux.Handle("/mcp", NewHTTPHandler(s, nil))
	mux.Handle("/sse", NewSSEHandler(s, nil))
	ts := httptest.NewServer(mux)
	defer ts.Close()
	hc := &http.Client{Transport: tenantHeader{http.DefaultTransport}, Timeout: 10 * time.Second}
	cases := []struct {
		name      string
		url       string
		opts      *ClientOptions
		sse       bool
		transport TransportKind
		version   string
		session   bool
	}{
		{"modern", ts.URL + "/mcp", nil, false, TransportHTTP, LatestProtocolVersion, false},
		{"2025-11-25 session", ts.URL + "/mcp", &ClientOptions{Mode: ModeLegacy}, false, TransportHTTP, LegacyProtocolVersion, true},
		{"2024-11-05 over HTTP+SSE", ts.URL + "/sse", &ClientOptions{Mode: ModePinned, ProtocolVersion: "2024-11-05"}, true, TransportHTTPSSE, "2024-11-05", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := NewClient(NewHTTPClientTransport(tc.url, &HTTPClientOptions{HTTPClient: hc, SSE: tc.sse}), tc.opts)
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			res, err := c.CallTool(ctx, "whoami", nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			m := whoami(t, res.Content[0].(*TextContent).Text)
			if m["tenant"] != "acme" || m["transport"] != string(tc.transport) || m["version"] != tc.version || m["session"] != tc.session || m["method"] != MethodToolsCall {
				t.Errorf("handler saw %v", m)
			}
		})
	}
	t.Run("stream", func(t *testing.T) {
		c := memClient(t, s, nil)
		res, err := c.CallTool(context.Background(), "whoami", nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		m := whoami(t, res.Content[0].(*TextContent).Text)
		if m["tenant"] != "" || m["http"] != false || m["transport"] != string(TransportStream) {
			t.Errorf("handler saw %v", m)
		}
	})
}

func TestRequestInfoOutsideARequestIsAbsent(t *testing.T) {
	t.Parallel()
	if _, ok := RequestInfoFrom(context.Background()); ok {
		t.Error("request info outside a request")
	}
	if RequestHeader(context.Background()) != nil {
		t.Error("headers outside a request")
	}
}

// The server knows which leg of a multi round-trip call a request is:
// the round travels in the sealed state.
func TestRequestInfoKnowsTheRoundOfALeg(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	var rounds []int
	type Q struct {
		A string `json:"a"`
	}
	s.AddTool(&Tool{Name: "three", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
			info, _ := RequestInfoFrom(ctx)
			rounds = append(rounds, info.Round)
			if _, err := Elicit[Q](ctx, "first?"); err != nil {
				return nil, err
			}
			if _, err := Elicit[Q](ctx, "second?"); err != nil {
				return nil, err
			}
			return TextResult("done"), nil
		})
	c := memClient(t, s, &ClientOptions{Elicitation: func(ctx context.Context, r *ElicitRequest) (*ElicitResult, error) {
		return &ElicitResult{Action: ElicitAccept, Content: map[string]any{"a": "x"}}, nil
	}})
	if _, err := c.CallTool(context.Background(), "three", nil, nil); err != nil {
		t.Fatal(err)
	}
	if len(rounds) != 3 || rounds[0] != 1 || rounds[1] != 2 || rounds[2] != 3 {
		t.Errorf("rounds seen by the handler %v, want [1 2 3]", rounds)
	}
}

// A state sealed by an earlier release (no round in it) still opens, as
// round 1.
func TestStatesWithoutARoundStillOpen(t *testing.T) {
	t.Parallel()
	for _, st := range []string{"hplain", "a\x02\x01"} {
		origin, round, rest, ok := openPlain(st)
		if !ok || round != 1 || origin != st[0] || rest != st[1:] {
			t.Errorf("%q: %c %d %q %v", st, origin, round, rest, ok)
		}
	}
	origin, round, rest, ok := openPlain(sealedPlain(stateByAskerRound, 7, "x"))
	if !ok || origin != stateByAsker || round != 7 || rest != "x" {
		t.Errorf("round trip: %c %d %q %v", origin, round, rest, ok)
	}
	if _, _, _, ok := openPlain("H"); ok {
		t.Error("a truncated round opened")
	}
}
