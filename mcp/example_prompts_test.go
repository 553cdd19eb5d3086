package mcp_test

import (
	"context"
	"fmt"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// A prompt with arguments: the client lists it, then gets its messages
// with the arguments filled in.
func ExampleServer_AddPrompt() {
	// #region prompt
	srv := mcp.NewServer(mcp.Implementation{Name: "reviewer", Version: "1.0.0"}, nil)
	srv.AddPrompt(&mcp.Prompt{
		Name:        "review",
		Description: "Review a change",
		Arguments: []mcp.PromptArgument{
			{Name: "diff", Required: true},
			{Name: "focus", Description: "what to look at first"},
		},
	}, func(ctx context.Context, req *mcp.GetPromptRequest) (mcp.PromptResponse, error) {
		focus := req.Arguments["focus"]
		if focus == "" {
			focus = "correctness"
		}
		return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{{
			Role:    mcp.RoleUser,
			Content: &mcp.TextContent{Text: "Review this change for " + focus + ":\n" + req.Arguments["diff"]},
		}}}, nil
	})
	// #endregion prompt

	client := connect(srv)
	defer client.Close()
	ctx := context.Background()
	// #region prompt-client
	for p, err := range client.Prompts(ctx) {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println("prompt:", p.Name, "-", p.Description)
	}
	res, err := client.GetPrompt(ctx, "review", map[string]string{"diff": "-a\n+b", "focus": "naming"}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Messages[0].Content.(*mcp.TextContent).Text)
	// #endregion prompt-client

	// Output:
	// prompt: review - Review a change
	// Review this change for naming:
	// -a
	// +b
}
