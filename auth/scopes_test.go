package auth

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// TestTargetScopes: a tools/call, prompts/get or resources/read of a
// target with scopes needs them (403 insufficient_scope naming every
// scope the request needs); other requests, lists included, need only
// Scopes; the handler gets the body intact.
func TestTargetScopes(t *testing.T) {
	t.Parallel()
	var got string
	h := RequireBearer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = string(b)
		w.WriteHeader(http.StatusNoContent)
	}), &BearerOptions{
		Verifier: static(map[string]*mcp.TokenInfo{
			"basic": {Subject: "u", Scopes: []string{"mcp"}},
			"admin": {Subject: "u", Scopes: []string{"mcp", "admin"}},
			"all":   {Subject: "u", Scopes: []string{"mcp", "admin", "secrets", "prompts"}},
		}),
		ResourceMetadataURL: "https://mcp.example/.well-known/oauth-protected-resource/mcp",
		Scopes:              []string{"mcp"},
		ToolScopes:          map[string][]string{"nuke": {"admin"}, "vault": {"admin", "secrets"}},
		PromptScopes:        map[string][]string{"review": {"prompts"}},
		ResourceScopes:      map[string][]string{"file:///etc/shadow": {"secrets"}},
		MaxBodyBytes:        8 << 10,
		Logger:              slog.New(slog.DiscardHandler),
	})
	call := func(name string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + name + `","arguments":{}}}`
	}
	for name, c := range map[string]struct {
		token, body string
		status      int
		scope       string // of the challenge
	}{
		"open tool":            {"basic", call("echo"), 204, ""},
		"list":                 {"basic", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, 204, ""},
		"scoped tool":          {"basic", call("nuke"), 403, "mcp admin"},
		"scoped tool, granted": {"admin", call("nuke"), 204, ""},
		"two scopes, one held": {"admin", call("vault"), 403, "mcp admin secrets"},
		"prompt":               {"admin", `{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"review"}}`, 403, "mcp prompts"},
		"resource":             {"admin", `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///etc/shadow"}}`, 403, "mcp secrets"},
		"subscribe":            {"admin", `{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"file:///etc/shadow"}}`, 403, "mcp secrets"},
		"all granted":          {"all", `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///etc/shadow"}}`, 204, ""},
		"in a batch":           {"basic", `[{"jsonrpc":"2.0","id":1,"method":"ping"},` + call("nuke") + `]`, 403, "mcp admin"},
		"escaped name":         {"basic", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"nu\u006be"}}`, 403, "mcp admin"},
		// Two readings (the MCP handler refuses both bodies, but the
		// scopes of each name are required anyway).
		"name twice":        {"admin", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"vault","name":"echo"}}`, 403, "mcp admin secrets"},
		"name in two cases": {"basic", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","NAME":"nuke"}}`, 403, "mcp admin"},
		"not JSON":          {"basic", `{"method":"tools/call"`, 204, ""},
		"a batch too long":  {"basic", "[" + strings.Repeat(`{},`, maxBatchScan) + `{}]`, 413, ""},
		"too large":         {"basic", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"x":"` + strings.Repeat("a", 8<<10) + `"}}}`, 413, ""},
	} {
		got = ""
		r := httptest.NewRequest(http.MethodPost, "https://mcp.example/mcp", strings.NewReader(c.body))
		r.Header.Set("Authorization", "Bearer "+c.token)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != c.status {
			t.Errorf("%s: status %d, want %d", name, w.Code, c.status)
			continue
		}
		switch c.status {
		case 204:
			if got != c.body {
				t.Errorf("%s: the handler read %q", name, got)
			}
		case 403:
			ch, ok, err := BearerChallenge(w.Header())
			if !ok || err != nil || ch.Param("error") != "insufficient_scope" || ch.Param("scope") != c.scope {
				t.Errorf("%s: challenge %q, want insufficient_scope naming %q", name, w.Header().Get("WWW-Authenticate"), c.scope)
			}
			fallthrough
		default:
			if got != "" {
				t.Errorf("%s: the handler ran", name)
			}
		}
	}
}
