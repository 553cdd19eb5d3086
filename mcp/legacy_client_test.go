package mcp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// legacyClient is a minimal 2025-11-25 client over Streamable HTTP, for
// tests: initialize, then requests whose SSE response streams it reads,
// answering the server-to-client requests found there with answer.
type legacyClient struct {
	t    testing.TB
	url  string
	hc   *http.Client
	sid  string
	caps string
	// version is the revision the client asks for in initialize (empty:
	// 2025-11-25); it sends MCP-Protocol-Version only where its revision
	// has that header (2025-06-18 and later).
	version string
	answer  func(method string, params map[string]any) any
	quiet   bool // do not check the status of answers (the session may be gone)

	mu       sync.Mutex
	nextID   int
	notes    []map[string]any // notifications seen on response streams
	asked    []string         // methods of the server-to-client requests answered
	lastInit map[string]any   // the initialize result
}

// legacyAnswers answers server-to-client requests like standardAnswers
// answers input requests.
func legacyAnswers(method string, params map[string]any) any {
	return standardAnswers("", map[string]any{"method": method, "params": params})
}

// newLegacyClient initializes a session (caps is the capabilities JSON).
func newLegacyClient(t testing.TB, url, caps string) *legacyClient {
	t.Helper()
	return newLegacyClientAt(t, url, LegacyProtocolVersion, caps)
}

// newLegacyClientAt initializes a session asking for version.
func newLegacyClientAt(t testing.TB, url, version, caps string) *legacyClient {
	t.Helper()
	c := &legacyClient{t: t, url: url, hc: &http.Client{Timeout: 10 * time.Second}, caps: caps, answer: legacyAnswers, version: version}
	c.initialize()
	return c
}

