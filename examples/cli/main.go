// Command cli is a server to try the command-line client on: it serves
// MCP over stdio, one tool that asks two questions in two rounds and
// one prompt. The client starts it:
//
//	go build -o /tmp/provision ./examples/cli
//	cd cmd/roundtrip && go run . call provision name=orders -- /tmp/provision
package main

import (
	"context"
	"fmt"
	"log"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// #region cli-server

// ProvisionArgs are the provision tool's arguments.
type ProvisionArgs struct {
	Name string `json:"name" jsonschema:"the database's name"`
}

// Region is the first question's form: a choice among three.
type Region struct {
	Region string `json:"region" mcp:"enum=eu-west-1|us-east-1|ap-south-1"`
}

// Size is the second question's form, asked once the region is known.
type Size struct {
	GB int `json:"gb" jsonschema:"storage in GB"`
}

func newServer() *mcp.Server {
	srv := mcp.NewServer(mcp.Implementation{Name: "provision", Version: "1.0.0"}, nil)
	mcp.AddTypedTool(srv, &mcp.Tool{Name: "provision", Description: "Provision a database"},
		func(ctx context.Context, req *mcp.CallToolRequest, in ProvisionArgs) (*mcp.CallToolResult, error) {
			region, err := mcp.Elicit[Region](ctx, "Which region for "+in.Name+"?")
			if err != nil {
				return nil, err
			}
			if !region.Accepted() {
				return mcp.ErrorResult("declined"), nil
			}
			size, err := mcp.Elicit[Size](ctx, fmt.Sprintf("How many GB for %s in %s?", in.Name, region.Content.Region))
			if err != nil {
				return nil, err
			}
			if !size.Accepted() {
				return mcp.ErrorResult("declined"), nil
			}
			return mcp.TextResult(fmt.Sprintf("Provisioned %s in %s with %d GB.", in.Name, region.Content.Region, size.Content.GB)), nil
		})
	srv.AddPrompt(&mcp.Prompt{Name: "greet", Arguments: []mcp.PromptArgument{{Name: "name", Required: true}}},
		func(ctx context.Context, req *mcp.GetPromptRequest) (mcp.PromptResponse, error) {
			return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{{
				Role: mcp.RoleUser, Content: &mcp.TextContent{Text: "Say hello to " + req.Arguments["name"] + "."},
			}}}, nil
		})
	return srv
}

// #endregion cli-server

func main() {
	log.SetFlags(0)
	// Standard output is the protocol; logs go to standard error.
	if err := newServer().ServeStdio(context.Background()); err != nil {
		log.Fatal(err)
	}
}
