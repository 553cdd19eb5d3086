package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

type ProvisionArgs struct {
	Name string `json:"name" jsonschema:"the database name"`
}

type Region struct {
	Region string `json:"region" mcp:"enum=eu-west-1|us-east-1"`
}

// A tool that asks the user in straight-line code, and a client that
// answers: the server returns input_required, the client answers and
// retries with the sealed requestState, and the handler runs again with
// the answer.
func Example() {
	srv := mcp.NewServer(mcp.Implementation{Name: "provisioner", Version: "1.0.0"}, nil)
	mcp.AddTypedTool(srv, &mcp.Tool{Name: "provision"}, func(ctx context.Context, req *mcp.CallToolRequest, in ProvisionArgs) (*mcp.CallToolResult, error) {
		region, err := mcp.Elicit[Region](ctx, "Which region for "+in.Name+"?")
		if err != nil {
			return nil, err // not answered yet: the SDK returns input_required
		}
		r, err := region.Value() // declined or cancelled: an isError result
		if err != nil {
			return nil, err
		}
		return mcp.TextResult("Provisioned " + in.Name + " in " + r.Region), nil
	})
	ts := httptest.NewServer(mcp.NewHTTPHandler(srv, nil))
	defer ts.Close()

	client := mcp.NewClient(mcp.NewHTTPClientTransport(ts.URL, nil), &mcp.ClientOptions{
		Elicitation: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			fmt.Println("asked:", r.Message)
			return &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: map[string]any{"region": "eu-west-1"}}, nil
		},
	})
	defer client.Close()
	res, err := client.CallTool(context.Background(), "provision", ProvisionArgs{Name: "orders"}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	// Output:
	// asked: Which region for orders?
	// Provisioned orders in eu-west-1
}

// Manual control: the call stops at the server's question; the pending
// call is plain JSON that can be stored and resumed later, by another
// process.
func ExampleClient_Resume() {
	srv := mcp.NewServer(mcp.Implementation{Name: "provisioner", Version: "1.0.0"}, nil)
	mcp.AddTypedTool(srv, &mcp.Tool{Name: "provision"}, func(ctx context.Context, req *mcp.CallToolRequest, in ProvisionArgs) (*mcp.CallToolResult, error) {
		region, err := mcp.Elicit[Region](ctx, "Which region?")
		if err != nil {
			return nil, err
		}
		r, err := region.Value()
		if err != nil {
			return nil, err
		}
		return mcp.TextResult(in.Name + " in " + r.Region), nil
	})
	ts := httptest.NewServer(mcp.NewHTTPHandler(srv, nil))
	defer ts.Close()
	ctx := context.Background()
	caps := &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: json.RawMessage(`{}`)}}

	first := mcp.NewClient(mcp.NewHTTPClientTransport(ts.URL, nil), &mcp.ClientOptions{Capabilities: caps})
	_, err := first.CallTool(ctx, "provision", ProvisionArgs{Name: "orders"}, &mcp.CallOptions{Manual: true})
	first.Close()
	var pending *mcp.PendingCallError
	if !errors.As(err, &pending) {
		fmt.Println(err)
		return
	}
	saved, _ := json.Marshal(pending.Call) // store it anywhere

	var call mcp.PendingCall
	if err := json.Unmarshal(saved, &call); err != nil {
		fmt.Println(err)
		return
	}
	answers := mcp.InputResponses{}
	for key := range call.InputRequests {
		answers[key] = json.RawMessage(`{"action":"accept","content":{"region":"us-east-1"}}`)
	}
	later := mcp.NewClient(mcp.NewHTTPClientTransport(ts.URL, nil), &mcp.ClientOptions{Capabilities: caps})
	defer later.Close()
	res, err := later.Resume(ctx, &call, answers, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.(*mcp.CallToolResult).Content[0].(*mcp.TextContent).Text)
	// Output:
	// orders in us-east-1
}