// initialize opens the client's session (initialize, then
// notifications/initialized).
func (c *legacyClient) initialize() {
	t, version, caps := c.t, c.version, c.caps
	t.Helper()
	res, hdr := c.post(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"`+version+`","capabilities":`+caps+`,"clientInfo":{"name":"legacy-test","version":"1"}}}`, nil)
	if res["result"] == nil {
		t.Fatalf("initialize: %v", res)
	}
	c.lastInit = res["result"].(map[string]any)
	c.sid = hdr.Get("Mcp-Session-Id")
	if status := c.postRaw(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); status != http.StatusAccepted {
		t.Fatalf("notifications/initialized: status %d", status)
	}
}

// protocolVersion is the value of the client's MCP-Protocol-Version
// header, empty where its revision has none.
func (c *legacyClient) protocolVersion() string {
	switch {
	case c.version == "":
		return LegacyProtocolVersion
	case c.version < "2025-06-18":
		return ""
	}
	return c.version
}

func (c *legacyClient) headers(r *http.Request) {
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	if v := c.protocolVersion(); v != "" {
		r.Header.Set("MCP-Protocol-Version", v)
	}
	if c.sid != "" {
		r.Header.Set("Mcp-Session-Id", c.sid)
	}
}

// postRaw POSTs a message that gets no response (a notification or a
// response) and returns the status.
func (c *legacyClient) postRaw(body string) int {
	c.t.Helper()
	r, _ := http.NewRequest(http.MethodPost, c.url, strings.NewReader(body))
	c.headers(r)
	resp, err := c.hc.Do(r)
	if err != nil {
		c.t.Fatalf("POST: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// request sends a request and returns its response message.
func (c *legacyClient) request(method string, params string) map[string]any {
	c.t.Helper()
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	c.mu.Unlock()
	if params == "" {
		params = "{}"
	}
	res, _ := c.post(`{"jsonrpc":"2.0","id":`+itoa(id)+`,"method":"`+method+`","params":`+params+`}`, nil)
	return res
}

// post sends a request and reads its answer: a JSON body, or an SSE
// stream on which server requests are answered and notifications kept.
// With events, every SSE event id is recorded.
func (c *legacyClient) post(body string, events *[]string) (map[string]any, http.Header) {
	c.t.Helper()
	r, _ := http.NewRequest(http.MethodPost, c.url, strings.NewReader(body))
	c.headers(r)
	resp, err := c.hc.Do(r)
	if err != nil {
		c.t.Fatalf("POST: %v", err)
	}
	defer resp.Body.Close()
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		var v map[string]any
		b, _ := io.ReadAll(resp.Body)
		if err := json.Unmarshal(b, &v); err != nil {
			c.t.Fatalf("status %d, body %q: %v", resp.StatusCode, b, err)
		}
		return v, resp.Header
	}
	var req struct {
		ID any `json:"id"`
	}
	_ = json.Unmarshal([]byte(body), &req)
	v := c.readStream(resp.Body, req.ID, events)
	return v, resp.Header
}

// readStream reads SSE events until the response to id (nil when the
// stream ends first).
func (c *legacyClient) readStream(body io.Reader, id any, events *[]string) map[string]any {
	c.t.Helper()
	sc := bufio.NewScanner(body)
	sc.Buffer(nil, 8<<20)
	for sc.Scan() {
		line := sc.Text()
		if ev, ok := strings.CutPrefix(line, "id: "); ok && events != nil {
			*events = append(*events, ev)
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || strings.TrimSpace(data) == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			c.t.Fatalf("bad event %q: %v", data, err)
		}
		switch {
		case m["method"] != nil && m["id"] != nil:
			c.answerRequest(m)
		case m["method"] != nil:
			c.mu.Lock()
			c.notes = append(c.notes, m)
			c.mu.Unlock()
		case jsonEqual(m["id"], id):
			return m
		}
	}
	return nil
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

func (c *legacyClient) answerRequest(m map[string]any) {
	c.t.Helper()
	method := m["method"].(string)
	params, _ := m["params"].(map[string]any)
	c.mu.Lock()
	c.asked = append(c.asked, method)
	c.mu.Unlock()
	ans := c.answer(method, params)
	if ans == nil {
		return // no answer at all
	}
	id, _ := json.Marshal(m["id"])
	var body string
	if e, ok := ans.(*Error); ok {
		eb, _ := json.Marshal(e)
		body = `{"jsonrpc":"2.0","id":` + string(id) + `,"error":` + string(eb) + `}`
	} else {
		rb, _ := json.Marshal(ans)
		body = `{"jsonrpc":"2.0","id":` + string(id) + `,"result":` + string(rb) + `}`
	}
	if status := c.postRaw(body); status != http.StatusAccepted && !c.quiet {
		c.t.Errorf("answering %s: status %d", method, status)
	}
}

// get opens the session's GET stream (with lastEventID when not empty).
func (c *legacyClient) get(lastEventID string) *http.Response {
	c.t.Helper()
	r, _ := http.NewRequest(http.MethodGet, c.url, nil)
	r.Header.Set("Accept", "text/event-stream")
	if v := c.protocolVersion(); v != "" {
		r.Header.Set("MCP-Protocol-Version", v)
	}
	r.Header.Set("Mcp-Session-Id", c.sid)
	if lastEventID != "" {
		r.Header.Set("Last-Event-ID", lastEventID)
	}
	hc := &http.Client{}
	if c.hc.Transport != nil {
		hc.Transport = c.hc.Transport // a TLS test server's
	}
	resp, err := hc.Do(r)
	if err != nil {
		c.t.Fatalf("GET: %v", err)
	}
	return resp
}

func (c *legacyClient) delete() int {
	c.t.Helper()
	r, _ := http.NewRequest(http.MethodDelete, c.url, nil)
	r.Header.Set("Mcp-Session-Id", c.sid)
	resp, err := c.hc.Do(r)
	if err != nil {
		c.t.Fatalf("DELETE: %v", err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// sseReader reads the data events of a stream in the background.
type sseReader struct {
	msgs chan map[string]any
	ids  chan string
}

func readSSE(body io.ReadCloser) *sseReader {
	r := &sseReader{msgs: make(chan map[string]any, 64), ids: make(chan string, 64)}
	go func() {
		defer close(r.msgs)
		sc := bufio.NewScanner(body)
		for sc.Scan() {
			line := sc.Text()
			if id, ok := strings.CutPrefix(line, "id: "); ok {
				select {
				case r.ids <- id:
				default:
				}
			}
			if d, ok := strings.CutPrefix(line, "data: "); ok && strings.TrimSpace(d) != "" {
				var m map[string]any
				if json.Unmarshal([]byte(d), &m) == nil {
					r.msgs <- m
				}
			}
		}
	}()
	return r
}

func (r *sseReader) next(t testing.TB) map[string]any {
	t.Helper()
	select {
	case m, ok := <-r.msgs:
		if !ok {
			t.Fatal("stream ended")
		}
		return m
	case <-time.After(5 * time.Second):
		t.Fatal("timed out waiting for an event")
	}
	return nil
}
