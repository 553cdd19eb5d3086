package gateway

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

func TestAPrincipalWithoutTheScopeCannotSeeOrTellATool(t *testing.T) {
	t.Parallel()
	_, url := startGateway(t, []Upstream{
		{Name: "ops", URL: serveModern(t, upstreamServer("ops")), Allow: &Allow{Scopes: []string{"ops"}}},
		{Name: "pub", URL: serveModern(t, upstreamServer("pub")), Tools: map[string]*Allow{"ask": {Subjects: []string{"alice"}}}},
	}, nil)
	alice := downstream(t, url, "alice", mcp.ModeAuto, answers(&mcp.ClientOptions{}))
	bob := downstream(t, url, "bob", mcp.ModeAuto, answers(&mcp.ClientOptions{}))

	an := toolNames(t, alice)
	for _, want := range []string{"ops__echo", "pub__ask", "pub__echo"} {
		if !slices.Contains(an, want) {
			t.Errorf("alice does not see %s: %v", want, an)
		}
	}
	bn := toolNames(t, bob)
	if slices.ContainsFunc(bn, func(n string) bool { return strings.HasPrefix(n, "ops__") }) || slices.Contains(bn, "pub__ask") {
		t.Errorf("bob sees what he may not: %v", bn)
	}
	if !slices.Contains(bn, "pub__echo") {
		t.Errorf("bob does not see pub__echo: %v", bn)
	}
	// Calling a hidden tool is answered exactly as an unknown one (the
	// name aside).
	answer := func(c *mcp.Client, name string) string {
		res, err := c.CallTool(context.Background(), name, nil, nil)
		if err != nil {
			return strings.ReplaceAll(err.Error(), name, "NAME")
		}
		return strings.ReplaceAll(mustJSON(res), name, "NAME")
	}
	unknown := answer(bob, "ops__nosuch")
	for _, hidden := range []string{"ops__echo", "pub__ask"} {
		if got := answer(bob, hidden); got != unknown {
			t.Errorf("bob calling %s: %s; an unknown tool: %s", hidden, got, unknown)
		}
	}
	if got := callText(t, alice, "ops__echo"); got != "ops:" {
		t.Errorf("alice: %q", got)
	}
	// Prompts and resources of a hidden upstream are hidden too.
	for p, err := range bob.Prompts(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(p.Name, "ops__") {
			t.Errorf("bob sees prompt %s", p.Name)
		}
	}
	if _, err := bob.ReadResource(context.Background(), "file:///ops.txt", nil); err == nil {
		t.Error("bob read ops' resource")
	}
}

func TestAWrappedStateReplayedAsAnotherPrincipalIsRefused(t *testing.T) {
	t.Parallel()
	_, url := startGateway(t, []Upstream{
		{Name: "modern", URL: serveModern(t, upstreamServer("modern"))},
		{Name: "legacy", URL: serveLegacyOnly(t, upstreamServer("legacy"))},
	}, nil)
	alice := downstream(t, url, "alice", mcp.ModeAuto, answers(&mcp.ClientOptions{}))
	bob := downstream(t, url, "bob", mcp.ModeAuto, answers(&mcp.ClientOptions{}))
	for _, up := range []string{"modern", "legacy"} {
		_, err := alice.CallTool(context.Background(), up+"__ask", nil, &mcp.CallOptions{Manual: true})
		var pe *mcp.PendingCallError
		if !errors.As(err, &pe) {
			t.Fatalf("%s: want a round, got %v", up, err)
		}
		responses := mcp.InputResponses{}
		for k := range pe.Call.InputRequests {
			responses.SetElicit(k, &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: map[string]any{"colour": "red"}})
		}
		if _, err := bob.Resume(context.Background(), pe.Call, responses, nil); !errors.Is(err, mcp.ErrInvalidRequestState) {
			t.Errorf("%s: bob resuming alice's call: %v", up, err)
		}
		// The state is bound to the tool as well: not usable on another.
		other := *pe.Call
		other.Name = up + "__both"
		if _, err := alice.Resume(context.Background(), &other, responses, nil); !errors.Is(err, mcp.ErrInvalidRequestState) {
			t.Errorf("%s: alice's state on another tool: %v", up, err)
		}
		r, err := alice.Resume(context.Background(), pe.Call, responses, nil)
		if err != nil {
			t.Fatalf("%s: alice resuming: %v", up, err)
		}
		if got := resultText(t, r.(*mcp.CallToolResult)); got != up+":colour=red" {
			t.Errorf("%s: %q", up, got)
		}
		// A held call's round is used once.
		if up == "legacy" {
			if _, err := alice.Resume(context.Background(), pe.Call, responses, nil); !errors.Is(err, mcp.ErrInvalidRequestState) {
				t.Errorf("a held round replayed: %v", err)
			}
		}
	}
}

