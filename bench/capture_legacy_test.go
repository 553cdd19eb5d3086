package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
)

// Legacy captures prove that every subject of the legacy benchmarks is
// compared on a 2025-11-25 session. TestLegacyCaptures records, live:
//
//	legacy-http-toolcall-<subject>.txt  initialize, then a session tools/call echo over HTTP
//	legacy-http-elicit-<subject>.txt    initialize, then tools/call ask: the server's live
//	                                    elicitation/create on the POST's SSE stream, the
//	                                    client's answer, the result on the same stream
//	legacy-pipe-toolcall-<subject>.txt  initialize, then tools/call echo over the os.Pipe pair
//
// and checks it (checkLegacyCapture); with -update it writes them to
// testdata/, and TestCommittedLegacyCaptures checks the committed files
// with the same rules. Regenerate with
//
//	go test -run 'TestLegacyCaptures$' -update

var legacyFlows = []flow{
	{"legacy-http-toolcall", "echo", "hello"},
	{"legacy-http-elicit", "ask", askResult},
	{"legacy-pipe-toolcall", "echo", "hello"},
}

// streamRecorder is an http.RoundTripper that records each request when
// it is sent and each response when its headers arrive, filling in the
// body as it is read, so that an SSE response that stays open until the
// client has answered a question on another request neither blocks the
// recording nor is logged after what the client sent in between.
type streamRecorder struct {
	next http.RoundTripper
	mu   sync.Mutex
	log  []*message
}

func (t *streamRecorder) add(m *message) {
	t.mu.Lock()
	t.log = append(t.log, m)
	t.mu.Unlock()
}

func (t *streamRecorder) snapshot() []message {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]message, len(t.log))
	for i, m := range t.log {
		out[i] = *m
		out[i].body = slices.Clone(m.body)
	}
	return out
}

func (t *streamRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
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
	t.add(&message{request: true, start: req.Method + " " + req.URL.RequestURI(), header: req.Header.Clone(), body: body})
	resp, err := t.next.RoundTrip(r2)
	if err != nil {
		return nil, err
	}
	rh := resp.Header.Clone()
	rh.Del("Date")
	m := &message{start: resp.Status, header: rh}
	t.add(m)
	resp.Body = &teeBody{rc: resp.Body, t: t, m: m}
	return resp, nil
}

// teeBody appends what is read through it to its message's body.
type teeBody struct {
	rc io.ReadCloser
	t  *streamRecorder
	m  *message
}

func (b *teeBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	b.t.mu.Lock()
	b.m.body = append(b.m.body, p[:n]...)
	b.t.mu.Unlock()
	return n, err
}

func (b *teeBody) Close() error { return b.rc.Close() }

// captureLegacy runs f for s and returns what went over the wire up to
// the call's result.
func captureLegacy(tb testing.TB, s subject, f flow) []message {
	ctx := context.Background()
	if strings.HasPrefix(f.kind, "legacy-http-") {
		rt := &streamRecorder{next: newTransport()}
		c := httpCaller(tb, s, rt)
		if err := callWant(ctx, c, f.tool, "hello", f.want); err != nil {
			tb.Fatal(err)
		}
		return rt.snapshot()
	}
	l := &lineLog{}
	c := pipeCaller(tb, s, l.wrap(true), l.wrap(false))
	if err := callWant(ctx, c, f.tool, "hello", f.want); err != nil {
		tb.Fatal(err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.log)
}

// legacyRPC is what checkLegacyCapture reads of a JSON-RPC message.
type legacyRPC struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params *struct {
		ProtocolVersion string                     `json:"protocolVersion"`
		Name            string                     `json:"name"`
		Message         string                     `json:"message"`
		Meta            map[string]json.RawMessage `json:"_meta"`
	} `json:"params"`
	Result *struct {
		ProtocolVersion string  `json:"protocolVersion"`
		ResultType      *string `json:"resultType"`
		Content         json.RawMessage
		Action          string `json:"action"`
	} `json:"result"`
	Error json.RawMessage `json:"error"`
}

type legacyMessage struct {
	i   int
	msg message
	rpc legacyRPC
}

// legacyRPCs flattens msgs into their JSON-RPC messages (one per body,
// one per SSE event's data).
func legacyRPCs(msgs []message) ([]legacyMessage, error) {
	var out []legacyMessage
	for i, m := range msgs {
		raws := bodiesOf(m)
		for _, r := range raws {
			var v legacyRPC
			if err := json.Unmarshal(r, &v); err != nil {
				return nil, fmt.Errorf("message %d: %v: %s", i, err, r)
			}
			out = append(out, legacyMessage{i: i, msg: m, rpc: v})
		}
	}
	return out, nil
}

