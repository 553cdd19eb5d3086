package mcptest_test

import (
	"context"
	"strings"
	"testing"

	"github.com/roundtrip-mcp/roundtrip/mcp"
	"github.com/roundtrip-mcp/roundtrip/mcptest"
)

// Every way of saying which question an answer answers, in both eras;
// the answers that must not fit come first, and would fail the test
// (their region is "us") if they did.
func TestAnswersMatchByTextPrefixRegexpOrField(t *testing.T) {
	for name, fits := range map[string]mcptest.Answer{
		"text":   mcptest.Elicit("Which region?", map[string]any{"region": "eu"}),
		"prefix": mcptest.Elicit(mcptest.Prefix("Which reg"), map[string]any{"region": "eu"}),
		"regexp": mcptest.Elicit(mcptest.Regexp(`^Which \w+\?$`), map[string]any{"region": "eu"}),
		"field":  mcptest.Elicit(mcptest.Field("region"), map[string]any{"region": "eu"}),
		"any":    mcptest.Elicit(mcptest.Any, map[string]any{"region": "eu"}),
	} {
		t.Run(name, func(t *testing.T) {
			mcptest.Eras(t, func(t *testing.T, era mcptest.Era) {
				h := mcptest.New(t, newServer(), &mcptest.Options{Era: era})
				h.Answer(
					mcptest.Elicit("Which region", map[string]any{"region": "us"}), // not the exact text
					mcptest.Elicit(mcptest.Prefix("region"), map[string]any{"region": "us"}),
					mcptest.Elicit(mcptest.Regexp(`^region`), map[string]any{"region": "us"}),
					mcptest.Elicit(mcptest.Field("gb"), map[string]any{"region": "us"}),
					mcptest.Elicit(mcptest.Key("elicit_0000000000000000"), map[string]any{"region": "us"}),
					mcptest.Sample(mcptest.Any, "orders"), // of another kind
					fits,
					mcptest.Elicit(mcptest.Any, map[string]any{"region": "us"}), // after the one that fits
					mcptest.Roots("file:///r"),
				)
				if got := mcptest.Text(h.CallTool("provision", nil)); got != "orders in eu at file:///r" {
					t.Errorf("result %q", got)
				}
			})
		})
	}
}

// A Key match fits the question with that inputRequests key: Modern
// questions have keys, Legacy live requests have none.
func TestKeyMatchesModernQuestionsOnly(t *testing.T) {
	h := mcptest.New(t, newServer(), nil)
	h.Answer(
		mcptest.Elicit(mcptest.Key("other"), map[string]any{"region": "us"}),
		mcptest.Elicit(mcptest.Key("where"), map[string]any{"region": "eu"}),
	)
	if got := mcptest.Text(h.CallTool("keyed", nil)); got != "eu" {
		t.Errorf("result %q", got)
	}
	if q := h.Rounds()[0][0]; q.Key != "where" {
		t.Errorf("key %q", q.Key)
	}

	ft := newFakeT()
	ft.run(func(ft *fakeT) {
		h := mcptest.New(ft, newServer(), &mcptest.Options{Era: mcptest.Legacy})
		h.Answer(mcptest.Elicit(mcptest.Key("where"), map[string]any{"region": "eu"}))
		h.Client.CallTool(ft.Context(), "keyed", nil, nil)
	})
	if !strings.Contains(ft.errorText(), `no answer in the script for elicitation/create "Where to?"`) {
		t.Errorf("a Key answer in the Legacy era: failures %q", ft.errorText())
	}
}

// A question no answer fits fails the test, in both eras, with a message
// that names the question, lists what the script holds for its kind and
// says how to answer it; the call itself does not complete.
func TestAnUnansweredQuestionFailsTheTestNamingIt(t *testing.T) {
	mcptest.Eras(t, func(t *testing.T, era mcptest.Era) {
		ft := newFakeT()
		var res *mcp.CallToolResult
		var err error
		ft.run(func(ft *fakeT) {
			h := mcptest.New(ft, newServer(), &mcptest.Options{Era: era})
			h.Answer(mcptest.Elicit("Which regoin?", map[string]any{"region": "eu"}))
			res, err = h.Client.CallTool(ft.Context(), "provision", nil, nil)
		})
		msg := ft.errorText()
		for _, want := range []string{
			`mcptest: no answer in the script for elicitation/create "Which region?" (fields region)`,
			`the script's answers of this kind fit text "Which regoin?"`,
			`answer it with h.Answer(mcptest.Elicit("Which region?", ...))`,
		} {
			if !strings.Contains(msg, want) {
				t.Errorf("failures lack %q:\n%s", want, msg)
			}
		}
		if !ft.Failed() {
			t.Error("the test did not fail")
		}
		if err == nil && !res.IsError {
			t.Errorf("the call completed: %q", mcptest.Text(res))
		}
	})
}

