package mcptest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/roundtrip-mcp/roundtrip/mcp"
	"github.com/roundtrip-mcp/roundtrip/mcptest"
)

// The acceptance test: a tool of three rounds (elicitation, sampling,
// roots), tested in both eras. The test body is 11 lines, from
// mcptest.Eras to its closing "})".
func TestThreeRoundToolInBothEras(t *testing.T) {
	mcptest.Eras(t, func(t *testing.T, era mcptest.Era) {
		h := mcptest.New(t, newServer(), &mcptest.Options{Era: era})
		h.Answer(
			mcptest.Elicit("Which region?", map[string]any{"region": "eu"}),
			mcptest.Sample("Name a database in eu", "orders"),
			mcptest.Roots("file:///srv/db"),
		)
		if got, n := mcptest.Text(h.CallTool("provision", nil)), len(h.Rounds()); got != "orders in eu at file:///srv/db" || n != 3 {
			t.Errorf("result %q after %d rounds, want %q after 3", got, n, "orders in eu at file:///srv/db")
		}
	})
}

func TestRoundsRecordEachQuestionWithItsAnswer(t *testing.T) {
	mcptest.Eras(t, func(t *testing.T, era mcptest.Era) {
		h := mcptest.New(t, newServer(), &mcptest.Options{Era: era})
		h.Answer(
			mcptest.Elicit("Which region?", map[string]any{"region": "us"}),
			mcptest.Sample(mcptest.Prefix("Name a database"), "orders"),
			mcptest.Roots("file:///a", "file:///b"),
		)
		h.CallTool("provision", nil)
		rounds := h.Rounds()
		want := []struct{ method, text string }{
			{mcp.MethodElicit, "Which region?"},
			{mcp.MethodCreateMessage, "Name a database in us"},
			{mcp.MethodListRoots, ""},
		}
		if len(rounds) != len(want) {
			t.Fatalf("rounds %+v", rounds)
		}
		for i, w := range want {
			if len(rounds[i]) != 1 {
				t.Fatalf("round %d: %+v", i+1, rounds[i])
			}
			q := rounds[i][0]
			if q.Method != w.method || q.Text != w.text || q.Answer == nil || q.Request == nil {
				t.Errorf("round %d: %+v, want %s %q answered", i+1, q, w.method, w.text)
			}
			if hasKey := q.Key != ""; hasKey != (era == mcptest.Modern) {
				t.Errorf("round %d: key %q in era %s", i+1, q.Key, era)
			}
		}
		if r, ok := rounds[2][0].Answer.(*mcp.ListRootsResult); !ok || len(r.Roots) != 2 || r.Roots[1].URI != "file:///b" {
			t.Errorf("roots answer %+v", rounds[2][0].Answer)
		}
	})
}

// Questions asked together leave in one Modern round and as one live
// request each on a Legacy session: Rounds reports what travelled.
func TestRoundsAreInputRequiredResultsOrLiveRequests(t *testing.T) {
	mcptest.Eras(t, func(t *testing.T, era mcptest.Era) {
		h := mcptest.New(t, newServer(), &mcptest.Options{Era: era})
		h.Answer(
			mcptest.Elicit("Which region?", map[string]any{"region": "eu"}),
			mcptest.Elicit("How many GB?", map[string]any{"gb": 20}),
		)
		if got := mcptest.Text(h.CallTool("size", nil)); got != "20 GB in eu" {
			t.Fatalf("result %q", got)
		}
		var shape []int
		for _, r := range h.Rounds() {
			shape = append(shape, len(r))
		}
		want := "[1 1]"
		if era == mcptest.Modern {
			want = "[2]"
		}
		if got := fmt.Sprint(shape); got != want {
			t.Errorf("questions per round %v, want %s", shape, want)
		}
	})
}

func TestRoundsDescribeTheLastCallOnly(t *testing.T) {
	mcptest.Eras(t, func(t *testing.T, era mcptest.Era) {
		h := mcptest.New(t, newServer(), &mcptest.Options{Era: era})
		h.Answer(mcptest.Elicit("Which region?", map[string]any{"region": "eu"}), mcptest.Sample(mcptest.Any, "x"), mcptest.Roots("file:///r"))
		h.CallTool("provision", nil)
		h.CallTool("echo", nil)
		if r := h.Rounds(); len(r) != 0 {
			t.Errorf("rounds after a call that asked nothing: %+v", r)
		}
		// A call made with the client directly is recorded too.
		if _, err := h.Client.CallTool(t.Context(), "provision", nil, nil); err != nil {
			t.Fatal(err)
		}
		if r := h.Rounds(); len(r) != 3 {
			t.Errorf("%d rounds after h.Client.CallTool, want 3", len(r))
		}
	})
}

func TestNewFailsWhenTheServerRefusesTheEra(t *testing.T) {
	srv := mcp.NewServer(mcp.Implementation{Name: "modern-only", Version: "1"}, &mcp.ServerOptions{DisableLegacy: true})
	ft := newFakeT()
	reached := false
	ft.run(func(ft *fakeT) {
		mcptest.New(ft, srv, &mcptest.Options{Era: mcptest.Legacy})
		reached = true
	})
	if reached || !strings.Contains(ft.errorText(), "mcptest: connecting in era 2025-11-25") {
		t.Errorf("New returned: %v; failures:\n%s", reached, ft.errorText())
	}
}

