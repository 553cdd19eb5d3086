package main

import (
	"strings"
	"testing"
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
