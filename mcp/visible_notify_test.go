package mcp

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// noteReader returns a session's next notification (requests and
// responses on its stream are skipped), failing after a while.
type noteReader func() map[string]any

// The subscriptions every era's session of the tests below asks for: one
// resource of each tenant.
const (
	notesOfA = "test://a/notes"
	notesOfB = "test://b/notes"
)

// openListenNotes opens a 2026-07-28 subscriptions/listen stream as
// tenant, subscribed to both tenants' notes.
func openListenNotes(t *testing.T, h http.Handler, tenant string) noteReader {
	body := req(1, methodSubscriptionsListen, `"notifications":{"toolsListChanged":true,"promptsListChanged":true,"resourcesListChanged":true,"resourceSubscriptions":["`+notesOfA+`","`+notesOfB+`"]}`)
	r, err := http.NewRequest(http.MethodPost, asTenant(t, tenant, h), strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	r.Header = headersFor(t, body)
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	events := sseEvents(t, resp.Body)
	if m := nextEvent(t, events); m["method"] != NotificationSubscriptionsAck {
		t.Fatalf("first event %v", m)
	}
	return func() map[string]any { return nextEvent(t, events) }
}

// openStreamableNotes opens a 2025-11-25 Streamable HTTP session as
// tenant, subscribed to both tenants' notes, and its GET stream.
func openStreamableNotes(t *testing.T, h http.Handler, tenant string) noteReader {
	c := newLegacyClient(t, asTenant(t, tenant, h), `{}`)
	for _, u := range []string{notesOfA, notesOfB} {
		if v := c.request(methodSubscribe, `{"uri":"`+u+`"}`); v["result"] == nil {
			t.Fatalf("subscribe %s: %v", u, v)
		}
	}
	resp := c.get("")
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET stream: %d", resp.StatusCode)
	}
	events := readSSE(resp.Body)
	return func() map[string]any {
		for {
			if m := events.next(t); m["method"] != nil && m["id"] == nil {
				return m
			}
		}
	}
}

// openSSENotes opens an HTTP+SSE (2024-11-05) session as tenant,
// subscribed to both tenants' notes.
func openSSENotes(t *testing.T, h http.Handler, tenant string) noteReader {
	c := openRawSSE(t, asTenant(t, tenant, h)+"/sse", "")
	c.initialize("2024-11-05", `{}`)
	for i, u := range []string{notesOfA, notesOfB} {
		c.mustPost(`{"jsonrpc":"2.0","id":` + itoa(i+1) + `,"method":"resources/subscribe","params":{"uri":"` + u + `"}}`)
		if m := c.next(); m["result"] == nil {
			t.Fatalf("subscribe %s: %v", u, m)
		}
	}
	return func() map[string]any {
		for {
			if m := c.next(); m["method"] != nil && m["id"] == nil {
				return m
			}
		}
	}
}

// openStdioNotes opens a 2025-11-25 session on a byte stream served in a
// context naming tenant, subscribed to both tenants' notes.
func openStdioNotes(t *testing.T, s *Server, tenant string) noteReader {
	c := newStreamClientIn(t, s, context.WithValue(context.Background(), tenantKey{}, tenant))
	c.send(legacyInitLine(`{}`))
	result(t, c.next())
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for i, u := range []string{notesOfA, notesOfB} {
		c.send(`{"jsonrpc":"2.0","id":` + itoa(i+1) + `,"method":"resources/subscribe","params":{"uri":"` + u + `"}}`)
		if m := c.next(); m["result"] == nil {
			t.Fatalf("subscribe %s: %v", u, m)
		}
	}
	return func() map[string]any {
		for {
			if m := c.next(); m["method"] != nil && m["id"] == nil {
				return m
			}
		}
	}
}

// noteName is a notification as the tests compare it: the method, and
// the URI of a resource update.
func noteName(m map[string]any) string {
	name, _ := m["method"].(string)
	if p, ok := m["params"].(map[string]any); ok && name == NotificationResourceUpdated {
		name += " " + p["uri"].(string)
	}
	return name
}

