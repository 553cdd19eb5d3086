// Command kmscodec shows a bring-your-own request-state codec: envelope
// encryption with a data key unwrapped once at start, as with a KMS. The
// server binds and expires state exactly as with the built-in codec; only
// the token format is the codec's.
//
//	go run ./examples/kmscodec
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strings"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

type Confirm struct {
	OK bool `json:"ok"`
}

func main() {
	log.SetFlags(0)
	k := newKMS()
	wrapped := k.wrapNewDataKey() // stored with the deployment's config
	dataKey, err := k.unwrap(wrapped)
	if err != nil {
		log.Fatal(err)
	}
	codec, err := newEnvelopeCodec(dataKey)
	if err != nil {
		log.Fatal(err)
	}
	srv := mcp.NewServer(mcp.Implementation{Name: "deployer", Version: "1.0.0"}, &mcp.ServerOptions{
		RequestState: mcp.RequestStateOptions{Codec: codec},
	})
	srv.AddTool(&mcp.Tool{Name: "deploy", Description: "Deploys after a confirmation."},
		func(ctx context.Context, req *mcp.CallToolRequest) (mcp.ToolResponse, error) {
			c, err := mcp.Elicit[Confirm](ctx, "Deploy to production?")
			if err != nil {
				return nil, err
			}
			if !c.Accepted() || !c.Content.OK {
				return mcp.TextResult("not deployed"), nil
			}
			return mcp.TextResult("deployed"), nil
		})

	clientEnd, serverEnd := mcp.NewInMemoryTransports()
	go srv.ServeStream(context.Background(), serverEnd, serverEnd, nil)
	client := mcp.NewClient(mcp.NewStreamClientTransport(clientEnd, nil), &mcp.ClientOptions{
		Elicitation: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: map[string]any{"ok": true}}, nil
		},
	})
	defer client.Close()

	// Drive the first round by hand to show the token the codec made.
	_, err = client.CallTool(context.Background(), "deploy", nil, &mcp.CallOptions{Manual: true})
	var pending *mcp.PendingCallError
	if !errors.As(err, &pending) {
		log.Fatalf("expected an input_required round, got %v", err)
	}
	tok := pending.Call.RequestState
	fmt.Printf("requestState sealed by the custom codec: %s… (%d bytes)\n", tok[:min(20, len(tok))], len(tok))
	if !strings.HasPrefix(tok, prefix) {
		log.Fatal("the token was not made by the custom codec")
	}
	res, err := client.CallTool(context.Background(), "deploy", nil, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("result:", res.Content[0].(*mcp.TextContent).Text)
}
