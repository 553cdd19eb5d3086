// Package mcptest tests an *mcp.Server from a Go test without a port or
// a subprocess: it connects a client to the server over an in-memory
// pipe, answers the server's questions from a script, and records what
// happened.
//
//	func TestProvision(t *testing.T) {
//		mcptest.Eras(t, func(t *testing.T, era mcptest.Era) {
//			h := mcptest.New(t, newServer(), &mcptest.Options{Era: era})
//			h.Answer(mcptest.Elicit("Which region?", map[string]any{"region": "eu"}))
//			res := h.CallTool("provision", map[string]any{"name": "orders"})
//			if got := mcptest.Text(res); got != "orders in eu" {
//				t.Errorf("result %q", got)
//			}
//		})
//	}
//
// # Eras
//
// A harness speaks one protocol era (Era): Modern (2026-07-28, where a
// question comes back in an input_required result and the call is sent
// again with the answer) or Legacy (2025-11-25, where the server asks
// with live requests on the session while the call is open). Eras runs
// a test once in each, as subtests, so that one test covers both ways a
// handler's questions travel.
//
// # The script
//
// Answer adds answers to the harness's script. Each answers one kind of
// question — Elicit, Decline and Cancel an elicitation, Sample a
// sampling request, Roots a roots request, Reply any of the three with
// a result of its own — and says which questions it answers: a string is
// the exact question text, a Match (Prefix, Regexp, Field, Key, Any)
// something else. The first answer in the script that fits a question
// answers it; an answer answers as many questions as it fits. A question
// no answer fits fails the test with a message that names it.
//
// # What a call did
//
// Rounds returns the questions the last call asked, round by round, with
// what the script answered; Wire returns every JSON-RPC message that
// crossed the pipe, both ways. When a test fails, the harness logs the
// last messages of the wire.
package mcptest
