package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// JSON-RPC batches: answered on a 2025-03-26 session, refused everywhere
// else.

// postBatch POSTs body on the client's session. A JSON answer is returned
// as is; an SSE answer is read to its end, the server's requests on it
// answered, its notifications kept in notes, and the data of its last
// event returned.
func (c *legacyClient) postBatch(body string) (status int, ct string, answer []byte, notes []map[string]any) {
	c.t.Helper()
	r, _ := http.NewRequest(http.MethodPost, c.url, strings.NewReader(body))
	c.headers(r)
	resp, err := c.hc.Do(r)
	if err != nil {
		c.t.Fatalf("POST: %v", err)
	}
	defer resp.Body.Close()
	ct = resp.Header.Get("Content-Type")
	if !strings.HasPrefix(ct, "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, ct, b, nil
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 8<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || strings.TrimSpace(data) == "" {
			continue
		}
		answer = []byte(data)
		var m map[string]any
		if json.Unmarshal(answer, &m) != nil {
			continue // the batch's answer: an array
		}
		if m["id"] != nil {
			c.answerRequest(m)
		} else {
			notes = append(notes, m)
		}
	}
	return resp.StatusCode, ct, answer, notes
}

// batchAnswer decodes a batch's answer: an array of responses.
func batchAnswer(t testing.TB, b []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("not a batch answer: %s (%v)", b, err)
	}
	return out
}

// slowServer is richServer with a tool that waits to be cancelled (each
// start is announced on started) and one that echoes its arguments.
func slowServer(t testing.TB) (*Server, chan struct{}) {
	s := richServer(t)
	started := make(chan struct{}, 16)
	s.AddTool(&Tool{Name: "wait", Description: "waits until cancelled", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
			started <- struct{}{}
			<-ctx.Done()
			return nil, ctx.Err()
		})
	s.AddTool(&Tool{Name: "echo", Description: "echoes", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
			return TextResult(string(r.Arguments)), nil
		})
	return s, started
}

func TestABatchOn20250326IsAnsweredWithABatchOverHTTP(t *testing.T) {
	t.Parallel()
	s, _ := slowServer(t)
	ts, _ := legacyServer(t, s, nil)
	c := newLegacyClientAt(t, ts.URL, "2025-03-26", legacyCaps)

	// Requests and a notification: one response per request, in order.
	status, ct, b, _ := c.postBatch(`[{"jsonrpc":"2.0","id":1,"method":"ping"},` +
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}},` +
		`{"jsonrpc":"2.0","id":"two","method":"tools/call","params":{"name":"echo","arguments":{"x":1}}},` +
		`{"jsonrpc":"2.0","id":3,"method":"tools/list"}]`)
	if status != http.StatusOK || !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("status %d, %s: %s", status, ct, b)
	}
	got := batchAnswer(t, b)
	if len(got) != 3 || got[0]["id"] != 1.0 || got[1]["id"] != "two" || got[2]["id"] != 3.0 {
		t.Fatalf("answer %s", b)
	}
	if text(t, got[1]) != `{"x":1}` || result(t, got[2])["tools"] == nil {
		t.Errorf("answer %s", b)
	}

	// Notifications only: 202, no body.
	if status, _, b, _ := c.postBatch(`[{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}]`); status != http.StatusAccepted || len(b) != 0 {
		t.Errorf("notifications only: %d %s", status, b)
	}

	// Malformed elements and initialize get their own errors.
	status, _, b, _ = c.postBatch(`[1,{"jsonrpc":"2.0","id":5,"method":"initialize","params":{}},{"jsonrpc":"2.0","id":6,"method":"nope"}]`)
	got = batchAnswer(t, b)
	if status != http.StatusOK || len(got) != 3 || errorCode(t, got[0]) != CodeInvalidRequest || errorCode(t, got[1]) != CodeInvalidRequest ||
		errorCode(t, got[2]) != CodeMethodNotFound || got[1]["id"] != 5.0 {
		t.Errorf("bad elements: %d %s", status, b)
	}

	// An empty batch, and one over the bound, are invalid requests.
	over := "[" + strings.Repeat(`{"jsonrpc":"2.0","method":"notifications/initialized"},`, maxBatchMessages) + `{"jsonrpc":"2.0","id":1,"method":"ping"}]`
	for name, body := range map[string]string{"empty": `[]`, "over the bound": over, "malformed": `[{"jsonrpc":"2.0",`} {
		status, _, b, _ := c.postBatch(body)
		var v map[string]any
		if json.Unmarshal(b, &v) != nil || status != http.StatusBadRequest || (errorCode(t, v) != CodeInvalidRequest && name != "malformed") {
			t.Errorf("%s: %d %s", name, status, b)
		}
	}
}

func TestABatchedRequestCanNotifyAndAskOnTheBatchStream(t *testing.T) {
	t.Parallel()
	s, _ := slowServer(t)
	ts, _ := legacyServer(t, s, nil)
	c := newLegacyClientAt(t, ts.URL, "2025-03-26", legacyCaps)
	status, ct, b, notes := c.postBatch(`[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"rich","arguments":{},"_meta":{"progressToken":"p"}}},` +
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ask-sampling","arguments":{}}}]`)
	if status != http.StatusOK || !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("status %d, %s", status, ct)
	}
	got := batchAnswer(t, b)
	if len(got) != 2 || got[0]["id"] != 1.0 || text(t, got[1]) != "a haiku | file:///work" {
		t.Fatalf("answer %s", b)
	}
	if strings.Join(c.asked, ",") != "sampling/createMessage,roots/list" {
		t.Errorf("asked %v", c.asked)
	}
	var progress bool
	for _, n := range notes {
		if n["method"] == notificationProgress {
			progress = true
			checkShape(t, "2025-03-26", "ProgressParams", n["params"], "notifications/progress")
		}
	}
	if !progress {
		t.Errorf("no progress on the batch stream: %v", notes)
	}
}

