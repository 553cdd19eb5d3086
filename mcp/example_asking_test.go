package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// Elicit asks the user to fill a form derived from a Go type. The user
// may also decline or cancel: Accepted tells, and Value turns a refusal
// into an error the handler can return as an isError result.
func ExampleElicit() {
	// #region elicit
	type Confirm struct {
		Sure bool   `json:"sure" jsonschema:"delete every row?"`
		Why  string `json:"why,omitempty" mcp:"title=Reason"`
	}
	srv := mcp.NewServer(mcp.Implementation{Name: "db", Version: "1.0.0"}, nil)
	mcp.AddTypedTool(srv, &mcp.Tool{Name: "truncate"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
		c, err := mcp.Elicit[Confirm](ctx, "Really truncate the orders table?")
		if err != nil {
			return nil, err // not answered yet: this run ends, the client is asked
		}
		if !c.Accepted() || !c.Content.Sure {
			return mcp.TextResult("left as it was"), nil
		}
		return mcp.TextResult("truncated (" + c.Content.Why + ")"), nil
	})
	// #endregion elicit

	for _, action := range []mcp.ElicitAction{mcp.ElicitAccept, mcp.ElicitDecline} {
		client := connect(srv, &mcp.ClientOptions{
			Elicitation: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				if action != mcp.ElicitAccept {
					return &mcp.ElicitResult{Action: action}, nil
				}
				return &mcp.ElicitResult{Action: action, Content: map[string]any{"sure": true, "why": "test data"}}, nil
			},
		})
		res, err := client.CallTool(context.Background(), "truncate", nil, nil)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(action+":", res.Content[0].(*mcp.TextContent).Text)
		client.Close()
	}
	// Output:
	// accept: truncated (test data)
	// decline: left as it was
}

// ElicitForm takes a JSON Schema of its own, for what a Go type cannot
// say: defaults, titled choices, bounds. The answer is checked against
// every keyword before the handler sees it.
func ExampleElicitForm() {
	srv := mcp.NewServer(mcp.Implementation{Name: "shop", Version: "1.0.0"}, nil)
	// #region elicit-form
	mcp.AddTypedTool(srv, &mcp.Tool{Name: "order"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
		res, err := mcp.ElicitForm(ctx, "How many, and how fast?", json.RawMessage(`{
			"type": "object",
			"properties": {
				"count": {"type": "integer", "minimum": 1, "maximum": 10, "default": 1},
				"shipping": {"type": "string", "oneOf": [
					{"const": "std", "title": "Standard (3 days)"},
					{"const": "exp", "title": "Express (next day)"}
				]}
			},
			"required": ["count", "shipping"]
		}`))
		if err != nil {
			return nil, err
		}
		if res.Action != mcp.ElicitAccept {
			return mcp.ErrorResult("no order"), nil
		}
		return mcp.TextResult(fmt.Sprintf("%v item(s), %v shipping", res.Content["count"], res.Content["shipping"])), nil
	})
	// #endregion elicit-form

	client := connect(srv, &mcp.ClientOptions{
		Elicitation: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: map[string]any{"count": 2, "shipping": "exp"}}, nil
		},
	})
	defer client.Close()
	res, err := client.CallTool(context.Background(), "order", nil, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	// Output:
	// 2 item(s), exp shipping
}

