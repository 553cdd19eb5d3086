package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// Server middleware: one function around every method handler. This one
// keeps a tool off limits and tells which round of a call it sees.
func ExampleServerMiddleware() {
	// #region server-middleware
	audit := func(next mcp.ServerHandler) mcp.ServerHandler {
		return func(ctx context.Context, method string, params mcp.Params) (mcp.Result, error) {
			if call, ok := params.(*mcp.CallToolRequest); ok {
				if call.Name == "provision" && call.Meta.ClientInfo != nil && call.Meta.ClientInfo.Name == "intern-bot" {
					return mcp.ErrorResult("not for you"), nil
				}
				info, _ := mcp.RequestInfoFrom(ctx)
				fmt.Printf("audit: %s %s, round %d\n", method, call.Name, info.Round)
			}
			return next(ctx, method, params)
		}
	}
	srv := provisioner(&mcp.ServerOptions{Middleware: []mcp.ServerMiddleware{audit}})
	// #endregion server-middleware

	for _, name := range []string{"ops-console", "intern-bot"} {
		client := connect(srv, &mcp.ClientOptions{
			Info: mcp.Implementation{Name: name, Version: "1"},
			Elicitation: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: map[string]any{"region": "eu-west-1"}}, nil
			},
		})
		res, err := client.CallTool(context.Background(), "provision", ProvisionArgs{Name: "orders"}, nil)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(name+":", res.Content[0].(*mcp.TextContent).Text)
		client.Close()
	}
	// Output:
	// audit: tools/call provision, round 1
	// audit: tools/call provision, round 2
	// ops-console: orders in eu-west-1
	// intern-bot: not for you
}

// Client middleware: one function around every request the client
// sends, each leg of a call included. This one adds a tenant to _meta
// and counts the legs of each call.
func ExampleClientMiddleware() {
	srv := mcp.NewServer(mcp.Implementation{Name: "tenants", Version: "1.0.0"}, nil)
	srv.AddTool(&mcp.Tool{Name: "whoami"}, func(ctx context.Context, r *mcp.CallToolRequest) (mcp.ToolResponse, error) {
		var meta struct {
			Tenant string `json:"example.com/tenant"`
		}
		_ = json.Unmarshal(r.Meta.Raw, &meta)
		return mcp.TextResult("tenant " + meta.Tenant), nil
	})
	// #region client-middleware
	tenant := func(next mcp.ClientHandler) mcp.ClientHandler {
		return func(ctx context.Context, req *mcp.ClientRequest) (json.RawMessage, error) {
			req.Meta["example.com/tenant"] = "acme"
			if req.Call != nil && req.Call.Round == 1 {
				target := req.Target
				req.Call.OnEnd(func(rounds int, err error) {
					fmt.Printf("%s: %d leg(s), err=%v\n", target, rounds, err)
				})
			}
			return next(ctx, req)
		}
	}
	client := connect(srv, &mcp.ClientOptions{Middleware: []mcp.ClientMiddleware{tenant}})
	// #endregion client-middleware
	defer client.Close()
	res, err := client.CallTool(context.Background(), "whoami", nil, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	// Output:
	// whoami: 1 leg(s), err=<nil>
	// tenant acme
}
