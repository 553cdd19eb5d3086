package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// ArchiveParams are the params of the custom method below.
type ArchiveParams struct {
	Project string `json:"project"`
}

// ArchiveConfirm is the form its handler asks the user to fill.
type ArchiveConfirm struct {
	Sure bool `json:"sure"`
}

// A custom method of an extension: the server registers it typed, as a
// carrier (its handler may ask, as a tool's does); a client that
// declares the extension calls it with CallMethod and answers the
// question with its own Elicitation handler.
func ExampleClient_CallMethod() {
	// #region custom-method
	srv := mcp.NewServer(mcp.Implementation{Name: "projects", Version: "1.0.0"}, nil)
	mcp.AddTypedMethod(srv, &mcp.MethodSpec{
		Name:         "com.example/projects/archive",
		Extension:    "com.example/projects", // advertised in capabilities.extensions
		Carrier:      true,                   // may answer input_required
		TargetMember: "project",              // what it acts on: the Mcp-Name header on HTTP
	}, func(ctx context.Context, req *mcp.ExtensionRequest, in ArchiveParams) (map[string]any, error) {
		ok, err := mcp.Elicit[ArchiveConfirm](ctx, "Archive "+req.Target+"?")
		if err != nil {
			return nil, err
		}
		return map[string]any{"archived": ok.Accepted() && ok.Content.Sure}, nil
	})
	// #endregion custom-method

	clientEnd, serverEnd := mcp.NewInMemoryTransports()
	go srv.ServeStream(context.Background(), serverEnd, serverEnd, nil)

	// #region custom-method-client
	client := mcp.NewClient(mcp.NewStreamClientTransport(clientEnd, nil), &mcp.ClientOptions{
		Extensions: &mcp.ClientExtensions{Declared: map[string]json.RawMessage{"com.example/projects": nil}},
		Elicitation: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			fmt.Println("asked:", r.Message)
			return &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: map[string]any{"sure": true}}, nil
		},
	})
	defer client.Close()
	res, err := client.CallMethod(context.Background(), &mcp.MethodCall{
		Method:       "com.example/projects/archive",
		Params:       ArchiveParams{Project: "apollo"},
		TargetMember: "project",
		Carrier:      true,
	}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	var out struct {
		Archived bool `json:"archived"`
	}
	if err := json.Unmarshal(res.Result, &out); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.ResultType, "archived:", out.Archived)
	// #endregion custom-method-client

	// Output:
	// asked: Archive apollo?
	// complete archived: true
}