// Sample asks the client's LLM for a completion; the client answers with
// its Sampling handler.
func ExampleSample() {
	srv := mcp.NewServer(mcp.Implementation{Name: "writer", Version: "1.0.0"}, nil)
	// #region sample
	mcp.AddTypedTool(srv, &mcp.Tool{Name: "title"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{ Text string }) (*mcp.CallToolResult, error) {
		res, err := mcp.Sample(ctx, &mcp.CreateMessageRequest{
			MaxTokens:    20,
			SystemPrompt: "You write short titles.",
			Messages: []mcp.SamplingMessage{{
				Role:    mcp.RoleUser,
				Content: []mcp.Content{&mcp.TextContent{Text: "A title for: " + in.Text}},
			}},
		})
		if err != nil {
			return nil, err
		}
		return mcp.TextResult(res.Content[0].(*mcp.TextContent).Text), nil
	})
	// #endregion sample

	// #region sample-client
	client := connect(srv, &mcp.ClientOptions{
		Sampling: func(ctx context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			// Call the model here; this one always has the same idea.
			return &mcp.CreateMessageResult{
				Role: mcp.RoleAssistant, Model: "tiny-1",
				Content: []mcp.Content{&mcp.TextContent{Text: "Rounds, Not Callbacks"}},
			}, nil
		},
	})
	// #endregion sample-client
	defer client.Close()
	res, err := client.CallTool(context.Background(), "title", map[string]any{"Text": "how MCP asks"}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	// Output:
	// Rounds, Not Callbacks
}

// ListRoots asks which directories the client exposes.
func ExampleListRoots() {
	srv := mcp.NewServer(mcp.Implementation{Name: "lint", Version: "1.0.0"}, nil)
	// #region roots
	mcp.AddTypedTool(srv, &mcp.Tool{Name: "lint"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
		roots, err := mcp.ListRoots(ctx)
		if err != nil {
			return nil, err
		}
		if len(roots) == 0 {
			return mcp.ErrorResult("no workspace open"), nil
		}
		return mcp.TextResult("linting " + roots[0].URI), nil
	})
	// #endregion roots

	client := connect(srv, &mcp.ClientOptions{
		Roots: func(ctx context.Context, r *mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
			return &mcp.ListRootsResult{Roots: []mcp.Root{{URI: "file:///src/app", Name: "app"}}}, nil
		},
	})
	defer client.Close()
	res, err := client.CallTool(context.Background(), "lint", nil, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	// Output:
	// linting file:///src/app
}

// Independent questions, their errors joined, leave together in one
// round; a question that depends on an answer takes the next round.
func Example_rounds() {
	type Name struct {
		Name string `json:"name"`
	}
	type Size struct {
		GB int `json:"gb"`
	}
	type Ok struct {
		Ok bool `json:"ok"`
	}
	srv := mcp.NewServer(mcp.Implementation{Name: "vm", Version: "1.0.0"}, nil)
	// #region rounds
	mcp.AddTypedTool(srv, &mcp.Tool{Name: "create_vm"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
		// Round 1: two independent questions, asked together.
		name, err1 := mcp.Elicit[Name](ctx, "Name of the VM?")
		size, err2 := mcp.Elicit[Size](ctx, "Disk size in GB?")
		if err := errors.Join(err1, err2); err != nil {
			return nil, err
		}
		// Round 2: this question quotes the answers, so it comes after them.
		ok, err := mcp.Elicit[Ok](ctx, fmt.Sprintf("Create %s with %d GB?", name.Content.Name, size.Content.GB))
		if err != nil {
			return nil, err
		}
		if !ok.Content.Ok {
			return mcp.TextResult("cancelled"), nil
		}
		// Side effects go after the last question: the handler runs again
		// from the top on every round.
		return mcp.TextResult("created " + name.Content.Name), nil
	})
	// #endregion rounds

	round := 0
	client := connect(srv, &mcp.ClientOptions{
		Elicitation: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			fmt.Println("asked:", r.Message)
			switch r.Message {
			case "Name of the VM?":
				round++
				return &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: map[string]any{"name": "web-1"}}, nil
			case "Disk size in GB?":
				return &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: map[string]any{"gb": 40}}, nil
			}
			round++
			return &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: map[string]any{"ok": true}}, nil
		},
	})
	defer client.Close()
	res, err := client.CallTool(context.Background(), "create_vm", nil, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text, "after", round, "rounds of questions")
	// Unordered output:
	// asked: Name of the VM?
	// asked: Disk size in GB?
	// asked: Create web-1 with 40 GB?
	// created web-1 after 2 rounds of questions
}

