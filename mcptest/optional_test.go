package mcptest_test

import (
	"context"
	"strings"
	"testing"

	"github.com/roundtrip-mcp/roundtrip/mcp"
	"github.com/roundtrip-mcp/roundtrip/mcptest"
)

// optional asks each kind of question only when the client can answer
// it, and says which it could.
func optional(ctx context.Context, req *mcp.CallToolRequest, in NoArgs) (*mcp.CallToolResult, error) {
	var got []string
	// #region can-ask
	if mcp.CanAsk(ctx, &mcp.ElicitRequest{}) { // form mode; a URL one: Mode: mcp.ElicitModeURL
		region, err := mcp.Elicit[Region](ctx, "Which region?")
		if err != nil {
			return nil, err
		}
		got = append(got, "form:"+region.Content.Region)
	} // else: go on with a default region
	// #endregion can-ask
	if mcp.CanAsk(ctx, &mcp.ElicitRequest{Mode: mcp.ElicitModeURL}) {
		got = append(got, "url")
	}
	if mcp.CanAsk(ctx, &mcp.CreateMessageRequest{}) {
		got = append(got, "sampling")
	}
	if mcp.CanAsk(ctx, &mcp.CreateMessageRequest{Tools: []*mcp.Tool{{Name: "t"}}}) {
		got = append(got, "sampling.tools")
	}
	if mcp.CanAsk(ctx, &mcp.ListRootsRequest{}) {
		got = append(got, "roots")
	}
	return mcp.TextResult(strings.Join(got, " ")), nil
}

func TestCanAskAndDroppedCapabilities(t *testing.T) {
	t.Parallel()
	srv := mcp.NewServer(mcp.Implementation{Name: "optional", Version: "1"}, nil)
	mcp.AddTypedTool(srv, &mcp.Tool{Name: "optional"}, optional)
	cases := []struct {
		name string
		opts mcptest.Options
		want string
	}{
		{"everything", mcptest.Options{}, "form:eu url sampling roots"},
		{"no elicitation", mcptest.Options{NoElicitation: true}, "sampling roots"},
		{"no URL elicitation", mcptest.Options{NoURLElicitation: true}, "form:eu sampling roots"},
		{"no sampling", mcptest.Options{NoSampling: true}, "form:eu url roots"},
		{"no roots", mcptest.Options{NoRoots: true}, "form:eu url sampling"},
		{"sampling with tools", mcptest.Options{Client: &mcp.ClientOptions{SamplingTools: true}, NoRoots: true}, "form:eu url sampling sampling.tools"},
	}
	mcptest.Eras(t, func(t *testing.T, era mcptest.Era) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				opts := c.opts
				opts.Era = era
				// #region drop-capability
				// opts is, say, mcptest.Options{NoSampling: true}: a
				// client that declares no sampling capability.
				h := mcptest.New(t, srv, &opts)
				// #endregion drop-capability
				h.Answer(mcptest.Elicit("Which region?", map[string]any{"region": "eu"}))
				if got := mcptest.Text(h.CallTool("optional", nil)); got != c.want {
					t.Errorf("could ask %q, want %q", got, c.want)
				}
			})
		}
	})
	// A 2025-03-26 session has no elicitation, whatever the client
	// declares: a question its revision lacks cannot be asked.
	h := mcptest.New(t, srv, &mcptest.Options{Era: "2025-03-26"})
	if got := mcptest.Text(h.CallTool("optional", nil)); got != "sampling roots" {
		t.Errorf("on 2025-03-26, could ask %q, want %q", got, "sampling roots")
	}
	// Outside a request nothing can be asked.
	if mcp.CanAsk(context.Background(), &mcp.ListRootsRequest{}) {
		t.Error("CanAsk outside a request")
	}
}