func TestUnansweredSamplingAndRootsSayHowToAnswer(t *testing.T) {
	for _, tc := range []struct {
		answers []mcptest.Answer
		want    []string
	}{
		{[]mcptest.Answer{mcptest.Elicit(mcptest.Any, map[string]any{"region": "eu"})}, []string{
			`no answer in the script for sampling/createMessage "Name a database in eu" (key sample_`,
			`answer it with h.Answer(mcptest.Sample("Name a database in eu", ...))`}},
		{[]mcptest.Answer{mcptest.Elicit(mcptest.Any, map[string]any{"region": "eu"}), mcptest.Sample(mcptest.Any, "x")}, []string{
			`no answer in the script for roots/list (key roots_`,
			`answer it with h.Answer(mcptest.Roots(...))`}},
	} {
		tc.want = append(tc.want, "mcptest: calling provision: a question had no answer (see above)")
		ft := newFakeT()
		ft.run(func(ft *fakeT) {
			h := mcptest.New(ft, newServer(), nil)
			h.Answer(tc.answers...)
			h.CallTool("provision", nil)
		})
		for _, want := range tc.want {
			if !strings.Contains(ft.errorText(), want) {
				t.Errorf("failures lack %q:\n%s", want, ft.errorText())
			}
		}
	}
}

func TestDeclineAndCancelReachTheHandler(t *testing.T) {
	mcptest.Eras(t, func(t *testing.T, era mcptest.Era) {
		for _, tc := range []struct {
			answer mcptest.Answer
			want   string
		}{
			{mcptest.Decline("Proceed with the migration?"), "not confirmed: decline"},
			{mcptest.Cancel(mcptest.Prefix("Proceed")), "not confirmed: cancel"},
			{mcptest.Elicit(mcptest.Field("ok"), map[string]any{"ok": true}), "confirmed: true"},
			{mcptest.Reply(mcptest.Any, &mcp.ElicitResult{Action: mcp.ElicitDecline}), "not confirmed: decline"},
		} {
			h := mcptest.New(t, newServer(), &mcptest.Options{Era: era})
			h.Answer(tc.answer)
			if got := mcptest.Text(h.CallTool("confirm", nil)); got != tc.want {
				t.Errorf("result %q, want %q", got, tc.want)
			}
		}
	})
}

// Reply answers with a result as it is: the sampling result's model and
// the roots' names reach the handler.
func TestReplyAnswersWithTheResultGiven(t *testing.T) {
	mcptest.Eras(t, func(t *testing.T, era mcptest.Era) {
		h := mcptest.New(t, newServer(), &mcptest.Options{Era: era})
		sampled := &mcp.CreateMessageResult{Role: mcp.RoleAssistant, Model: "m1", Content: []mcp.Content{&mcp.TextContent{Text: "billing"}}}
		h.Answer(
			mcptest.Elicit(mcptest.Any, map[string]any{"region": "us"}),
			mcptest.Reply(mcptest.Regexp(`in us$`), sampled),
			mcptest.Reply(mcptest.Any, &mcp.ListRootsResult{Roots: []mcp.Root{{URI: "file:///data", Name: "data"}}}),
		)
		if got := mcptest.Text(h.CallTool("provision", nil)); got != "billing in us at file:///data" {
			t.Errorf("result %q", got)
		}
		r := h.Rounds()
		if len(r) != 3 || r[1][0].Answer != any(sampled) {
			t.Errorf("rounds %+v", r)
		}
	})
}

// Answers stay in the script: the same answer serves the questions of
// every call, and answers added later serve the questions after.
func TestAnswersServeEveryCallAndCanBeAddedBetweenCalls(t *testing.T) {
	mcptest.Eras(t, func(t *testing.T, era mcptest.Era) {
		h := mcptest.New(t, newServer(), &mcptest.Options{Era: era})
		h.Answer(mcptest.Elicit(mcptest.Field("region"), map[string]any{"region": "eu"}))
		for range 2 {
			if got := mcptest.Text(h.CallTool("keyed", nil)); got != "eu" {
				t.Errorf("result %q", got)
			}
		}
		h.Answer(mcptest.Elicit(mcptest.Field("gb"), map[string]any{"gb": 5}))
		if got := mcptest.Text(h.CallTool("size", nil)); got != "5 GB in eu" {
			t.Errorf("result %q", got)
		}
	})
}

// An accepted form that leaves a field out gets the schema's default,
// as from any client.
func TestElicitAnswerGetsTheSchemaDefaults(t *testing.T) {
	srv := mcp.NewServer(mcp.Implementation{Name: "defaults", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "tier", InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, req *mcp.CallToolRequest) (mcp.ToolResponse, error) {
		r, err := mcp.ElicitForm(ctx, "Which tier?", []byte(`{"type":"object","properties":{"tier":{"type":"string","default":"basic"}}}`))
		if err != nil {
			return nil, err
		}
		return mcp.TextResult(r.Content["tier"].(string)), nil
	})
	mcptest.Eras(t, func(t *testing.T, era mcptest.Era) {
		h := mcptest.New(t, srv, &mcptest.Options{Era: era})
		h.Answer(mcptest.Elicit("Which tier?", nil))
		if got := mcptest.Text(h.CallTool("tier", nil)); got != "basic" {
			t.Errorf("result %q", got)
		}
	})
}

func TestRegexpPanicsOnABadPattern(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("no panic")
		}
	}()
	mcptest.Regexp(`(`)
}
