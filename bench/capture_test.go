package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/textproto"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// Captures prove that every subject is compared on the 2026-07-28 wire.
// For each subject, TestCaptures records what its client and server
// exchange, live, for three flows and checks it (checkCapture):
//
//	http-toolcall-<subject>.txt  connecting, then tools/call echo over loopback HTTP
//	http-mrtr-<subject>.txt      connecting, then the two-leg tools/call ask over HTTP
//	pipe-toolcall-<subject>.txt  connecting, then tools/call echo over the os.Pipe pair
//
// With -update it writes them to testdata/; TestCommittedCaptures checks
// the committed files with the same rules. Regenerate with
//
//	go test -run 'TestCaptures$' -update

var update = flag.Bool("update", false, "rewrite the captures in testdata/")

// message is one captured HTTP request or response, or one line on a pipe.
type message struct {
	request bool
	start   string // "POST /mcp" or "200 OK"; empty on a pipe
	header  http.Header
	body    []byte
}

// recordingTransport is an http.RoundTripper that records every exchange.
type recordingTransport struct {
	next http.RoundTripper
	mu   sync.Mutex
	log  []message
}

func (t *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
		req.Body.Close()
	}
	r2 := req.Clone(req.Context())
	r2.Body = io.NopCloser(bytes.NewReader(body))
	r2.ContentLength = int64(len(body))
	resp, err := t.next.RoundTrip(r2)
	if err != nil {
		return nil, err
	}
	rb, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(rb))
	rh := resp.Header.Clone()
	rh.Del("Date")
	t.mu.Lock()
	t.log = append(t.log,
		message{request: true, start: req.Method + " " + req.URL.RequestURI(), header: req.Header.Clone(), body: body},
		message{start: resp.Status, header: rh, body: rb})
	t.mu.Unlock()
	return resp, nil
}

// lineLog records the lines written on both directions of a pipe, in
// the order they were completed.
type lineLog struct {
	mu  sync.Mutex
	log []message
}

type recordingWriter struct {
	io.WriteCloser
	l       *lineLog
	request bool
	buf     []byte
}

func (w *recordingWriter) Write(p []byte) (int, error) {
	w.l.mu.Lock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.l.log = append(w.l.log, message{request: w.request, body: slices.Clone(w.buf[:i])})
		w.buf = w.buf[i+1:]
	}
	w.l.mu.Unlock()
	return w.WriteCloser.Write(p)
}

func (l *lineLog) wrap(request bool) func(io.WriteCloser) io.WriteCloser {
	return func(w io.WriteCloser) io.WriteCloser {
		return &recordingWriter{WriteCloser: w, l: l, request: request}
	}
}

// flow is one captured scenario.
type flow struct {
	kind string // http-toolcall, http-mrtr, pipe-toolcall
	tool string
	want string
}

var flows = []flow{
	{"http-toolcall", "echo", "hello"},
	{"http-mrtr", "ask", askResult},
	{"pipe-toolcall", "echo", "hello"},
}

