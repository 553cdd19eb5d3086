package gateway

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// threeEras is a gateway over a 2026-07-28 server, a 2025-11-25-only one
// and an HTTP+SSE (2024-11-05) one.
func threeEras(t *testing.T) (*Gateway, string) {
	return startGateway(t, []Upstream{
		{Name: "modern", URL: serveModern(t, upstreamServer("modern"))},
		{Name: "legacy", URL: serveLegacyOnly(t, upstreamServer("legacy"))},
		{Name: "old", URL: serveSSE(t, upstreamServer("old")), Transport: TransportSSE},
	}, nil)
}

func TestEveryUpstreamOfEveryEraIsListedUnderItsPrefix(t *testing.T) {
	t.Parallel()
	g, url := threeEras(t)
	for _, h := range g.Pool().Health() {
		if h.State != HealthUp {
			t.Fatalf("%s: %+v", h.Name, h)
		}
	}
	versions := map[string]string{}
	for _, h := range g.Pool().Health() {
		versions[h.Name] = h.ProtocolVersion
	}
	if versions["modern"] != "2026-07-28" || versions["legacy"] != "2025-11-25" || versions["old"] == "2026-07-28" || versions["old"] == "" {
		t.Fatalf("negotiated versions: %v", versions)
	}
	c := downstream(t, url, "alice", mcp.ModeAuto, nil)
	names := toolNames(t, c)
	for _, want := range []string{"modern__echo", "legacy__echo", "old__echo", "modern__both", "legacy__ask"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools/list lacks %s: %v", want, names)
		}
	}
	for tool, err := range c.Tools(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		if tool.Name == "legacy__echo" {
			m, _ := tool.Meta[MetaKey].(map[string]any)
			if m["upstream"] != "legacy" || m["name"] != "echo" {
				t.Errorf("_meta %s = %v", MetaKey, tool.Meta[MetaKey])
			}
		}
	}
	res, err := c.CallTool(context.Background(), "old__echo", map[string]any{"text": "hi"}, nil)
	if err != nil || resultText(t, res) != "old:hi" {
		t.Fatalf("old__echo: %v %v", res, err)
	}
}

// The heart of the gateway: each pair of eras, end to end, through the
// same handler.
func TestToolsThatAskWorkInEveryPairOfEras(t *testing.T) {
	t.Parallel()
	_, url := threeEras(t)
	for _, mode := range []struct {
		name string
		mode mcp.ClientMode
	}{{"modern client", mcp.ModeAuto}, {"2025 client", mcp.ModeLegacy}} {
		c := downstream(t, url, "alice", mode.mode, answers(&mcp.ClientOptions{}))
		for _, up := range []string{"modern", "legacy", "old"} {
			res, err := c.CallTool(context.Background(), up+"__ask", nil, nil)
			if err != nil {
				t.Fatalf("%s → %s ask: %v", mode.name, up, err)
			}
			if got := resultText(t, res); got != up+":colour=teal" {
				t.Errorf("%s → %s ask: %q", mode.name, up, got)
			}
			res, err = c.CallTool(context.Background(), up+"__both", nil, nil)
			if err != nil {
				t.Fatalf("%s → %s both: %v", mode.name, up, err)
			}
			if got := resultText(t, res); got != up+":teal:verse:file:///home" {
				t.Errorf("%s → %s both: %q", mode.name, up, got)
			}
		}
	}
}

// A modern client sees a 2025 upstream's live questions as rounds, one
// question each, with the gateway's sealed state.
func TestALegacyUpstreamsLiveQuestionsAreRoundsForAModernClient(t *testing.T) {
	t.Parallel()
	_, url := threeEras(t)
	c := downstream(t, url, "alice", mcp.ModeAuto, answers(&mcp.ClientOptions{}))
	_, err := c.CallTool(context.Background(), "legacy__both", nil, &mcp.CallOptions{Manual: true})
	var pe *mcp.PendingCallError
	if !errors.As(err, &pe) {
		t.Fatalf("want a pending call, got %v", err)
	}
	var methods []string
	for round := 0; round < 5; round++ {
		if len(pe.Call.InputRequests) != 1 {
			t.Fatalf("round %d: %d questions", round, len(pe.Call.InputRequests))
		}
		responses := mcp.InputResponses{}
		for k, r := range pe.Call.InputRequests {
			methods = append(methods, r.InputMethod())
			switch r.InputMethod() {
			case mcp.MethodElicit:
				responses.SetElicit(k, &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: map[string]any{"colour": "red"}})
			case mcp.MethodCreateMessage:
				responses.SetSampling(k, &mcp.CreateMessageResult{Role: mcp.RoleAssistant, Content: []mcp.Content{&mcp.TextContent{Text: "rhyme"}}, Model: "m"})
			case mcp.MethodListRoots:
				responses.SetRoots(k, &mcp.ListRootsResult{Roots: []mcp.Root{{URI: "file:///r"}}})
			}
		}
		if strings.Contains(pe.Call.RequestState, "legacy") {
			t.Fatalf("the state is not sealed: %q", pe.Call.RequestState)
		}
		r, err := c.Resume(context.Background(), pe.Call, responses, &mcp.CallOptions{Manual: true})
		if errors.As(err, &pe) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if got := resultText(t, r.(*mcp.CallToolResult)); got != "legacy:red:rhyme:file:///r" {
			t.Fatalf("result %q", got)
		}
		want := []string{mcp.MethodElicit, mcp.MethodCreateMessage, mcp.MethodListRoots}
		if !slices.Equal(methods, want) {
			t.Fatalf("rounds asked %v, want %v", methods, want)
		}
		return
	}
	t.Fatal("too many rounds")
}

func TestPromptsAndTemplateReadsThatAskWorkInEveryPairOfEras(t *testing.T) {
	t.Parallel()
	_, url := threeEras(t)
	for _, mode := range []mcp.ClientMode{mcp.ModeAuto, mcp.ModeLegacy} {
		c := downstream(t, url, "alice", mode, answers(&mcp.ClientOptions{}))
		for _, up := range []string{"modern", "legacy", "old"} {
			pr, err := c.GetPrompt(context.Background(), up+"__colourful", nil, nil)
			if err != nil {
				t.Fatalf("mode %d → %s prompt: %v", mode, up, err)
			}
			if got := textOf(pr.Messages[0].Content); got != up+" paints teal" {
				t.Errorf("mode %d → %s prompt: %q", mode, up, got)
			}
			rr, err := c.ReadResource(context.Background(), "paint://"+up+"/fence", nil)
			if err != nil {
				t.Fatalf("mode %d → %s read: %v", mode, up, err)
			}
			if got := rr.Contents[0].Text; got != "fence in teal" {
				t.Errorf("mode %d → %s read: %q", mode, up, got)
			}
		}
	}
}
