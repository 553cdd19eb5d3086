package mcp_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// Completion of a prompt's argument: the server's one CompletionHandler
// sees which prompt (or resource template) and which argument the user
// is typing, with the arguments already chosen, and offers values.
func ExampleCompletionHandler() {
	// #region completions
	regions := map[string][]string{
		"aws": {"eu-central-1", "eu-west-1", "us-east-1", "us-west-2"},
		"gcp": {"europe-west1", "us-central1"},
	}
	complete := func(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
		if req.Ref.Type != "ref/prompt" || req.Ref.Name != "deploy" || req.Argument.Name != "region" {
			return &mcp.CompleteResult{}, nil // nothing to offer
		}
		cloud := "aws"
		if req.Context != nil && req.Context.Arguments["cloud"] != "" {
			cloud = req.Context.Arguments["cloud"]
		}
		var values []string
		for _, r := range regions[cloud] {
			if strings.HasPrefix(r, req.Argument.Value) {
				values = append(values, r)
			}
		}
		return &mcp.CompleteResult{Completion: mcp.Completion{Values: values}}, nil
	}
	srv := mcp.NewServer(mcp.Implementation{Name: "deployer", Version: "1.0.0"}, &mcp.ServerOptions{
		Completions: complete, // advertises the completions capability
	})
	// #endregion completions
	srv.AddPrompt(&mcp.Prompt{Name: "deploy", Arguments: []mcp.PromptArgument{{Name: "cloud"}, {Name: "region"}}},
		func(ctx context.Context, req *mcp.GetPromptRequest) (mcp.PromptResponse, error) {
			return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{{
				Role: mcp.RoleUser, Content: &mcp.TextContent{Text: "Deploy to " + req.Arguments["region"]},
			}}}, nil
		})

	client := connect(srv)
	defer client.Close()
	ctx := context.Background()
	// #region completions-client
	res, err := client.Complete(ctx, &mcp.CompleteRequest{
		Ref:      mcp.CompleteReference{Type: "ref/prompt", Name: "deploy"},
		Argument: mcp.CompleteArgument{Name: "region", Value: "eu-"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("aws:", res.Completion.Values)
	res, err = client.Complete(ctx, &mcp.CompleteRequest{
		Ref:      mcp.CompleteReference{Type: "ref/prompt", Name: "deploy"},
		Argument: mcp.CompleteArgument{Name: "region", Value: "us"},
		Context:  &mcp.CompleteContext{Arguments: map[string]string{"cloud": "gcp"}},
	})
	// #endregion completions-client
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("gcp:", res.Completion.Values)
	// Output:
	// aws: [eu-central-1 eu-west-1]
	// gcp: [us-central1]
}
