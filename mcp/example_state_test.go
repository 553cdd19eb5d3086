package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"

	"github.com/roundtrip-mcp/roundtrip/mcp"
	"github.com/roundtrip-mcp/roundtrip/requeststate"
)

// provisioner is the server of these examples: one tool that asks one
// question.
func provisioner(opts *mcp.ServerOptions) *mcp.Server {
	srv := mcp.NewServer(mcp.Implementation{Name: "provisioner", Version: "1.0.0"}, opts)
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
	return srv
}

// Two instances with the same keys: the first round is served by one,
// the second by the other, since the answers travel in the sealed state.
// An instance with other keys refuses the state.
func ExampleRequestStateOptions() {
	// #region shared-keys
	// In production: keys from a key file or a secret store, the same on
	// every instance (requeststate.ReadKeyFile, requeststate.ParseKeys).
	keys := [][]byte{requeststate.GenerateKey()}
	opts := &mcp.ServerOptions{RequestState: mcp.RequestStateOptions{Keys: keys}}
	a := httptest.NewServer(mcp.NewHTTPHandler(provisioner(opts), nil))
	b := httptest.NewServer(mcp.NewHTTPHandler(provisioner(opts), nil))
	// #endregion shared-keys
	defer a.Close()
	defer b.Close()
	stranger := httptest.NewServer(mcp.NewHTTPHandler(provisioner(nil), nil)) // a random key of its own
	defer stranger.Close()

	ctx := context.Background()
	caps := &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: json.RawMessage(`{}`)}}}
	first := mcp.NewClient(mcp.NewHTTPClientTransport(a.URL, nil), caps)
	defer first.Close()
	_, err := first.CallTool(ctx, "provision", ProvisionArgs{Name: "orders"}, &mcp.CallOptions{Manual: true})
	var pending *mcp.PendingCallError
	if !errors.As(err, &pending) {
		fmt.Println(err)
		return
	}
	answers := mcp.InputResponses{}
	for key := range pending.Call.InputRequests {
		answers[key] = json.RawMessage(`{"action":"accept","content":{"region":"eu-west-1"}}`)
	}
	// #region shared-keys-resume
	// Round 1 went to instance a; round 2 goes to b, and to a stranger.
	for name, url := range map[string]string{"other instance": b.URL, "other keys": stranger.URL} {
		c := mcp.NewClient(mcp.NewHTTPClientTransport(url, nil), caps)
		res, err := c.Resume(ctx, pending.Call, answers, nil)
		c.Close()
		if err != nil {
			fmt.Println(name+":", errors.Is(err, mcp.ErrInvalidRequestState))
			continue
		}
		fmt.Println(name+":", res.(*mcp.CallToolResult).Content[0].(*mcp.TextContent).Text)
	}
	// #endregion shared-keys-resume

	// Unordered output:
	// other instance: orders in eu-west-1
	// other keys: true
}

// A single-use guard: a state is good for one leg. The identical leg
// sent again (an answer lost on the way back) gets the recorded outcome;
// the same state with other answers is refused.
func ExampleRequestStateOptions_singleUse() {
	// #region single-use
	srv := provisioner(&mcp.ServerOptions{RequestState: mcp.RequestStateOptions{
		Guard: requeststate.NewMemoryGuard(), // a fleet uses redisguard
	}})
	// #endregion single-use
	client := connect(srv, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{
		Elicitation: &mcp.ElicitationCapabilities{Form: json.RawMessage(`{}`)},
	}})
	defer client.Close()
	ctx := context.Background()
	_, err := client.CallTool(ctx, "provision", ProvisionArgs{Name: "orders"}, &mcp.CallOptions{Manual: true})
	var pending *mcp.PendingCallError
	if !errors.As(err, &pending) {
		fmt.Println(err)
		return
	}
	answer := func(region string) mcp.InputResponses {
		a := mcp.InputResponses{}
		for key := range pending.Call.InputRequests {
			a[key] = json.RawMessage(`{"action":"accept","content":{"region":"` + region + `"}}`)
		}
		return a
	}
	for _, region := range []string{"eu-west-1", "eu-west-1", "us-east-1"} {
		res, err := client.Resume(ctx, pending.Call, answer(region), nil)
		if err != nil {
			fmt.Println(region+": refused:", errors.Is(err, mcp.ErrInvalidRequestState))
			continue
		}
		fmt.Println(region+":", res.(*mcp.CallToolResult).Content[0].(*mcp.TextContent).Text)
	}
	// Output:
	// eu-west-1: orders in eu-west-1
	// eu-west-1: orders in eu-west-1
	// us-east-1: refused: true
}