// The manual loop: with CallOptions.Manual the client hands each round's
// questions back as a *PendingCallError; the caller answers them in its
// own way (a UI, a queue, another process) and resumes the call.
func ExampleCallOptions_manual() {
	srv := mcp.NewServer(mcp.Implementation{Name: "provisioner", Version: "1.0.0"}, nil)
	mcp.AddTypedTool(srv, &mcp.Tool{Name: "provision"}, func(ctx context.Context, req *mcp.CallToolRequest, in ProvisionArgs) (*mcp.CallToolResult, error) {
		region, err := mcp.Elicit[Region](ctx, "Which region for "+in.Name+"?")
		if err != nil {
			return nil, err
		}
		r, err := region.Value()
		if err != nil {
			return nil, err
		}
		return mcp.TextResult(in.Name + " in " + r.Region), nil
	})
	// A client that answers by hand declares the capabilities its
	// handlers would otherwise declare.
	client := connect(srv, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{
		Elicitation: &mcp.ElicitationCapabilities{Form: json.RawMessage(`{}`)},
	}})
	defer client.Close()
	ctx := context.Background()

	// #region manual-loop
	manual := &mcp.CallOptions{Manual: true}
	_, err := client.CallTool(ctx, "provision", ProvisionArgs{Name: "orders"}, manual)
	for {
		var pending *mcp.PendingCallError
		if !errors.As(err, &pending) {
			break // the call completed, or failed
		}
		answers := mcp.InputResponses{}
		for key, q := range pending.Call.InputRequests {
			if e, ok := q.(*mcp.ElicitRequest); ok {
				fmt.Println("question:", e.Message)
				answers[key], _ = json.Marshal(&mcp.ElicitResult{
					Action: mcp.ElicitAccept, Content: map[string]any{"region": "eu-west-1"},
				})
			}
		}
		var res mcp.Result
		res, err = client.Resume(ctx, pending.Call, answers, manual)
		if err == nil {
			fmt.Println("result:", res.(*mcp.CallToolResult).Content[0].(*mcp.TextContent).Text)
		}
	}
	// #endregion manual-loop
	if err != nil {
		fmt.Println(err)
	}
	// Output:
	// question: Which region for orders?
	// result: orders in eu-west-1
}

// A call stopped at its question is saved as JSON, and resumed later by
// another client (another process, another machine): everything the
// next round needs is in the saved call.
func ExamplePendingCall() {
	ts := httptest.NewServer(mcp.NewHTTPHandler(provisioner(nil), nil))
	defer ts.Close()
	ctx := context.Background()
	caps := &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{
		Elicitation: &mcp.ElicitationCapabilities{Form: json.RawMessage(`{}`)},
	}}

	// #region pending-save
	first := mcp.NewClient(mcp.NewHTTPClientTransport(ts.URL, nil), caps)
	_, err := first.CallTool(ctx, "provision", ProvisionArgs{Name: "orders"}, &mcp.CallOptions{Manual: true})
	first.Close()
	var pending *mcp.PendingCallError
	if !errors.As(err, &pending) {
		fmt.Println(err)
		return
	}
	saved, err := json.Marshal(pending.Call) // a file, a queue, a database row
	// #endregion pending-save
	if err != nil {
		fmt.Println(err)
		return
	}

	// #region pending-resume
	var call mcp.PendingCall
	if err := json.Unmarshal(saved, &call); err != nil {
		fmt.Println(err)
		return
	}
	answers := mcp.InputResponses{}
	for key, q := range call.InputRequests {
		fmt.Println("question:", q.(*mcp.ElicitRequest).Message)
		answers[key] = json.RawMessage(`{"action":"accept","content":{"region":"us-east-1"}}`)
	}
	later := mcp.NewClient(mcp.NewHTTPClientTransport(ts.URL, nil), caps)
	defer later.Close()
	res, err := later.Resume(ctx, &call, answers, nil)
	// #endregion pending-resume
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.(*mcp.CallToolResult).Content[0].(*mcp.TextContent).Text)
	// Output:
	// question: Which region?
	// orders in us-east-1
}
