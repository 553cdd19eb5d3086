package gateway_test

import (
	"context"
	"fmt"
	"net/http/httptest"

	"github.com/roundtrip-mcp/roundtrip/gateway"
	"github.com/roundtrip-mcp/roundtrip/mcp"
)

type region struct {
	Region string `json:"region"`
}

// A 2025-era client calls a 2026-07-28 upstream's multi round-trip tool
// through the gateway: the upstream's round reaches it as a live
// question.
func Example() {
	up := mcp.NewServer(mcp.Implementation{Name: "db", Version: "1"}, nil)
	mcp.AddTypedTool(up, &mcp.Tool{Name: "provision"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, error) {
		r, err := mcp.Elicit[region](ctx, "Which region?")
		if err != nil {
			return nil, err
		}
		v, err := r.Value()
		if err != nil {
			return nil, err
		}
		return mcp.TextResult("provisioned in " + v.Region), nil
	})
	upstream := httptest.NewServer(mcp.NewHTTPHandler(up, nil))
	defer upstream.Close()

	g, err := gateway.New([]gateway.Upstream{{Name: "db", URL: upstream.URL}}, nil)
	if err != nil {
		panic(err)
	}
	defer g.Close()
	if err := g.WaitReady(context.Background()); err != nil {
		panic(err)
	}
	front := httptest.NewServer(mcp.NewHTTPHandler(g.Server(), nil))
	defer front.Close()

	client := mcp.NewClient(mcp.NewHTTPClientTransport(front.URL, nil), &mcp.ClientOptions{
		Mode: mcp.ModeLegacy,
		Elicitation: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: map[string]any{"region": "eu-west-1"}}, nil
		},
	})
	defer client.Close()
	res, err := client.CallTool(context.Background(), "db"+gateway.DefaultSeparator+"provision", nil, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	for _, h := range g.Pool().Health() {
		fmt.Println(h.Name, h.State, h.ProtocolVersion)
	}
	// Output:
	// provisioned in eu-west-1
	// db up 2026-07-28
}
