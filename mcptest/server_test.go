package mcptest_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// The server the tests and examples talk to.

type Region struct {
	Region string `json:"region" mcp:"enum=eu|us"`
}

type Size struct {
	GB int `json:"gb"`
}

type Confirm struct {
	OK bool `json:"ok"`
}

type NoArgs struct{}

func newServer() *mcp.Server {
	srv := mcp.NewServer(mcp.Implementation{Name: "provisioner", Version: "1.0.0"}, nil)
	mcp.AddTypedTool(srv, &mcp.Tool{Name: "provision"}, provision)
	mcp.AddTypedTool(srv, &mcp.Tool{Name: "size"}, size)
	mcp.AddTypedTool(srv, &mcp.Tool{Name: "confirm"}, confirm)
	mcp.AddTypedTool(srv, &mcp.Tool{Name: "keyed"}, keyed)
	mcp.AddTypedTool(srv, &mcp.Tool{Name: "echo"}, func(ctx context.Context, req *mcp.CallToolRequest, in NoArgs) (*mcp.CallToolResult, error) {
		return mcp.TextResult("echo"), nil
	})
	return srv
}

// provision takes three rounds, one question of each kind, each asked
// once the one before it is answered: which region (elicitation), a
// name for the database (sampling, the prompt naming the region), and
// where to put it (roots).
func provision(ctx context.Context, req *mcp.CallToolRequest, in NoArgs) (*mcp.CallToolResult, error) {
	region, err := mcp.Elicit[Region](ctx, "Which region?")
	if err != nil {
		return nil, err
	}
	r, err := region.Value()
	if err != nil {
		return nil, err
	}
	//lint:ignore SA1019 sampling, deprecated in 2026-07-28, is still served to the revisions that have it
	name, err := mcp.Sample(ctx, &mcp.CreateMessageRequest{MaxTokens: 20, Messages: []mcp.SamplingMessage{
		{Role: mcp.RoleUser, Content: []mcp.Content{&mcp.TextContent{Text: "Name a database in " + r.Region}}},
	}})
	if err != nil {
		return nil, err
	}
	//lint:ignore SA1019 roots, deprecated in 2026-07-28, is still served to the revisions that have it
	roots, err := mcp.ListRoots(ctx)
	if err != nil {
		return nil, err
	}
	if len(roots) == 0 {
		return mcp.ErrorResult("no roots"), nil
	}
	return mcp.TextResult(fmt.Sprintf("%s in %s at %s", name.Content[0].(*mcp.TextContent).Text, r.Region, roots[0].URI)), nil
}

// size asks two independent questions together (one Modern round).
func size(ctx context.Context, req *mcp.CallToolRequest, in NoArgs) (*mcp.CallToolResult, error) {
	region, err1 := mcp.Elicit[Region](ctx, "Which region?")
	gb, err2 := mcp.Elicit[Size](ctx, "How many GB?")
	if err := errors.Join(err1, err2); err != nil {
		return nil, err
	}
	r, err := region.Value()
	if err != nil {
		return nil, err
	}
	s, err := gb.Value()
	if err != nil {
		return nil, err
	}
	return mcp.TextResult(fmt.Sprintf("%d GB in %s", s.GB, r.Region)), nil
}

// confirm reports what the user did with its question.
func confirm(ctx context.Context, req *mcp.CallToolRequest, in NoArgs) (*mcp.CallToolResult, error) {
	c, err := mcp.Elicit[Confirm](ctx, "Proceed with the migration?")
	if err != nil {
		return nil, err
	}
	if !c.Accepted() {
		return mcp.TextResult("not confirmed: " + string(c.Action)), nil
	}
	return mcp.TextResult(fmt.Sprintf("confirmed: %v", c.Content.OK)), nil
}

// keyed asks under a key of its own.
func keyed(ctx context.Context, req *mcp.CallToolRequest, in NoArgs) (*mcp.CallToolResult, error) {
	region, err := mcp.Elicit[Region](ctx, "Where to?", mcp.WithKey("where"))
	if err != nil {
		return nil, err
	}
	r, err := region.Value()
	if err != nil {
		return nil, err
	}
	return mcp.TextResult(r.Region), nil
}