// ServerOptions.Visible applies to every notification of every era as
// to the lists: a session that cannot see a feature is never told of a
// change caused only by it (the update of a resource it subscribed to,
// a list change that added or removed only hidden features), and a
// session that can see it is. Each session reads its notifications in
// order, so a hidden change told would show up before the next visible
// one.
func TestHiddenFeaturesAreHiddenFromNotifications(t *testing.T) {
	eras := []struct {
		name string
		open func(t *testing.T, s *Server, h http.Handler, sse http.Handler, tenant string) noteReader
	}{
		{"2026-07-28 listen", func(t *testing.T, _ *Server, h, _ http.Handler, tenant string) noteReader {
			return openListenNotes(t, h, tenant)
		}},
		{"2025-11-25 GET stream", func(t *testing.T, _ *Server, h, _ http.Handler, tenant string) noteReader {
			return openStreamableNotes(t, h, tenant)
		}},
		{"2024-11-05 HTTP+SSE", func(t *testing.T, _ *Server, _, sse http.Handler, tenant string) noteReader {
			return openSSENotes(t, sse, tenant)
		}},
		{"2025-11-25 stdio", func(t *testing.T, s *Server, _, _ http.Handler, tenant string) noteReader {
			return openStdioNotes(t, s, tenant)
		}},
	}
	noopTool := func(context.Context, *CallToolRequest) (ToolResponse, error) { return TextResult(""), nil }
	noopPrompt := func(context.Context, *GetPromptRequest) (PromptResponse, error) { return &GetPromptResult{}, nil }
	noopRead := func(_ context.Context, r *ReadResourceRequest) (*ReadResourceResult, error) {
		return &ReadResourceResult{Contents: []*ResourceContents{{URI: r.URI, Text: ""}}}, nil
	}
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			t.Parallel()
			s := newTenantServer(t, nil)
			t.Cleanup(func() { s.Close() })
			h, sse := NewHTTPHandler(s, nil), NewSSEHandler(s, nil)
			a := era.open(t, s, h, sse, "a")
			b := era.open(t, s, h, sse, "b")

			s.ResourceUpdated(notesOfB)                                        // b's resource: a is not told
			s.AddTool(&Tool{Name: "b_new"}, noopTool)                          // b's tool
			s.RemovePrompts("b_brief")                                         // b's prompt
			s.AddResource(&Resource{URI: "test://b/new", Name: "n"}, noopRead) // b's resource
			s.ResourceUpdated(notesOfA)                                        // a's: b is not told
			s.AddTool(&Tool{Name: "b_last"}, noopTool)                         // b's tool
			s.AddPrompt(&Prompt{Name: "a_last"}, noopPrompt)                   // a's prompt

			check := func(who string, next noteReader, want []string) {
				t.Helper()
				for i, w := range want {
					if got := noteName(next()); got != w {
						t.Fatalf("%s's notification %d is %q, want %q (all: %q)", who, i, got, w, want)
					}
				}
			}
			check("a", a, []string{NotificationResourceUpdated + " " + notesOfA, notificationPromptListChanged})
			check("b", b, []string{
				NotificationResourceUpdated + " " + notesOfB, NotificationToolListChanged,
				notificationPromptListChanged, notificationResourceListChanged, NotificationToolListChanged,
			})
		})
	}
}

// A resource update that comes from another instance of the fleet names
// its resource: a session that cannot see it is not told either.
func TestAnotherInstancesUpdateOfAHiddenResourceIsHidden(t *testing.T) {
	t.Parallel()
	f := &stuckFanout{in: make(chan Change), published: make(chan Change, 16)}
	s := newTenantServer(t, &ServerOptions{Fanout: f})
	t.Cleanup(func() { s.Close() })
	a := openStreamableNotes(t, NewHTTPHandler(s, nil), "a")
	f.in <- Change{Kind: ChangeResource, URI: notesOfB}
	f.in <- Change{Kind: ChangeResource, URI: notesOfA}
	if got := noteName(a()); got != NotificationResourceUpdated+" "+notesOfA {
		t.Fatalf("a was told %q first, want the update of its own resource", got)
	}
}
