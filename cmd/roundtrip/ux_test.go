package main

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// serverWith serves testServer with more tools added by add.
func serverWith(t *testing.T, add func(*mcp.Server)) string {
	t.Helper()
	srv := testServer()
	add(srv)
	hs := httptest.NewServer(mcp.NewHTTPHandler(srv, nil))
	t.Cleanup(func() { hs.Close(); srv.Close() })
	return hs.URL
}

// "help CMD" shows the command's own flags and points to "help flags"
// for the common ones, which it does not repeat.
func TestHelpOfACommandShowsOnlyItsOwnFlags(t *testing.T) {
	r := cli(t, "", "help", "call")
	r.must(t, 0, "-save FILE", "-no-validate", "roundtrip help flags")
	for _, common := range []string{"-oauth-redirect", "-protocol-version", "-max-rounds"} {
		if strings.Contains(r.stdout, common) {
			t.Errorf("help call repeats the common flag %s", common)
		}
	}
	if n := strings.Count(r.stdout, "\n"); n > 35 {
		t.Errorf("help call is %d lines", n)
	}
	cli(t, "", "call", "--help").must(t, 0, "-save FILE")
	cli(t, "", "help", "flags").must(t, 0, "-oauth-redirect URL", "-protocol-version VERSION", "-e KEY=VALUE", "-cwd DIR", "-config FILE")
	cli(t, "", "help", "exit-codes").must(t, 0, "130  interrupted", "7    request state rejected")
	cli(t, "", "help", "environment").must(t, 0, "ROUNDTRIP_URL", "ROUNDTRIP_TOKEN")
	cli(t, "", "help").must(t, 0, "Exit status:", "3    connection", "ROUNDTRIP_CONFIG")
	r = cli(t, "", "help", "cal")
	r.must(t, exitUsage)
	if !strings.Contains(r.stderr, `did you mean "call"?`) {
		t.Errorf("stderr lacks the suggestion")
	}
}

// An empty result says "(no content)" instead of printing nothing.
func TestEmptyResultSaysNoContent(t *testing.T) {
	url := serverWith(t, func(srv *mcp.Server) {
		mcp.AddTypedTool(srv, &mcp.Tool{Name: "nothing"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	})
	r := cli(t, "", "call", "--url", url, "nothing")
	r.must(t, 0)
	if !strings.Contains(r.stderr, "(no content)") {
		t.Errorf("stderr lacks (no content)")
	}
	// --json keeps stdout JSON.
	r = cli(t, "", "call", "--url", url, "nothing", "--json")
	r.must(t, 0)
	if !json.Valid([]byte(r.stdout)) {
		t.Errorf("stdout is not JSON: %q", r.stdout)
	}
}

// --save shows the questions it saves (text, kind and form fields, in
// the order resume asks them); with --json as a JSON object.
func TestSaveShowsTheQuestions(t *testing.T) {
	url, _ := httpServer(t)
	file := filepath.Join(t.TempDir(), "p.json")
	r := cli(t, "", "call", "--url", url, "--save", file, "deploy", "service=checkout")
	r.must(t, 0)
	form := strings.Index(r.stderr, "form: Where should checkout run? [region, replicas]")
	sampling := strings.Index(r.stderr, "sampling: a model reply to: Changelog for checkout?")
	if form < 0 || sampling < form {
		t.Errorf("stderr does not show the two questions in order")
	}
	r = cli(t, "", "call", "--url", url, "--save", file, "deploy", "service=checkout", "--json")
	r.must(t, 0)
	var saved struct {
		Saved     string     `json:"saved"`
		Questions []question `json:"questions"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &saved); err != nil || saved.Saved != file || len(saved.Questions) != 2 ||
		saved.Questions[0].Kind != "form" || saved.Questions[1].Kind != "sampling" {
		t.Errorf("--save --json = %q (%v)", r.stdout, err)
	}
}

// resume marks the file finished when the call completes; resuming it
// again says so, prints the kept result, and sends nothing.
func TestResumeOfAFinishedFileDoesNotRunTheCallAgain(t *testing.T) {
	var runs atomic.Int32
	url := serverWith(t, func(srv *mcp.Server) {
		mcp.AddTypedTool(srv, &mcp.Tool{Name: "once"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, error) {
			size, err := mcp.Elicit[Size](ctx, "How big?")
			if err != nil {
				return nil, err
			}
			s, err := size.Value()
			if err != nil {
				return nil, err
			}
			runs.Add(1)
			return mcp.TextResult("made " + strings.Repeat("x", s.GB)), nil
		})
	})
	file := filepath.Join(t.TempDir(), "p.json")
	cli(t, "", "call", "--url", url, "--save", file, "once").must(t, 0)
	cli(t, "3\n", "resume", file).must(t, 0, "made xxx")
	b, _ := os.ReadFile(file)
	var saved savedCall
	if err := json.Unmarshal(b, &saved); err != nil || !saved.Finished || saved.FinishedAt == nil {
		t.Fatalf("file not marked finished: %s (%v)", b, err)
	}
	r := cli(t, "", "resume", file)
	r.must(t, 0, "made xxx")
	if !strings.Contains(r.stderr, "is finished") || strings.Contains(r.stderr, "How big?") {
		t.Errorf("stderr = %q: want the note and no question", r.stderr)
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("the tool completed %d times, want 1", n)
	}
}

// discover reports the versions the server lists: on a 2025-11-25
// session (no server/discover) it says none are listed rather than
// presenting the negotiated one as the server's list.
func TestDiscoverReportsOnlyListedVersions(t *testing.T) {
	url, _ := httpServer(t)
	cli(t, "", "discover", "--url", url).must(t, 0, "supported:     2026-07-28, 2025-11-25")
	r := cli(t, "", "discover", "--url", url, "--legacy")
	r.must(t, 0, "supported:     (not listed")
	r = cli(t, "", "discover", "--url", url, "--legacy", "--json")
	r.must(t, 0, `"protocolVersion": "2025-11-25"`)
	if strings.Contains(r.stdout, "supportedVersions") {
		t.Errorf("legacy discover --json claims a supportedVersions list: %s", r.stdout)
	}
}