// capture runs f for s and returns what went over the wire.
func capture(tb testing.TB, s subject, f flow) []message {
	ctx := context.Background()
	switch {
	case strings.HasPrefix(f.kind, "http-"):
		rt := &recordingTransport{next: newTransport()}
		c := httpCaller(tb, s, rt)
		if err := callWant(ctx, c, f.tool, "hello", f.want); err != nil {
			tb.Fatal(err)
		}
		rt.mu.Lock()
		defer rt.mu.Unlock()
		return slices.Clone(rt.log)
	default:
		l := &lineLog{}
		c := pipeCaller(tb, s, l.wrap(true), l.wrap(false))
		if err := callWant(ctx, c, f.tool, "hello", f.want); err != nil {
			tb.Fatal(err)
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		return slices.Clone(l.log)
	}
}

func captureFile(s subject, f flow) string {
	return filepath.Join("testdata", f.kind+"-"+s.name+".txt")
}

// encodeCapture writes messages in the testdata format: a request starts
// with ">>> ", a response with "<<< "; HTTP messages then carry their
// headers, a blank line and the body; each message ends with one newline
// that is not part of it.
func encodeCapture(s subject, f flow, msgs []message) []byte {
	var b bytes.Buffer
	test := "TestCaptures"
	if strings.HasPrefix(f.kind, "legacy-") {
		test = "TestLegacyCaptures"
	}
	fmt.Fprintf(&b, "# %s, %s: captured by %s (go test -run '%s$' -update).\n", s.name, f.kind, test, test)
	if strings.Contains(f.kind, "http-") {
		b.WriteString("# Request headers as the client set them (net/http adds Host, Content-Length and\n# User-Agent); response headers without Date.\n")
	} else {
		b.WriteString("# One line per message: >>> client to server, <<< server to client.\n")
	}
	for _, m := range msgs {
		if m.request {
			b.WriteString(">>> ")
		} else {
			b.WriteString("<<< ")
		}
		if m.header != nil {
			b.WriteString(m.start + "\n")
			m.header.Write(&b)
			b.WriteString("\n")
		}
		b.Write(m.body)
		b.WriteString("\n")
	}
	return bytes.ReplaceAll(b.Bytes(), []byte("\r\n"), []byte("\n"))
}

// decodeCapture reads what encodeCapture wrote.
func decodeCapture(data []byte, isHTTP bool) ([]message, error) {
	var msgs []message
	var cur *message
	var body []byte
	flush := func() {
		if cur != nil {
			cur.body = bytes.TrimSuffix(body, []byte("\n"))
			msgs = append(msgs, *cur)
		}
	}
	sc := bufio.NewReader(bytes.NewReader(data))
	for {
		line, err := sc.ReadBytes('\n')
		if len(line) == 0 && err != nil {
			break
		}
		req, resp := bytes.HasPrefix(line, []byte(">>> ")), bytes.HasPrefix(line, []byte("<<< "))
		switch {
		case cur == nil && bytes.HasPrefix(line, []byte("#")):
			continue
		case req || resp:
			flush()
			cur = &message{request: req}
			body = nil
			rest := line[4:]
			if isHTTP {
				cur.start = strings.TrimSpace(string(rest))
				h, err := textproto.NewReader(sc).ReadMIMEHeader()
				if err != nil {
					return nil, fmt.Errorf("headers of %q: %v", cur.start, err)
				}
				cur.header = http.Header(h)
			} else {
				body = append(body, rest...)
			}
		case cur == nil:
			return nil, fmt.Errorf("text before the first message: %q", line)
		default:
			body = append(body, line...)
		}
	}
	flush()
	return msgs, nil
}

// TestCaptures captures every flow of every subject live and checks it;
// with -update it rewrites testdata/.
func TestCaptures(t *testing.T) { liveCaptures(t, subjects, flows, capture, checkCapture) }

// TestCommittedCaptures checks the captures in testdata/.
func TestCommittedCaptures(t *testing.T) {
	committedCaptures(t, subjects, flows, "http-", checkCapture)
}

// liveCaptures captures each flow of each subject with capture and checks
// it with check; with -update it rewrites testdata/.
func liveCaptures(t *testing.T, subjects []subject, flows []flow,
	capture func(testing.TB, subject, flow) []message, check func(subject, flow, []message) error) {
	for _, s := range subjects {
		for _, f := range flows {
			t.Run(s.name+"/"+f.kind, func(t *testing.T) {
				msgs := capture(t, s, f)
				if err := check(s, f, msgs); err != nil {
					t.Fatalf("%v\n%s", err, encodeCapture(s, f, msgs))
				}
				if *update {
					if err := os.WriteFile(captureFile(s, f), encodeCapture(s, f, msgs), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			})
		}
	}
}

// committedCaptures checks the committed capture of each flow of each
// subject with check; flows whose kind starts with httpPrefix are HTTP
// captures.
func committedCaptures(t *testing.T, subjects []subject, flows []flow, httpPrefix string, check func(subject, flow, []message) error) {
	for _, s := range subjects {
		for _, f := range flows {
			t.Run(s.name+"/"+f.kind, func(t *testing.T) {
				data, err := os.ReadFile(captureFile(s, f))
				if err != nil {
					t.Fatal(err)
				}
				msgs, err := decodeCapture(data, strings.HasPrefix(f.kind, httpPrefix))
				if err != nil {
					t.Fatal(err)
				}
				if err := check(s, f, msgs); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// TestCaptureFormat checks that decodeCapture reads back what
// encodeCapture writes.
func TestCaptureFormat(t *testing.T) {
	s, f := subjects[0], flows[0]
	msgs := []message{
		{request: true, start: "POST /mcp", header: http.Header{"A": {"1"}}, body: []byte("{\"x\":1}\n")},
		{start: "200 OK", header: http.Header{"B": {"2"}}, body: []byte("event: message\ndata: {}\n\n")},
	}
	got, err := decodeCapture(encodeCapture(s, f, msgs), true)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || string(got[0].body) != string(msgs[0].body) || string(got[1].body) != string(msgs[1].body) ||
		got[0].start != "POST /mcp" || got[1].header.Get("B") != "2" {
		t.Fatalf("%+v", got)
	}
}

// rpc is the part of a JSON-RPC message the checks look at.
type rpc struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params *struct {
		Name           string                     `json:"name"`
		Meta           map[string]json.RawMessage `json:"_meta"`
		InputResponses map[string]struct {
			Action  string         `json:"action"`
			Content map[string]any `json:"content"`
		} `json:"inputResponses"`
		RequestState *string `json:"requestState"`
	} `json:"params"`
	Result *struct {
		ResultType *string `json:"resultType"`
		Content    []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		InputRequests map[string]struct {
			Method string `json:"method"`
		} `json:"inputRequests"`
		RequestState *string `json:"requestState"`
	} `json:"result"`
	Error json.RawMessage `json:"error"`
}

// bodiesOf returns the JSON-RPC messages of a body undecoded: the body
// itself, or the data of each SSE event.
func bodiesOf(m message) [][]byte {
	var raws [][]byte
	if m.header != nil && strings.HasPrefix(m.header.Get("Content-Type"), "text/event-stream") {
		for line := range strings.SplitSeq(string(m.body), "\n") {
			if d, ok := strings.CutPrefix(line, "data:"); ok && strings.TrimSpace(d) != "" {
				raws = append(raws, []byte(d))
			}
		}
	} else if len(bytes.TrimSpace(m.body)) > 0 {
		raws = append(raws, m.body)
	}
	return raws
}

// rpcsOf decodes the JSON-RPC messages of a body: the body itself, or
// the data of each SSE event.
func rpcsOf(m message) ([]rpc, error) {
	var out []rpc
	for _, r := range bodiesOf(m) {
		var v rpc
		if err := json.Unmarshal(r, &v); err != nil {
			return nil, fmt.Errorf("%v: %s", err, r)
		}
		out = append(out, v)
	}
	return out, nil
}

const metaVersion = "io.modelcontextprotocol/protocolVersion"

// checkCapture asserts the 2026-07-28 wire: no initialize handshake and
// no session; every request that names a version names 2026-07-28 (in
// _meta and, over HTTP, in MCP-Protocol-Version); each tools/call carries
// _meta protocolVersion and clientCapabilities (and, over HTTP, Mcp-Method
// and Mcp-Name); each result carries resultType; the multi round-trip flow
// is input_required with an elicitation/create, then a retry with
// inputResponses and the requestState echoed, then complete.
func checkCapture(s subject, f flow, msgs []message) error {
	isHTTP := strings.HasPrefix(f.kind, "http-")
	type call struct {
		req rpc
		res *rpc
	}
	var calls []*call
	pending := map[string]*call{}
	for i, m := range msgs {
		if isHTTP {
			for _, h := range []string{"Mcp-Session-Id"} {
				if m.header.Get(h) != "" {
					return fmt.Errorf("message %d carries %s", i, h)
				}
			}
			if !m.request && !strings.HasPrefix(m.start, "200") && !strings.HasPrefix(m.start, "202") {
				return fmt.Errorf("message %d: status %s", i, m.start)
			}
		}
		rs, err := rpcsOf(m)
		if err != nil {
			return fmt.Errorf("message %d: %v", i, err)
		}
		for _, r := range rs {
			switch {
			case m.request && (r.Method == "initialize" || r.Method == "notifications/initialized"):
				return fmt.Errorf("message %d: %s: the legacy handshake", i, r.Method)
			case m.request && r.Method != "":
				if r.Params != nil {
					if v, ok := r.Params.Meta[metaVersion]; ok && string(v) != `"`+protocolVersion+`"` {
						return fmt.Errorf("message %d: %s: _meta protocolVersion %s", i, r.Method, v)
					}
				}
				if isHTTP {
					if v := m.header.Get("Mcp-Protocol-Version"); v != protocolVersion {
						return fmt.Errorf("message %d: %s: MCP-Protocol-Version %q", i, r.Method, v)
					}
					if v := m.header.Get("Mcp-Method"); v != r.Method {
						return fmt.Errorf("message %d: %s: Mcp-Method %q", i, r.Method, v)
					}
				}
				if r.Method == "tools/call" {
					if r.Params == nil || string(r.Params.Meta[metaVersion]) != `"`+protocolVersion+`"` {
						return fmt.Errorf("message %d: tools/call without _meta protocolVersion %s", i, protocolVersion)
					}
					if _, ok := r.Params.Meta["io.modelcontextprotocol/clientCapabilities"]; !ok {
						return fmt.Errorf("message %d: tools/call without _meta clientCapabilities", i)
					}
					if r.Params.Name != f.tool {
						return fmt.Errorf("message %d: tools/call %q", i, r.Params.Name)
					}
					if isHTTP && m.header.Get("Mcp-Name") != f.tool {
						return fmt.Errorf("message %d: Mcp-Name %q", i, m.header.Get("Mcp-Name"))
					}
					c := &call{req: r}
					calls = append(calls, c)
					pending[string(r.ID)] = c
				}
			case !m.request && len(r.ID) > 0:
				c := pending[string(r.ID)]
				if c == nil {
					continue
				}
				delete(pending, string(r.ID))
				c.res = &r
			}
		}
	}
	want := 1
	if f.tool == "ask" {
		want = 2
	}
	if len(calls) != want {
		return fmt.Errorf("%d tools/call requests, want %d", len(calls), want)
	}
	for i, c := range calls {
		if c.res == nil || c.res.Result == nil {
			return fmt.Errorf("tools/call %d: no result", i+1)
		}
		if c.res.Result.ResultType == nil {
			return fmt.Errorf("tools/call %d: result without resultType", i+1)
		}
	}
	last := calls[len(calls)-1].res.Result
	if *last.ResultType != "complete" || len(last.Content) == 0 || last.Content[0].Text != f.want {
		return fmt.Errorf("last result: resultType %q, content %+v", *last.ResultType, last.Content)
	}
	if f.tool == "ask" {
		first, retry := calls[0].res.Result, calls[1].req.Params
		if *first.ResultType != "input_required" || len(first.InputRequests) != 1 {
			return fmt.Errorf("first leg: resultType %q, %d input requests", *first.ResultType, len(first.InputRequests))
		}
		for k, ir := range first.InputRequests {
			if ir.Method != "elicitation/create" {
				return fmt.Errorf("first leg: input request %q is %s", k, ir.Method)
			}
			if a := retry.InputResponses[k]; a.Action != "accept" || a.Content["name"] != answerName {
				return fmt.Errorf("retry: inputResponses[%q] = %+v", k, a)
			}
		}
		if first.RequestState == nil || retry.RequestState == nil || *retry.RequestState != *first.RequestState {
			return fmt.Errorf("retry does not echo the requestState")
		}
		if s.name == "roundtrip" {
			// Sealed by default: "v1." and base64url of key id[4], nonce[12],
			// AES-256-GCM ciphertext and tag[16], not the handler's plaintext.
			b64, ok := strings.CutPrefix(*first.RequestState, "v1.")
			tok, err := base64.RawURLEncoding.DecodeString(b64)
			if !ok || err != nil || len(tok) < 4+12+16+1 {
				return fmt.Errorf("requestState %q is not a sealed token", *first.RequestState)
			}
		}
	}
	return nil
}

// toolCallRequest returns the tools/call request s's client sends for
// echo(text) over HTTP, captured live: the handler benchmarks replay it.
func toolCallRequest(tb testing.TB, s subject, text string) (http.Header, []byte) {
	rt := &recordingTransport{next: newTransport()}
	c := httpCaller(tb, s, rt)
	if err := callWant(context.Background(), c, "echo", text, text); err != nil {
		tb.Fatal(err)
	}
	for _, m := range rt.log {
		rs, _ := rpcsOf(m)
		if m.request && len(rs) == 1 && rs[0].Method == "tools/call" {
			return m.header, m.body
		}
	}
	tb.Fatal("no tools/call captured")
	return nil, nil
}