// checkLegacyCapture asserts a 2025-11-25 session: the first message is
// initialize asking for 2025-11-25 and answered in it, the client sends
// notifications/initialized, no request carries the 2026-07-28 _meta
// envelope or is server/discover; over HTTP the initialize response
// returns an Mcp-Session-Id that every later request carries, with
// MCP-Protocol-Version 2025-11-25; the tools/call result has no
// resultType. In the elicit flow the server sends elicitation/create
// on the tools/call's own SSE response before its result, and the
// client answers it (accept) in a request of its own.
func checkLegacyCapture(s subject, f flow, msgs []message) error {
	isHTTP := strings.HasPrefix(f.kind, "legacy-http-")
	rs, err := legacyRPCs(msgs)
	if err != nil {
		return err
	}
	if len(rs) == 0 || !rs[0].msg.request || rs[0].rpc.Method != "initialize" {
		return fmt.Errorf("the first message is not initialize")
	}
	if p := rs[0].rpc.Params; p == nil || p.ProtocolVersion != legacyVersion {
		return fmt.Errorf("initialize does not ask for %s", legacyVersion)
	}
	var (
		sessionID               string
		initialized, initAnswer bool
		call                    *legacyMessage
		result                  *legacyMessage
		elicit, answer          *legacyMessage
		initID                  = string(rs[0].rpc.ID)
		callID                  string
		elicitID                string
		answers                 = map[string]*legacyMessage{}
	)
	for k := range rs {
		r := &rs[k]
		m := r.msg
		if isHTTP && !m.request && !strings.HasPrefix(m.start, "200") && !strings.HasPrefix(m.start, "202") {
			return fmt.Errorf("message %d: status %s", r.i, m.start)
		}
		switch {
		case m.request && r.rpc.Method != "":
			if r.rpc.Method == "server/discover" {
				return fmt.Errorf("message %d: server/discover in a legacy session", r.i)
			}
			if r.rpc.Params != nil {
				if _, ok := r.rpc.Params.Meta[metaVersion]; ok {
					return fmt.Errorf("message %d: %s carries the 2026-07-28 _meta envelope", r.i, r.rpc.Method)
				}
			}
			if isHTTP && r.rpc.Method != "initialize" {
				if sessionID == "" || m.header.Get("Mcp-Session-Id") != sessionID {
					return fmt.Errorf("message %d: %s with Mcp-Session-Id %q, want %q", r.i, r.rpc.Method, m.header.Get("Mcp-Session-Id"), sessionID)
				}
				if v := m.header.Get("Mcp-Protocol-Version"); v != legacyVersion {
					return fmt.Errorf("message %d: %s: MCP-Protocol-Version %q", r.i, r.rpc.Method, v)
				}
			}
			switch r.rpc.Method {
			case "notifications/initialized":
				if !initAnswer {
					return fmt.Errorf("message %d: notifications/initialized before the initialize result", r.i)
				}
				initialized = true
			case "tools/call":
				if !initialized {
					return fmt.Errorf("message %d: tools/call before notifications/initialized", r.i)
				}
				if call != nil {
					return fmt.Errorf("message %d: a second tools/call", r.i)
				}
				if r.rpc.Params == nil || r.rpc.Params.Name != f.tool {
					return fmt.Errorf("message %d: tools/call of another tool", r.i)
				}
				call, callID = r, string(r.rpc.ID)
			}
		case m.request && len(r.rpc.ID) > 0 && r.rpc.Result != nil:
			answers[string(r.rpc.ID)] = r
		case !m.request && r.rpc.Method == "elicitation/create":
			if call == nil || result != nil {
				return fmt.Errorf("message %d: elicitation/create outside the call", r.i)
			}
			if isHTTP && (!strings.HasPrefix(m.header.Get("Content-Type"), "text/event-stream") || !bytes.Contains(call.msg.body, []byte(`"tools/call"`))) {
				return fmt.Errorf("message %d: elicitation/create not on an SSE response", r.i)
			}
			elicit, elicitID = r, string(r.rpc.ID)
		case !m.request && len(r.rpc.ID) > 0 && string(r.rpc.ID) == initID && !initAnswer:
			if r.rpc.Result == nil || r.rpc.Result.ProtocolVersion != legacyVersion {
				return fmt.Errorf("message %d: initialize not answered in %s", r.i, legacyVersion)
			}
			if isHTTP {
				if sessionID = m.header.Get("Mcp-Session-Id"); sessionID == "" {
					return fmt.Errorf("message %d: initialize response without Mcp-Session-Id", r.i)
				}
			}
			initAnswer = true
		case !m.request && call != nil && string(r.rpc.ID) == callID:
			result = r
		}
	}
	switch {
	case !initAnswer:
		return fmt.Errorf("no initialize result")
	case !initialized:
		return fmt.Errorf("no notifications/initialized")
	case call == nil:
		return fmt.Errorf("no tools/call")
	case result == nil || result.rpc.Result == nil:
		return fmt.Errorf("no tools/call result")
	case result.rpc.Result.ResultType != nil:
		return fmt.Errorf("the tools/call result carries resultType (a 2026-07-28 field)")
	}
	var content []struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(result.rpc.Result.Content, &content); err != nil || len(content) == 0 || content[0].Text != f.want {
		return fmt.Errorf("tools/call result %s, want %q", result.rpc.Result.Content, f.want)
	}
	if f.tool == "ask" {
		answer = answers[elicitID]
		switch {
		case elicit == nil:
			return fmt.Errorf("no live elicitation/create")
		case elicit.rpc.Params == nil || elicit.rpc.Params.Message != askMessage:
			return fmt.Errorf("elicitation/create without the message %q", askMessage)
		case answer == nil || answer.rpc.Result.Action != "accept":
			return fmt.Errorf("no accepting answer to elicitation/create %s", elicitID)
		case isHTTP && elicit.msg.body == nil:
			return fmt.Errorf("elicitation/create outside a response")
		}
		if isHTTP && !bytes.Equal(elicit.msg.body, result.msg.body) {
			return fmt.Errorf("the elicitation/create and the result are on different responses")
		}
	}
	return nil
}

// TestLegacyCaptures captures every legacy flow of every subject live and
// checks it; with -update it rewrites testdata/.
func TestLegacyCaptures(t *testing.T) {
	liveCaptures(t, legacySubjects, legacyFlows, captureLegacy, checkLegacyCapture)
}

// TestCommittedLegacyCaptures checks the legacy captures in testdata/.
func TestCommittedLegacyCaptures(t *testing.T) {
	committedCaptures(t, legacySubjects, legacyFlows, "legacy-http-", checkLegacyCapture)
}