func TestHeldCallsAreBoundedInTimeAndCount(t *testing.T) {
	t.Parallel()
	g, url := startGateway(t, []Upstream{
		{Name: "legacy", URL: serveLegacyOnly(t, upstreamServer("legacy"))},
	}, &Options{RoundTimeout: 200 * time.Millisecond, MaxHeldPerPrincipal: 1})
	alice := downstream(t, url, "alice", mcp.ModeAuto, answers(&mcp.ClientOptions{}))
	_, err := alice.CallTool(context.Background(), "legacy__ask", nil, &mcp.CallOptions{Manual: true})
	var pe *mcp.PendingCallError
	if !errors.As(err, &pe) {
		t.Fatalf("want a round, got %v", err)
	}
	// A second call of the same principal while one is held: its question
	// is declined upstream.
	res, err := alice.CallTool(context.Background(), "legacy__ask", nil, &mcp.CallOptions{Manual: true})
	if err != nil || !res.IsError || !strings.Contains(resultText(t, res), "declined") {
		t.Fatalf("second held call: %v %v", res, err)
	}
	// The round times out: the held call goes, its state with it.
	eventually(t, "the held call to time out", func() bool {
		g.held.mu.Lock()
		defer g.held.mu.Unlock()
		return len(g.held.calls) == 0
	})
	responses := mcp.InputResponses{}
	for k := range pe.Call.InputRequests {
		responses.SetElicit(k, &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: map[string]any{"colour": "red"}})
	}
	if _, err := alice.Resume(context.Background(), pe.Call, responses, nil); !errors.Is(err, mcp.ErrInvalidRequestState) {
		t.Fatalf("resuming a timed-out call: %v", err)
	}
}

func TestTheAskPolicyDeclinesRefusedQuestions(t *testing.T) {
	t.Parallel()
	_, url := startGateway(t, []Upstream{
		{Name: "modern", URL: serveModern(t, upstreamServer("modern")), Ask: &AskPolicy{Sampling: true}},
		{Name: "legacy", URL: serveLegacyOnly(t, upstreamServer("legacy")), Ask: &AskPolicy{Sampling: true}},
	}, nil)
	for _, mode := range []mcp.ClientMode{mcp.ModeAuto, mcp.ModeLegacy} {
		asked := 0
		o := answers(&mcp.ClientOptions{})
		o.Elicitation = func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked++
			return &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: map[string]any{"colour": "teal"}}, nil
		}
		c := downstream(t, url, "alice", mode, o)
		for _, up := range []string{"modern", "legacy"} {
			res, err := c.CallTool(context.Background(), up+"__ask", nil, nil)
			if err != nil || !res.IsError || !strings.Contains(resultText(t, res), "declined") {
				t.Errorf("mode %d → %s: %v %v", mode, up, res, err)
			}
		}
		if asked != 0 {
			t.Errorf("mode %d: the downstream user was asked %d times", mode, asked)
		}
	}
}

func TestURLElicitationNeedsAnAllowedHost(t *testing.T) {
	t.Parallel()
	p := &AskPolicy{URLHosts: []string{"auth.example.com"}}
	caps := &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: []byte(`{}`), URL: []byte(`{}`)}}
	for url, want := range map[string]bool{
		"https://auth.example.com/x":      true,
		"https://AUTH.example.com/x":      true,
		"https://evil.example.com/x":      false,
		"javascript:alert(1)":             false,
		"https://auth.example.com.evil/x": false,
	} {
		if got := askAllowed(p, caps, &mcp.ElicitRequest{Mode: mcp.ElicitModeURL, URL: url}); got != want {
			t.Errorf("%s: %v", url, got)
		}
	}
	if askAllowed(p, &mcp.ClientCapabilities{}, &mcp.ElicitRequest{Mode: mcp.ElicitModeURL, URL: "https://auth.example.com/"}) {
		t.Error("allowed to a client without the capability")
	}
}