func TestACancelledRequestOfABatchIsLeftOutOfItsAnswer(t *testing.T) {
	t.Parallel()
	s, started := slowServer(t)
	c := newStdioRevClient(t, s, "2025-03-26", `{}`)
	c.c.send(`[{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"wait","arguments":{}}},{"jsonrpc":"2.0","id":8,"method":"ping"}]`)
	<-started
	c.c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`)
	select {
	case l := <-c.c.lines:
		got := batchAnswer(t, l)
		if len(got) != 1 || got[0]["id"] != 8.0 {
			t.Errorf("answer %s", l)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no answer to the batch")
	}
}

func TestABatchOn20250326IsAnsweredWithABatchOnStdio(t *testing.T) {
	t.Parallel()
	s, _ := slowServer(t)
	c := newStdioRevClient(t, s, "2025-03-26", legacyCaps)
	next := func() []byte {
		t.Helper()
		select {
		case l := <-c.c.lines:
			return l
		case <-time.After(5 * time.Second):
			t.Fatal("no answer")
		}
		return nil
	}
	c.c.send(`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"y":2}}}]`)
	got := batchAnswer(t, next())
	if len(got) != 2 || got[0]["id"] != 1.0 || text(t, got[1]) != `{"y":2}` {
		t.Fatalf("answer %v", got)
	}
	// A batch of notifications gets no line; the next request's answer
	// comes first.
	c.c.send(`[{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}]`)
	c.c.send(`{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	var v map[string]any
	if err := json.Unmarshal(next(), &v); err != nil || v["id"] != 3.0 {
		t.Fatalf("after a notification batch: %v %v", v, err)
	}
	// A request that asks: the question is a line of its own, answered by
	// a batch holding the response (which gets no answer itself).
	c.c.send(`[{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"ask-sampling","arguments":{}}}]`)
	for asked := 0; ; {
		l := next()
		if strings.HasPrefix(string(l), "[") {
			got := batchAnswer(t, l)
			if len(got) != 1 || text(t, got[0]) != "a haiku | file:///work" || asked != 2 {
				t.Fatalf("answer %s after %d questions", l, asked)
			}
			break
		}
		var q map[string]any
		_ = json.Unmarshal(l, &q)
		asked++
		res, _ := json.Marshal(legacyAnswers(q["method"].(string), nil))
		rid, _ := json.Marshal(q["id"])
		c.c.send(`[{"jsonrpc":"2.0","id":` + string(rid) + `,"result":` + string(res) + `}]`)
	}
	// Bad batches.
	for name, line := range map[string]string{"empty": `[]`, "initialize": `[{"jsonrpc":"2.0","id":9,"method":"initialize","params":{}}]`} {
		c.c.send(line)
		l := next()
		var code float64
		if strings.HasPrefix(string(l), "[") {
			code = batchAnswer(t, l)[0]["error"].(map[string]any)["code"].(float64)
		} else {
			_ = json.Unmarshal(l, &v)
			code = v["error"].(map[string]any)["code"].(float64)
		}
		if int(code) != CodeInvalidRequest {
			t.Errorf("%s: %s", name, l)
		}
	}
}

