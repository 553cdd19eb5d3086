package mcptest_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/roundtrip-mcp/roundtrip/mcp"
	"github.com/roundtrip-mcp/roundtrip/mcptest"
)

// greeter serves one tool that asks a question before it answers.
func greeter() *mcp.Server {
	type Who struct {
		Name string `json:"name"`
	}
	srv := mcp.NewServer(mcp.Implementation{Name: "greeter", Version: "1.0.0"}, nil)
	mcp.AddTypedTool(srv, &mcp.Tool{Name: "greet"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
		who, err := mcp.Elicit[Who](ctx, "Whom shall I greet?")
		if err != nil {
			return nil, err
		}
		w, err := who.Value()
		if err != nil {
			return nil, err
		}
		return mcp.TextResult("Hello, " + w.Name + "!"), nil
	})
	return srv
}

// A server tested in memory: the script answers the tool's question, and
// Rounds tells what was asked. In a test, t is the test's *testing.T
// (here a stand-in, since an example has none).
func Example() {
	t := newFakeT()
	defer t.done()

	h := mcptest.New(t, greeter(), nil)
	h.Answer(mcptest.Elicit("Whom shall I greet?", map[string]any{"name": "Ada"}))
	fmt.Println(mcptest.Text(h.CallTool("greet", nil)))
	for i, round := range h.Rounds() {
		for _, q := range round {
			fmt.Printf("round %d: %s %q\n", i+1, q.Method, q.Text)
		}
	}
	// Output:
	// Hello, Ada!
	// round 1: elicitation/create "Whom shall I greet?"
}

// The same test in the Legacy era, where the question travels as a live
// request of the session: the wire shows it. In a test,
// mcptest.Eras(t, ...) runs a test in both eras.
func ExampleHarness_Wire() {
	t := newFakeT()
	defer t.done()

	h := mcptest.New(t, greeter(), &mcptest.Options{Era: mcptest.Legacy})
	h.Answer(mcptest.Elicit(mcptest.Field("name"), map[string]any{"name": "Ada"}))
	fmt.Println(mcptest.Text(h.CallTool("greet", nil)))
	for _, m := range h.Wire() {
		dir, what := "server:", m.Method()
		if m.FromClient {
			dir = "client:"
		}
		if what == "" {
			what = "(response)"
		}
		fmt.Println(dir, what)
	}
	// Output:
	// Hello, Ada!
	// client: initialize
	// server: (response)
	// client: notifications/initialized
	// client: tools/call
	// server: elicitation/create
	// client: (response)
	// server: (response)
}

// Two questions asked together leave in one round of the Modern era, and
// as two live requests, one after the other, in the Legacy era.
func ExampleHarness_Rounds() {
	type Region struct {
		Region string `json:"region"`
	}
	type Size struct {
		GB int `json:"gb"`
	}
	srv := mcp.NewServer(mcp.Implementation{Name: "sizer", Version: "1.0.0"}, nil)
	mcp.AddTypedTool(srv, &mcp.Tool{Name: "size"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
		region, err1 := mcp.Elicit[Region](ctx, "Which region?")
		size, err2 := mcp.Elicit[Size](ctx, "How many GB?")
		if err := errors.Join(err1, err2); err != nil {
			return nil, err
		}
		return mcp.TextResult(fmt.Sprintf("%d GB in %s", size.Content.GB, region.Content.Region)), nil
	})

	for _, era := range []mcptest.Era{mcptest.Modern, mcptest.Legacy} {
		t := newFakeT()
		h := mcptest.New(t, srv, &mcptest.Options{Era: era})
		h.Answer(
			mcptest.Elicit(mcptest.Field("region"), map[string]any{"region": "eu"}),
			mcptest.Elicit(mcptest.Field("gb"), map[string]any{"gb": 20}),
		)
		fmt.Println(era, mcptest.Text(h.CallTool("size", nil)))
		for i, round := range h.Rounds() {
			fmt.Printf("  round %d: %d question(s)\n", i+1, len(round))
		}
		t.done()
	}
	// Output:
	// 2026-07-28 20 GB in eu
	//   round 1: 2 question(s)
	// 2025-11-25 20 GB in eu
	//   round 1: 1 question(s)
	//   round 2: 1 question(s)
}

// Sampling and roots are answered like elicitations; Reply gives a
// result of one's own, here a model's name.
func ExampleReply() {
	srv := mcp.NewServer(mcp.Implementation{Name: "namer", Version: "1.0.0"}, nil)
	mcp.AddTypedTool(srv, &mcp.Tool{Name: "name"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
		//lint:ignore SA1019 roots, deprecated in 2026-07-28, is still served to the revisions that have it
		roots, err := mcp.ListRoots(ctx)
		if err != nil {
			return nil, err
		}
		//lint:ignore SA1019 sampling, deprecated in 2026-07-28, is still served to the revisions that have it
		res, err := mcp.Sample(ctx, &mcp.CreateMessageRequest{MaxTokens: 10, Messages: []mcp.SamplingMessage{
			{Role: mcp.RoleUser, Content: []mcp.Content{&mcp.TextContent{Text: "Name the project in " + roots[0].URI}}},
		}})
		if err != nil {
			return nil, err
		}
		return mcp.TextResult(res.Content[0].(*mcp.TextContent).Text + " (by " + res.Model + ")"), nil
	})

	t := newFakeT()
	defer t.done()
	h := mcptest.New(t, srv, nil)
	h.Answer(
		mcptest.Roots("file:///src/atlas"),
		mcptest.Reply(mcptest.Prefix("Name the project"), &mcp.CreateMessageResult{
			Role: mcp.RoleAssistant, Model: "tiny-1", Content: []mcp.Content{&mcp.TextContent{Text: "Atlas"}},
		}),
	)
	fmt.Println(mcptest.Text(h.CallTool("name", nil)))
	// Output:
	// Atlas (by tiny-1)
}
