package mcp_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// Completion of a prompt's argument: the server's one Completions handler
// sees which prompt (or resource template) and which argument the user
// is typing, with the arguments already chosen, and offers values.
func ExampleServerOptions_completions() {
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

// A resource template whose variables complete themselves: each
// WithCompletion names a variable and gives its values, here the
// service first, then the day given the service already chosen
// (CompleteRequest.Context). A client completes a template's variables
// with Ref.Type "ref/resource" and Ref.URI the template.
func ExampleWithCompletion() {
	// #region template-completions
	services := []string{"api", "auth", "billing"}
	days := map[string][]string{"api": {"2026-07-27", "2026-07-28"}, "auth": {"2026-07-28"}}
	startingWith := func(prefix string, from []string) []string {
		var out []string
		for _, v := range from {
			if strings.HasPrefix(v, prefix) {
				out = append(out, v)
			}
		}
		return out
	}
	srv := mcp.NewServer(mcp.Implementation{Name: "logs", Version: "1.0.0"}, nil)
	srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "logs://{service}/{day}", Name: "service logs"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (mcp.ResourceResponse, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{
				{URI: req.URI, Text: req.Var("service") + " logs of " + req.Var("day")},
			}}, nil
		},
		mcp.WithCompletion("service", func(ctx context.Context, req *mcp.CompleteRequest) ([]string, error) {
			return startingWith(req.Argument.Value, services), nil
		}),
		mcp.WithCompletion("day", func(ctx context.Context, req *mcp.CompleteRequest) ([]string, error) {
			var service string
			if req.Context != nil {
				service = req.Context.Arguments["service"]
			}
			return startingWith(req.Argument.Value, days[service]), nil
		}),
	)
	// #endregion template-completions

	client := connect(srv)
	defer client.Close()
	ctx := context.Background()
	// #region template-completions-client
	ref := mcp.CompleteReference{Type: "ref/resource", URI: "logs://{service}/{day}"}
	for _, req := range []*mcp.CompleteRequest{
		{Ref: ref, Argument: mcp.CompleteArgument{Name: "service", Value: "a"}},
		{Ref: ref, Argument: mcp.CompleteArgument{Name: "day", Value: "2026-07"},
			Context: &mcp.CompleteContext{Arguments: map[string]string{"service": "api"}}},
	} {
		res, err := client.Complete(ctx, req)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(req.Argument.Name+":", res.Completion.Values)
	}
	// #endregion template-completions-client

	res, err := client.ReadResource(ctx, "logs://api/2026-07-28", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Contents[0].Text)
	// Output:
	// service: [api auth]
	// day: [2026-07-27 2026-07-28]
	// api logs of 2026-07-28
}
