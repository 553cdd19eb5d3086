// Command briefing demonstrates a prompt that asks for input: the
// briefing prompt asks who the briefing is for, and the client answers.
// Server and client talk over the in-memory transport.
//
//	go run ./examples/briefing
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

type Audience struct {
	Audience string `json:"audience" jsonschema:"who will read the briefing"`
}

func briefing(ctx context.Context, req *mcp.GetPromptRequest) (mcp.PromptResponse, error) {
	a, err := mcp.Elicit[Audience](ctx, "Who is the briefing for?")
	if err != nil {
		return nil, err
	}
	who := "a general audience"
	if a.Accepted() {
		who = a.Content.Audience
	}
	return &mcp.GetPromptResult{
		Description: "A briefing tuned to its audience",
		Messages: []mcp.PromptMessage{{
			Role:    mcp.RoleUser,
			Content: &mcp.TextContent{Text: fmt.Sprintf("Write a briefing on %s for %s.", req.Arguments["topic"], who)},
		}},
	}, nil
}

func main() {
	log.SetFlags(0)
	if err := run(os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(out io.Writer) error {
	srv := mcp.NewServer(mcp.Implementation{Name: "briefing", Version: "1.0.0"}, nil)
	srv.AddPrompt(&mcp.Prompt{Name: "briefing", Description: "Draft a briefing tuned to its audience.",
		Arguments: []mcp.PromptArgument{{Name: "topic", Required: true}}}, briefing)

	clientEnd, serverEnd := mcp.NewInMemoryTransports()
	go srv.ServeStream(context.Background(), serverEnd, serverEnd, nil)

	client := mcp.NewClient(mcp.NewStreamClientTransport(clientEnd, nil), &mcp.ClientOptions{
		Elicitation: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			fmt.Fprintf(out, "server asks: %q → \"the board\"\n", r.Message)
			return &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: map[string]any{"audience": "the board"}}, nil
		},
	})
	defer client.Close()

	res, err := client.GetPrompt(context.Background(), "briefing", map[string]string{"topic": "Q3 results"}, nil)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "prompt:", res.Messages[0].Content.(*mcp.TextContent).Text)
	return nil
}