// An Era may be any session revision the client speaks; it is served as
// such (live requests, no keys).
func TestAnEarlierSessionRevisionIsAnEra(t *testing.T) {
	h := mcptest.New(t, newServer(), &mcptest.Options{Era: "2025-06-18"})
	h.Answer(mcptest.Elicit("Which region?", map[string]any{"region": "eu"}), mcptest.Sample(mcptest.Any, "orders"), mcptest.Roots("file:///r"))
	if got := mcptest.Text(h.CallTool("provision", nil)); got != "orders in eu at file:///r" {
		t.Errorf("result %q", got)
	}
	if v := h.Client.ProtocolVersion(); v != "2025-06-18" {
		t.Errorf("version %q", v)
	}
	if r := h.Rounds(); len(r) != 3 || r[0][0].Key != "" {
		t.Errorf("rounds %+v", r)
	}
	if !strings.Contains(string(h.Wire()[1].JSON), `"protocolVersion":"2025-06-18"`) {
		t.Errorf("handshake answer %s", h.Wire()[1])
	}

	ft := newFakeT()
	ft.run(func(ft *fakeT) { mcptest.New(ft, newServer(), &mcptest.Options{Era: "1999-01-01"}) })
	if !strings.Contains(ft.errorText(), "mcptest: connecting in era 1999-01-01") {
		t.Errorf("an unknown era: failures %q", ft.errorText())
	}
}

func TestOptionsClientIsKeptButTheScriptAnswers(t *testing.T) {
	var seen []string
	opts := &mcptest.Options{Client: &mcp.ClientOptions{
		Info: mcp.Implementation{Name: "my-client", Version: "9"},
		Middleware: []mcp.ClientMiddleware{func(next mcp.ClientHandler) mcp.ClientHandler {
			return func(ctx context.Context, req *mcp.ClientRequest) (json.RawMessage, error) {
				seen = append(seen, req.Method)
				return next(ctx, req)
			}
		}},
	}}
	h := mcptest.New(t, newServer(), opts)
	h.Answer(mcptest.Elicit(mcptest.Any, map[string]any{"region": "eu"}))
	if got := mcptest.Text(h.CallTool("keyed", nil)); got != "eu" {
		t.Fatalf("result %q", got)
	}
	if strings.Join(seen, " ") != "tools/call tools/call" {
		t.Errorf("the caller's middleware saw %v", seen)
	}
	if !strings.Contains(string(h.Wire()[0].JSON), `"my-client"`) {
		t.Errorf("clientInfo not sent: %s", h.Wire()[0])
	}
	if len(opts.Client.Middleware) != 1 {
		t.Errorf("the caller's options were changed: %d middleware", len(opts.Client.Middleware))
	}
}

func TestTextJoinsTheTextBlocks(t *testing.T) {
	r := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a"}, &mcp.ImageContent{Data: []byte{0}, MIMEType: "image/png"}, &mcp.TextContent{Text: "b"}}}
	if got := mcptest.Text(r); got != "a\nb" {
		t.Errorf("Text = %q", got)
	}
	if got := mcptest.Text(nil); got != "" {
		t.Errorf("Text(nil) = %q", got)
	}
}

// Prompts and resource templates ask like tools; their calls, made with
// the client, are answered and recorded the same way.
func TestPromptsAndResourceTemplatesAreAnsweredAndRecorded(t *testing.T) {
	srv := mcp.NewServer(mcp.Implementation{Name: "p", Version: "1"}, nil)
	srv.AddPrompt(&mcp.Prompt{Name: "brief"}, func(ctx context.Context, req *mcp.GetPromptRequest) (mcp.PromptResponse, error) {
		r, err := mcp.Elicit[Region](ctx, "Brief for which region?")
		if err != nil {
			return nil, err
		}
		return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{{Role: mcp.RoleUser, Content: &mcp.TextContent{Text: "Brief " + r.Content.Region}}}}, nil
	})
	srv.AddResourceTemplate(&mcp.ResourceTemplate{Name: "db", URITemplate: "db://{name}"}, func(ctx context.Context, req *mcp.ReadResourceRequest) (mcp.ResourceResponse, error) {
		r, err := mcp.Elicit[Region](ctx, "Region of "+req.Var("name")+"?")
		if err != nil {
			return nil, err
		}
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.URI, Text: r.Content.Region}}}, nil
	})
	mcptest.Eras(t, func(t *testing.T, era mcptest.Era) {
		h := mcptest.New(t, srv, &mcptest.Options{Era: era})
		h.Answer(mcptest.Elicit(mcptest.Field("region"), map[string]any{"region": "us"}))
		p, err := h.Client.GetPrompt(t.Context(), "brief", nil, nil)
		if err != nil || p.Messages[0].Content.(*mcp.TextContent).Text != "Brief us" {
			t.Fatalf("prompt %+v, %v", p, err)
		}
		if r := h.Rounds(); len(r) != 1 || r[0][0].Text != "Brief for which region?" {
			t.Errorf("prompt rounds %+v", r)
		}
		res, err := h.Client.ReadResource(t.Context(), "db://orders", nil)
		if err != nil || res.Contents[0].Text != "us" {
			t.Fatalf("resource %+v, %v", res, err)
		}
		if r := h.Rounds(); len(r) != 1 || r[0][0].Text != "Region of orders?" {
			t.Errorf("resource rounds %+v", r)
		}
	})
}
