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

// A resource template with completion: the template's variables are
// the arguments a client completes (Ref.Type "ref/resource", Ref.URI the
// template), here the service first, then the day given the service.
func ExampleServer_AddResourceTemplate_completion() {
	// #region template-completions
	services := []string{"api", "auth", "billing"}
	days := map[string][]string{"api": {"2026-07-27", "2026-07-28"}, "auth": {"2026-07-28"}}
	complete := func(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
		if req.Ref.Type != "ref/resource" || req.Ref.URI != "logs://{service}/{day}" {
			return &mcp.CompleteResult{}, nil
		}
		var from []string
		switch req.Argument.Name {
		case "service":
			from = services
		case "day":
			if req.Context != nil {
				from = days[req.Context.Arguments["service"]]
			}
		}
		var values []string
		for _, v := range from {
			if strings.HasPrefix(v, req.Argument.Value) {
				values = append(values, v)
			}
		}
		return &mcp.CompleteResult{Completion: mcp.Completion{Values: values}}, nil
	}
	srv := mcp.NewServer(mcp.Implementation{Name: "logs", Version: "1.0.0"}, &mcp.ServerOptions{Completions: complete})
	srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "logs://{service}/{day}", Name: "service logs"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (mcp.ResourceResponse, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{
				{URI: req.URI, Text: req.Var("service") + " logs of " + req.Var("day")},
			}}, nil
		})
	// #endregion template-completions

	client := connect(srv)
	defer client.Close()
	ctx := context.Background()
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
