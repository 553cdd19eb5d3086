package mcp_test

import (
	"context"
	"fmt"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// A static resource, listed and read by its URI.
func ExampleServer_AddResource() {
	// #region resource
	srv := mcp.NewServer(mcp.Implementation{Name: "docs", Version: "1.0.0"}, nil)
	srv.AddResource(&mcp.Resource{URI: "docs://readme", Name: "README", MIMEType: "text/markdown"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{
				{URI: req.URI, MIMEType: "text/markdown", Text: "# Hello"},
			}}, nil
		})
	// #endregion resource

	client := connect(srv)
	defer client.Close()
	ctx := context.Background()
	// #region resource-client
	for r, err := range client.Resources(ctx) {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println("resource:", r.URI, r.Name)
	}
	res, err := client.ReadResource(ctx, "docs://readme", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Contents[0].Text)
	// #endregion resource-client

	// Output:
	// resource: docs://readme README
	// # Hello
}

// A resource template: one handler for a family of URIs, with the
// variables matched from the URI. A template handler may ask, like a
// tool; an unknown resource is ResourceNotFoundError.
func ExampleServer_AddResourceTemplate() {
	type Reason struct {
		Reason string `json:"reason" jsonschema:"why you need the logs"`
	}
	srv := mcp.NewServer(mcp.Implementation{Name: "logs", Version: "1.0.0"}, nil)
	// #region template
	srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "logs://{service}/{day}", Name: "service logs"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (mcp.ResourceResponse, error) {
			service, day := req.Var("service"), req.Var("day")
			if service != "api" {
				return nil, mcp.ResourceNotFoundError(req.URI)
			}
			why, err := mcp.Elicit[Reason](ctx, "Why do you need the "+service+" logs?")
			if err != nil {
				return nil, err
			}
			r, err := why.Value()
			if err != nil {
				return nil, err
			}
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{
				{URI: req.URI, Text: fmt.Sprintf("%s logs of %s, read for %q", service, day, r.Reason)},
			}}, nil
		})
	// #endregion template

	client := connect(srv, &mcp.ClientOptions{
		Elicitation: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: map[string]any{"reason": "incident 7"}}, nil
		},
	})
	defer client.Close()
	ctx := context.Background()
	res, err := client.ReadResource(ctx, "logs://api/2026-07-28", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Contents[0].Text)
	_, err = client.ReadResource(ctx, "logs://billing/2026-07-28", nil)
	fmt.Println("error code:", mcp.ErrorCode(err))
	// Output:
	// api logs of 2026-07-28, read for "incident 7"
	// error code: -32602
}