func TestBatchesAreRefusedWhereTheRevisionHasNone(t *testing.T) {
	t.Parallel()
	const batch = `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`
	refused := func(t *testing.T, b []byte, rev string) {
		t.Helper()
		var v map[string]any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("answer %s: %v", b, err)
		}
		msg, _ := v["error"].(map[string]any)["message"].(string)
		if errorCode(t, v) != CodeInvalidRequest || !strings.Contains(msg, "protocol revision "+rev+" has no JSON-RPC batches") {
			t.Errorf("answer %s", b)
		}
	}
	for _, rev := range []string{"2025-11-25", "2025-06-18", "2024-11-05"} {
		t.Run(rev+"/http", func(t *testing.T) {
			ts, _ := legacyServer(t, newTestServer(t, nil), nil)
			c := newLegacyClientAt(t, ts.URL, rev, `{}`)
			status, _, b, _ := c.postBatch(batch)
			if status != http.StatusBadRequest {
				t.Errorf("status %d", status)
			}
			refused(t, b, rev)
		})
		t.Run(rev+"/stdio", func(t *testing.T) {
			c := newStdioRevClient(t, newTestServer(t, nil), rev, `{}`)
			c.c.send(batch)
			refused(t, <-c.c.lines, rev)
		})
	}
	t.Run(LatestProtocolVersion+"/http", func(t *testing.T) {
		res := doHTTP(t, NewHTTPHandler(newTestServer(t, nil), nil), batch, http.Header{"Content-Type": {"application/json"}})
		if res.status != http.StatusBadRequest {
			t.Errorf("status %d", res.status)
		}
		refused(t, res.body, LatestProtocolVersion)
	})
	t.Run(LatestProtocolVersion+"/stdio", func(t *testing.T) {
		c := newStreamClient(t, newTestServer(t, nil))
		c.send(batch)
		refused(t, <-c.lines, LatestProtocolVersion)
	})
	t.Run("legacy disabled", func(t *testing.T) {
		s := NewServer(Implementation{Name: "m", Version: "1"}, &ServerOptions{DisableLegacy: true})
		res := doHTTP(t, NewHTTPHandler(s, nil), batch, http.Header{"Content-Type": {"application/json"}})
		refused(t, res.body, LatestProtocolVersion)
	})
}

func TestAStatelessBatchIsServedAtTheRevisionItsHeaderNames(t *testing.T) {
	t.Parallel()
	s, _ := slowServer(t)
	h := NewHTTPHandler(s, &HTTPOptions{Legacy: LegacyHTTPOptions{Stateless: true}})
	const batch = `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{}}}]`
	hdr := func(v string) http.Header {
		return http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json"}, "Mcp-Protocol-Version": {v}}
	}
	res := doHTTP(t, h, batch, hdr("2025-03-26"))
	if res.status != http.StatusOK || len(batchAnswer(t, res.body)) != 2 {
		t.Errorf("2025-03-26: %d %s", res.status, res.body)
	}
	res = doHTTP(t, h, batch, hdr("2025-06-18"))
	if res.status != http.StatusBadRequest || !strings.Contains(string(res.body), "protocol revision 2025-06-18 has no JSON-RPC batches") {
		t.Errorf("2025-06-18: %d %s", res.status, res.body)
	}
	// Sessionful, a legacy header without a session is the usual 400.
	res = doHTTP(t, NewHTTPHandler(s, nil), batch, hdr("2025-03-26"))
	if res.status != http.StatusBadRequest || !strings.Contains(string(res.body), "Mcp-Session-Id header is required") {
		t.Errorf("no session: %d %s", res.status, res.body)
	}
}
