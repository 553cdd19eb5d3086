package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/roundtrip-mcp/roundtrip/internal/testutil"
	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// The hostile-terminal server: every text it sends (its name and
// instructions, tool names and descriptions, results, errors, questions,
// log and progress messages, its stderr) carries escape sequences that
// would take the terminal over. The server is an ordinary mcp.Server
// whose texts hold the marker evilMark; its output (the HTTP response
// bytes, the stdio lines) has the marker replaced by evilJSON, so that
// even names the library would refuse reach the client.

const evilMark = "ZZEVILZZ"

// evilText is what each marker becomes: OSC 0 (window title), OSC 52
// (clipboard write), CSI 2J (clear screen), \r\x1b[2K and a fake prompt,
// a C1 CSI (U+009B), a lone ESC, DEL, a bidi override, NEL (U+0085) and
// a raw 0x9b byte (not UTF-8: decoded as U+FFFD).
const evilText = "<\x1b]0;pwned\x07|\x1b]52;c;cHduZWQ=\x07|\x1b[2J|\r\x1b[2K[fake] password: |\u009b31m|\x1b|\x7f|\u202eexe.txt|\u0085|\x9b>"

// evilJSON is evilText inside a JSON string: encoding/json escapes the C0
// controls; DEL, C1, the bidi override and the raw byte stay raw, as a
// hostile server writes them.
var evilJSON = func() []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(strings.ReplaceAll(evilText, "\x9b>", ">"))
	s := bytes.TrimSuffix(bytes.TrimSpace(b.Bytes()), []byte(`"`))
	s = bytes.TrimPrefix(s, []byte(`"`))
	s = bytes.TrimSuffix(s, []byte(">"))
	return append(s, "\x9b>"...)
}()

// evilDecoded is evilText as a JSON decoder reads it from evilJSON.
var evilDecoded = strings.ToValidUTF8(evilText, "\uFFFD")

func evil(s string) string { return s + " " + evilMark }

