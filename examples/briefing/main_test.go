package main

import (
	"strings"
	"testing"

	"github.com/roundtrip-mcp/roundtrip/mcp"
	"github.com/roundtrip-mcp/roundtrip/mcptest"
)

func TestBriefingDemo(t *testing.T) {
	var out strings.Builder
	if err := run(&out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `server asks: "Who is the briefing for?"`) ||
		!strings.Contains(out.String(), "prompt: Write a briefing on Q3 results for the board.") {
		t.Errorf("output:\n%s", out.String())
	}
}

// The prompt in memory and in both eras: an answer tunes the briefing,
// a decline gives the general one.
func TestBriefingAsksItsAudienceInBothEras(t *testing.T) {
	srv := mcp.NewServer(mcp.Implementation{Name: "briefing", Version: "1.0.0"}, nil)
	srv.AddPrompt(&mcp.Prompt{Name: "briefing", Arguments: []mcp.PromptArgument{{Name: "topic", Required: true}}}, briefing)
	mcptest.Eras(t, func(t *testing.T, era mcptest.Era) {
		for answer, want := range map[string]string{"accept": "for the board.", "decline": "for a general audience."} {
			h := mcptest.New(t, srv, &mcptest.Options{Era: era})
			if answer == "accept" {
				h.Answer(mcptest.Elicit("Who is the briefing for?", map[string]any{"audience": "the board"}))
			} else {
				h.Answer(mcptest.Decline("Who is the briefing for?"))
			}
			res, err := h.Client.GetPrompt(t.Context(), "briefing", map[string]string{"topic": "Q3"}, nil)
			if err != nil || !strings.HasSuffix(res.Messages[0].Content.(*mcp.TextContent).Text, want) {
				t.Errorf("%s: %+v, %v", answer, res, err)
			}
		}
	})
}
