package main

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestMain lets the test binary play the example's roles: demo re-runs
// it as "serve", "ask" and "answer", each a separate process.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "serve", "ask", "answer":
			if err := run(os.Args[1:], os.Stdout); err != nil {
				os.Stderr.WriteString("resume: " + err.Error() + "\n")
				os.Exit(1)
			}
			os.Exit(0)
		}
	}
	os.Exit(m.Run())
}

// The call is started by one process and finished by another: the second
// answers the saved questions, then a later round, and gets the result.
func TestAnotherProcessFinishesTheCall(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three processes")
	}
	var out bytes.Buffer
	if err := demo(os.Args[0], &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	got := out.String()
	ask := regexp.MustCompile(`\[ask pid (\d+)\] tools/call "deploy" needs 2 answers`).FindStringSubmatch(got)
	ans := regexp.MustCompile(`\[answer pid (\d+)\] resuming the call started by pid (\d+)`).FindStringSubmatch(got)
	if ask == nil || ans == nil {
		t.Fatalf("output:\n%s", got)
	}
	if ans[2] != ask[1] || ans[1] == ask[1] {
		t.Fatalf("ask ran as pid %s, answer as pid %s (saying it resumes pid %s)", ask[1], ans[1], ans[2])
	}
	for _, want := range []string{
		`"requestState": "v1.`,                             // the saved state, sealed
		"Q: Deploy checkout to eu-west-1 with 3 replicas?", // the later round, answered in the second process
		"result: Deployed checkout to eu-west-1 with 3 replicas. Changelog: Faster checkout, fewer retries.",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
}