// hostileServer is the server behind both transports.
func hostileServer() *mcp.Server {
	srv := mcp.NewServer(mcp.Implementation{Name: evil("hostile"), Title: evil("title"), Version: evilMark},
		&mcp.ServerOptions{Instructions: evil("instructions")})
	mcp.AddTypedTool(srv, &mcp.Tool{Name: "t-" + evilMark, Title: evil("tool title"), Description: evil("tool description"),
		InputSchema: json.RawMessage(`{"type":"object","properties":{"p":{"type":"string","description":"` + evilMark + `","enum":["a","` + evilMark + `"]}}}`)},
		func(ctx context.Context, _ *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
			return mcp.TextResult(evil("never called")), nil
		})
	mcp.AddTypedTool(srv, &mcp.Tool{Name: "evil", Description: evil("asks and logs")}, func(ctx context.Context, _ *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
		//lint:ignore SA1019 logging to the client, deprecated in 2026-07-28, is still served to the revisions that have it
		toClient := slog.New(mcp.NewLogHandler(&mcp.LogHandlerOptions{Logger: evilMark}))
		toClient.WarnContext(ctx, evil("log message"))
		toClient.WarnContext(ctx, "data", "k", evil("log data"))
		mcp.ReportProgress(ctx, 1, 2, evil("progress"))
		r, err := mcp.ElicitForm(ctx, evil("elicitation message"), json.RawMessage(`{"type":"object","properties":{
 "secret":{"type":"string","title":"`+evilMark+`","description":"`+evilMark+`","default":"`+evilMark+`"},
 "pick":{"type":"string","oneOf":[{"const":"`+evilMark+`","title":"`+evilMark+`"},{"const":"b","title":"B"}]}},"required":["pick"]}`))
		if err != nil {
			return nil, err
		}
		b, _ := json.Marshal(r.Content)
		res := mcp.TextResult(evil("result") + " " + string(b))
		res.StructuredContent = map[string]any{"s": evil("structured")}
		return res, nil
	})
	mcp.AddTypedTool(srv, &mcp.Tool{Name: "evil-url", Description: "URL elicitation"}, func(ctx context.Context, _ *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
		a, err := mcp.ElicitURL(ctx, evil("open this"), "https://evil.test/"+evilMark)
		if err != nil {
			return nil, err
		}
		return mcp.TextResult(evil(string(a))), nil
	})
	mcp.AddTypedTool(srv, &mcp.Tool{Name: "evil-sample", Description: "sampling"}, func(ctx context.Context, _ *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
		//lint:ignore SA1019 sampling, deprecated in 2026-07-28, is still served to the revisions that have it
		_, err := mcp.Sample(ctx, &mcp.CreateMessageRequest{MaxTokens: 5, SystemPrompt: evil("system"),
			ModelPreferences: &mcp.ModelPreferences{Hints: []mcp.ModelHint{{Name: evilMark}}},
			Messages:         []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: []mcp.Content{&mcp.TextContent{Text: evil("sampled")}}}}})
		if err != nil {
			return nil, err
		}
		return mcp.TextResult(evil("sampled result")), nil
	})
	mcp.AddTypedTool(srv, &mcp.Tool{Name: "evil-iserror", Description: "isError"}, func(ctx context.Context, _ *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
		return mcp.ErrorResult(evil("tool error")), nil
	})
	mcp.AddTypedTool(srv, &mcp.Tool{Name: "evil-rpcerror", Description: "JSON-RPC error"}, func(ctx context.Context, _ *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
		return nil, mcp.NewError(-32000, evil("rpc error"), map[string]any{"d": evilMark})
	})
	mcp.AddTypedTool(srv, &mcp.Tool{Name: "evil-needs-url", Description: "-32042"}, func(ctx context.Context, _ *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
		return nil, mcp.NewError(codeURLElicitationRequired, evil("url required"), map[string]any{"elicitations": []any{
			map[string]any{"mode": "url", "message": evil("sign in"), "url": "https://evil.test/" + evilMark, "elicitationId": "e1"}}})
	})
	srv.AddPrompt(&mcp.Prompt{Name: "p", Title: evil("prompt title"), Description: evil("prompt description"),
		Arguments: []mcp.PromptArgument{{Name: "a", Description: evilMark}}},
		func(ctx context.Context, r *mcp.GetPromptRequest) (mcp.PromptResponse, error) {
			return &mcp.GetPromptResult{Description: evil("got description"), Messages: []mcp.PromptMessage{{Role: mcp.RoleUser,
				Content: &mcp.TextContent{Text: evil("prompt message")}}}}, nil
		})
	srv.AddResource(&mcp.Resource{URI: "test://evil", Name: evil("resource"), Title: evilMark, Description: evil("resource description"), MIMEType: "text/plain"},
		func(ctx context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.URI, Text: evil("contents")}, {URI: "test://" + evilMark, Text: evilMark}}}, nil
		})
	srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "test://t/{x}", Name: evil("template"), Description: evil("template description")},
		func(ctx context.Context, r *mcp.ReadResourceRequest) (mcp.ResourceResponse, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.URI, Text: evilMark}}}, nil
		})
	return srv
}

// evilWriter replaces the marker in what it writes, a line at a time
// (stdio) or a write at a time (HTTP: one JSON body or SSE event each).
type evilWriter struct {
	w     io.Writer
	lines bool
	buf   []byte
}

func (e *evilWriter) Write(p []byte) (int, error) {
	if !e.lines {
		_, err := e.w.Write(bytes.ReplaceAll(p, []byte(evilMark), evilJSON))
		return len(p), err
	}
	e.buf = append(e.buf, p...)
	for {
		i := bytes.IndexByte(e.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		if _, err := e.w.Write(bytes.ReplaceAll(e.buf[:i+1], []byte(evilMark), evilJSON)); err != nil {
			return 0, err
		}
		e.buf = e.buf[i+1:]
	}
}

type evilResponse struct {
	http.ResponseWriter
	ew *evilWriter
}

func (r *evilResponse) WriteHeader(code int) {
	r.Header().Del("Content-Length")
	r.ResponseWriter.WriteHeader(code)
}
func (r *evilResponse) Write(p []byte) (int, error) { return r.ew.Write(p) }
func (r *evilResponse) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// hostileHTTP serves hostileServer on loopback.
func hostileHTTP(t *testing.T) string {
	t.Helper()
	srv := hostileServer()
	h := mcp.NewHTTPHandler(srv, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(&evilResponse{ResponseWriter: w, ew: &evilWriter{w: w}}, r)
	}))
	t.Cleanup(func() { hs.Close(); srv.Close() })
	return hs.URL
}

