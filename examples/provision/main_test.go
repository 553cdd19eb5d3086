package main

import (
	"strings"
	"testing"

	"github.com/roundtrip-mcp/roundtrip/mcp"
	"github.com/roundtrip-mcp/roundtrip/mcptest"
)

func TestProvisionDemo(t *testing.T) {
	var out strings.Builder
	if err := run(&out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	got := out.String()
	for _, want := range []string{
		"← input_required: 1 question(s)",
		`user asked "Which region should the database live in?"`,
		`user asked "How many GB for \"orders\" in eu-west-1?"`,
		"echoing the",
		"← complete",
		`result: Provisioned "orders" in eu-west-1 with 20 GB.`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "→ tools/call"); n != 3 {
		t.Errorf("%d legs, want 3:\n%s", n, got)
	}
}

// The tool itself, in memory and in both eras: the size question names
// the region answered before it, so it takes a round of its own.
func TestProvisionAsksTheRegionThenTheSizeInBothEras(t *testing.T) {
	srv := mcp.NewServer(mcp.Implementation{Name: "provisioner", Version: "1.0.0"}, nil)
	mcp.AddTypedTool(srv, &mcp.Tool{Name: "provision"}, provision)
	mcptest.Eras(t, func(t *testing.T, era mcptest.Era) {
		h := mcptest.New(t, srv, &mcptest.Options{Era: era})
		h.Answer(
			mcptest.Elicit("Which region should the database live in?", map[string]any{"region": "ap-south-1"}),
			mcptest.Elicit(`How many GB for "orders" in ap-south-1?`, map[string]any{"gb": 5}),
		)
		res := h.CallTool("provision", ProvisionArgs{Name: "orders"})
		if got, want := mcptest.Text(res), `Provisioned "orders" in ap-south-1 with 5 GB.`; got != want || len(h.Rounds()) != 2 {
			t.Errorf("result %q after %d rounds, want %q after 2", got, len(h.Rounds()), want)
		}
	})
}

func TestProvisionReportsADeclineAsAnError(t *testing.T) {
	srv := mcp.NewServer(mcp.Implementation{Name: "provisioner", Version: "1.0.0"}, nil)
	mcp.AddTypedTool(srv, &mcp.Tool{Name: "provision"}, provision)
	mcptest.Eras(t, func(t *testing.T, era mcptest.Era) {
		h := mcptest.New(t, srv, &mcptest.Options{Era: era})
		h.Answer(mcptest.Decline(mcptest.Field("region")))
		if res := h.CallTool("provision", ProvisionArgs{Name: "orders"}); !res.IsError || len(h.Rounds()) != 1 {
			t.Errorf("result %+v (%q) after %d rounds", res, mcptest.Text(res), len(h.Rounds()))
		}
	})
}
