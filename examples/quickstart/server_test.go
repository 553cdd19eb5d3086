package main

import (
	"testing"

	"github.com/roundtrip-mcp/roundtrip/mcptest"
)

// #region mcptest
// The quickstart's tool, tested in memory in both eras: the script
// answers the question, and the test checks the result and the rounds.
func TestProvisionAsksForTheRegionInBothEras(t *testing.T) {
	mcptest.Eras(t, func(t *testing.T, era mcptest.Era) {
		h := mcptest.New(t, newServer(), &mcptest.Options{Era: era})
		h.Answer(mcptest.Elicit(mcptest.Field("region"), map[string]any{"region": "us-east-1"}))
		res := h.CallTool("provision", ProvisionArgs{Name: "orders"})
		if got := mcptest.Text(res); got != "Provisioned orders in us-east-1" || len(h.Rounds()) != 1 {
			t.Errorf("result %q after %d rounds", got, len(h.Rounds()))
		}
	})
}

// A decline is an isError result the model can read, not a failure.
func TestProvisionReportsADecline(t *testing.T) {
	mcptest.Eras(t, func(t *testing.T, era mcptest.Era) {
		h := mcptest.New(t, newServer(), &mcptest.Options{Era: era})
		h.Answer(mcptest.Decline(mcptest.Prefix("Which region")))
		if res := h.CallTool("provision", ProvisionArgs{Name: "orders"}); !res.IsError {
			t.Errorf("result %q, want an isError result", mcptest.Text(res))
		}
	})
}

// #endregion mcptest