// serveHostileStdio is the stdio server (the test binary run with
// "serve-hostile-stdio"): hostileServer, and stderr lines with raw
// escapes, a raw 0x9b and a rune cut between two writes.
func serveHostileStdio() {
	os.Stderr.WriteString("stderr " + evilText + "\n")
	os.Stderr.Write([]byte("cut \xc2"))
	os.Stderr.Write([]byte("\x9b rune\n"))
	w := bufio.NewWriter(os.Stdout)
	ew := &evilWriter{w: flushWriter{w}, lines: true}
	if err := hostileServer().ServeStream(context.Background(), os.Stdin, ew, nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

type flushWriter struct{ w *bufio.Writer }

func (f flushWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if err == nil {
		err = f.w.Flush()
	}
	return n, err
}

// rawControls counts what a terminal would act on: C0 controls but
// newline and tab, DEL, C1 controls (U+0080–U+009F), bidi controls and
// bytes that are not UTF-8 (a lone 0x9b is a C1 CSI to many terminals).
func rawControls(s string) int {
	n := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			n++
		case r < 0x20 && r != '\n' && r != '\t', r == 0x7f, r >= 0x80 && r <= 0x9f, isBidiControl(r):
			n++
		}
		i += size
	}
	return n
}

// hostileTargets are the hostile server over HTTP and over stdio.
func hostileTargets(t *testing.T) map[string][]string {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return map[string][]string{
		"http":  {"--url", hostileHTTP(t)},
		"stdio": {"--", self, "serve-hostile-stdio"},
	}
}

// With the hostile-terminal server, no raw control byte other than \n
// and \t reaches stdout or stderr, in any command, over HTTP and stdio
// and in both eras; the text itself is there, rendered visibly.
func TestServerTextNeverReachesTheTerminalRaw(t *testing.T) {
	for transport, server := range hostileTargets(t) {
		t.Run(transport, func(t *testing.T) {
			file := t.TempDir() + "/pending.json"
			runs := []struct {
				stdin string
				args  []string
			}{
				{"", []string{"discover"}},
				{"", []string{"discover", "--legacy"}},
				{"", []string{"tools"}},
				{"", []string{"prompts"}},
				{"", []string{"resources"}},
				{"", []string{"templates"}},
				{"\n2\n", []string{"call", "evil", "--log-level", "debug"}},
				{"\n2\n", []string{"call", "evil", "--log-level", "debug", "--legacy"}},
				{"y\n", []string{"call", "evil-url"}},
				{"y\n", []string{"call", "evil-url", "--legacy"}},
				{"a reply\n\n", []string{"call", "evil-sample"}},
				{"a reply\n\n", []string{"call", "evil-sample", "--legacy"}},
				{"", []string{"call", "evil-iserror"}},
				{"", []string{"call", "evil-rpcerror"}},
				{"", []string{"call", "evil-needs-url", "--legacy"}},
				{"", []string{"call", "evil-needs-url"}},
				{"", []string{"call", "no-such-tool"}},
				{"", []string{"get", "p"}},
				{"", []string{"get", "no-such-prompt"}},
				{"", []string{"read", "test://evil"}},
				{"", []string{"read", "test://t/x"}},
				{"", []string{"call", "evil", "--save", file}},
				{"\n2\n", []string{"resume", file, "--allow-command"}},
			}
			visible := 0
			for _, run := range runs {
				r := cli(t, run.stdin, append(run.args, server...)...)
				if n := rawControls(r.stdout) + rawControls(r.stderr); n != 0 {
					t.Errorf("%s: %d raw control characters reached the terminal:\nstdout %q\nstderr %q", strings.Join(run.args, " "), n, r.stdout, r.stderr)
				}
				if strings.Contains(r.stdout+r.stderr, `\x1b]0;pwned\x07`) {
					visible++
				}
			}
			if visible < len(runs)-2 {
				t.Errorf("the server's text was rendered visibly in %d of %d commands", visible, len(runs))
			}
		})
	}
}

