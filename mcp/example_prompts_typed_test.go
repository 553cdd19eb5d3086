package mcp_test

import (
	"context"
	"fmt"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// ReviewArgs are the arguments of the typed review prompt: each string
// field is one, required unless omitempty.
type ReviewArgs struct {
	Diff  string `json:"diff" jsonschema:"the change to review"`
	Focus string `json:"focus,omitempty" jsonschema:"what to look at first"`
}

// A typed prompt: the arguments are inferred from ReviewArgs, checked
// (a missing required one is -32602), and handed to the handler filled
// in; one of them completes itself.
func ExampleAddTypedPrompt() {
	srv := mcp.NewServer(mcp.Implementation{Name: "reviewer", Version: "1.0.0"}, nil)
	// #region typed-prompt
	mcp.AddTypedPrompt(srv, &mcp.Prompt{Name: "review", Description: "Review a change"},
		func(ctx context.Context, req *mcp.GetPromptRequest, in ReviewArgs) (*mcp.GetPromptResult, error) {
			if in.Focus == "" {
				in.Focus = "correctness"
			}
			return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{{
				Role:    mcp.RoleUser,
				Content: &mcp.TextContent{Text: "Review this change for " + in.Focus + ":\n" + in.Diff},
			}}}, nil
		},
		mcp.WithCompletion("focus", func(ctx context.Context, req *mcp.CompleteRequest) ([]string, error) {
			return []string{"correctness", "naming", "performance"}, nil
		}))
	// #endregion typed-prompt

	client := connect(srv)
	defer client.Close()
	ctx := context.Background()
	for p, err := range client.Prompts(ctx) {
		if err != nil {
			fmt.Println(err)
			return
		}
		for _, a := range p.Arguments {
			fmt.Printf("argument %s (required %v): %s\n", a.Name, a.Required, a.Description)
		}
	}
	res, err := client.GetPrompt(ctx, "review", map[string]string{"diff": "-a\n+b"}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Messages[0].Content.(*mcp.TextContent).Text)
	_, err = client.GetPrompt(ctx, "review", map[string]string{"focus": "naming"}, nil)
	fmt.Println("without diff:", mcp.ErrorCode(err))
	// Output:
	// argument diff (required true): the change to review
	// argument focus (required false): what to look at first
	// Review this change for correctness:
	// -a
	// +b
	// without diff: -32602
}