// --json output stays exact JSON: valid, with the server's strings
// decoding to exactly what it sent, and no raw control character (C1,
// DEL and the bidi controls are \u escapes).
func TestJSONOutputStaysExactJSON(t *testing.T) {
	for transport, server := range hostileTargets(t) {
		t.Run(transport, func(t *testing.T) {
			for _, run := range []struct {
				stdin string
				args  []string
				want  func(v map[string]any) string
			}{
				{"", []string{"tools"}, func(v map[string]any) string {
					for _, tool := range v["tools"].([]any) {
						if m := tool.(map[string]any); strings.HasPrefix(m["name"].(string), "t-") {
							return m["description"].(string)
						}
					}
					return ""
				}},
				{"", []string{"discover"}, func(v map[string]any) string { return v["instructions"].(string) }},
				{"\n2\n", []string{"call", "evil"}, func(v map[string]any) string {
					return v["structuredContent"].(map[string]any)["s"].(string)
				}},
				{"", []string{"get", "p"}, func(v map[string]any) string { return v["description"].(string) }},
				{"", []string{"call", "evil-rpcerror"}, func(v map[string]any) string {
					return v["error"].(map[string]any)["rpc"].(map[string]any)["message"].(string)
				}},
			} {
				r := cli(t, run.stdin, append(append(run.args, "--json"), server...)...)
				if n := rawControls(r.stdout) + rawControls(r.stderr); n != 0 {
					t.Errorf("%s --json: %d raw control characters: %q", run.args[0], n, r.stdout)
				}
				var v map[string]any
				if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
					t.Fatalf("%s --json is not JSON: %v", run.args[0], err)
				}
				got := run.want(v)
				if !strings.HasSuffix(got, " "+evilDecoded) {
					t.Errorf("%s --json: the server's text decodes to %q, want it to end in %q", run.args[0], got, evilDecoded)
				}
			}
		})
	}
}

// The terminal forms (huh draws them itself, on the raw terminal) show
// the server's titles, descriptions, enum labels and defaults with their
// escapes rendered visibly; the value picked goes back unchanged.
func TestServerTextNeverReachesTheTerminalRawInForms(t *testing.T) {
	ev, _ := json.Marshal(evilDecoded)
	schema := `{"type":"object","properties":{
 "pick":{"type":"string","title":` + string(ev) + `,"description":` + string(ev) + `,"oneOf":[{"const":` + string(ev) + `,"title":` + string(ev) + `},{"const":"b","title":"B"}]},
 "text":{"type":"string","title":` + string(ev) + `,"description":` + string(ev) + `,"default":` + string(ev) + `,"pattern":"^` + strings.Trim(string(ev), `"`) + `$"},
 "many":{"type":"array","title":` + string(ev) + `,"items":{"anyOf":[{"const":"x","title":` + string(ev) + `}]}},
 "ok":{"type":"boolean","title":` + string(ev) + `,"description":` + string(ev) + `}
},"required":["pick"]}`
	fields, err := parseForm(json.RawMessage(schema))
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]string{"pick": "\r", "text": "\r", "many": "x\r", "ok": "\r"}
	for _, f := range fields {
		var transcript bytes.Buffer
		screen := &drawnScreen{drawn: make(chan struct{})}
		keysIn := &afterDrawn{screen: screen, r: strings.NewReader(keys[f.name])}
		a := newAsker(keysIn, &termWriter{w: &transcript}, "human", false)
		a.tui, a.tuiOut = true, screen
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		line, err := a.askFieldTUI(ctx, f)
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", f.name, err)
		}
		for _, raw := range []string{"\x1b]0;pwned", "\x1b]52;", "\x1b[2J", "\u009b", "\u202e", "\u0085", "\x7f"} {
			if strings.Contains(screen.String(), raw) {
				t.Errorf("%s: the form drew %q raw", f.name, raw)
			}
		}
		if n := rawControls(transcript.String()); n != 0 {
			t.Errorf("%s: the transcript has %d raw control characters: %q", f.name, n, transcript.String())
		}
		if !strings.Contains(screen.String(), `\x1b]0;pwned`) {
			t.Errorf("%s: the form does not show the server's text visibly:\n%q", f.name, screen.String())
		}
		if f.name == "pick" && line != evilDecoded {
			t.Errorf("the picked value is %q, want the server's value unchanged", line)
		}
		if f.name == "text" && line != "" {
			t.Errorf("the text field returned %q, want the empty line that takes the default", line)
		}
	}
}

// drawnScreen is the terminal huh draws on; drawn is closed once the
// server's text is on it.
type drawnScreen struct {
	testutil.Buffer
	drawn chan struct{}
	once  sync.Once
}

func (d *drawnScreen) Write(p []byte) (int, error) {
	n, err := d.Buffer.Write(p)
	if strings.Contains(d.Buffer.String(), "pwned") {
		d.once.Do(func() { close(d.drawn) })
	}
	return n, err
}

// afterDrawn gives its keys once the form is drawn (or after 5 s): huh
// may finish a field before drawing it when every key is there at once.
type afterDrawn struct {
	screen *drawnScreen
	r      io.Reader
	once   sync.Once
}

func (a *afterDrawn) Read(p []byte) (int, error) {
	a.once.Do(func() {
		select {
		case <-a.screen.drawn:
		case <-time.After(5 * time.Second):
		}
	})
	return a.r.Read(p)
}
