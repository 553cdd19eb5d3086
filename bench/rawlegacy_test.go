package bench

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
)

// The raw 2025-11-25 baseline: a hand-written stateful server and client
// exchanging the same session messages as the legacy subjects, encoded
// and decoded with encoding/json into fixed structs, with no validation
// or dispatch beyond what the exchange needs:
//
//   - initialize opens a session (a random Mcp-Session-Id in a map under
//     one mutex); notifications/initialized is answered 202; every later
//     request must carry a known session and MCP-Protocol-Version;
//   - tools/call echo is answered with one application/json response;
//   - tools/call ask answers on an SSE stream: a priming event (an id
//     and an empty data line, as the 2025-11-25 spec says a server
//     SHOULD send for resumability) in the same write and flush as the
//     live elicitation/create; the client POSTs the answer (202), which
//     the server hands to the waiting call through a channel; the result
//     follows as the stream's last event;
//   - on the pipe: the same messages as lines, the loop answering in turn.
//
// It is the floor the 2025 targets of issue 22 compare roundtrip with
// (LegacyElicit, LegacyPipe, LoadLegacy in docs/performance.md).

// rawMsg is any JSON-RPC message of the exchange.
type rawMsg struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *rawError       `json:"error,omitempty"`
}

type rawCallParams struct {
	Name      string `json:"name"`
	Arguments struct {
		Text string `json:"text"`
	} `json:"arguments"`
}

type rawLegacyResult struct {
	Content []rawContent `json:"content"`
	IsError bool         `json:"isError,omitempty"`
}

type rawInitResult struct {
	ProtocolVersion string `json:"protocolVersion"`
	Capabilities    struct {
		Tools struct{} `json:"tools"`
	} `json:"capabilities"`
	ServerInfo rawImpl `json:"serverInfo"`
}

var (
	rawInitParams = json.RawMessage(`{"protocolVersion":"` + legacyVersion + `","capabilities":{"elicitation":{"form":{}}},"clientInfo":{"name":"bench-client","version":"1"}}`)
	rawElicit     = json.RawMessage(`{"mode":"form","message":"` + askMessage + `","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}}`)
	rawAnswer     = json.RawMessage(`{"action":"accept","content":{"name":"` + answerName + `"}}`)
)

// rawLegacyAnswer is the answer the server's ask tool reads.
type rawLegacyAnswer struct {
	Action  string         `json:"action"`
	Content rawNameContent `json:"content"`
}

// rawLegacyServe answers a request that needs no question: initialize or
// tools/call echo. ok is false for tools/call ask.
func rawLegacyServe(m *rawMsg) (res *rawMsg, ok bool) {
	res = &rawMsg{JSONRPC: "2.0", ID: m.ID}
	var v any
	switch m.Method {
	case "initialize":
		ir := rawInitResult{ProtocolVersion: legacyVersion, ServerInfo: rawImpl{Name: "bench", Version: "1"}}
		v = &ir
	case "tools/call":
		var p rawCallParams
		if err := json.Unmarshal(m.Params, &p); err != nil {
			res.Error = &rawError{Code: -32602, Message: err.Error()}
			return res, true
		}
		switch p.Name {
		case "echo":
			v = &rawLegacyResult{Content: []rawContent{{Type: "text", Text: p.Arguments.Text}}}
		case "ask":
			return nil, false
		default:
			res.Error = &rawError{Code: -32602, Message: "Unknown tool"}
			return res, true
		}
	default:
		res.Error = &rawError{Code: -32601, Message: "Method not found"}
		return res, true
	}
	res.Result, _ = json.Marshal(v)
	return res, true
}

// rawAskResult is the result of ask once answered.
func rawAskResult(id json.RawMessage, answer json.RawMessage) *rawMsg {
	var a rawLegacyAnswer
	res := &rawMsg{JSONRPC: "2.0", ID: id}
	if err := json.Unmarshal(answer, &a); err != nil || a.Action != "accept" {
		res.Result, _ = json.Marshal(&rawLegacyResult{Content: []rawContent{{Type: "text", Text: "declined"}}, IsError: true})
		return res
	}
	res.Result, _ = json.Marshal(&rawLegacyResult{Content: []rawContent{{Type: "text", Text: "hello " + a.Content.Name}}})
	return res
}

// rawLegacySession is one session: the questions in flight by id.
type rawLegacySession struct {
	mu      sync.Mutex
	ids     int64
	pending map[string]chan json.RawMessage
}

type rawLegacyHandler struct {
	mu       sync.Mutex
	sessions map[string]*rawLegacySession
}

func newRawLegacyHandler() *rawLegacyHandler {
	return &rawLegacyHandler{sessions: map[string]*rawLegacySession{}}
}

func (h *rawLegacyHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
		return
	}
	var m rawMsg
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&m); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if m.Method == "initialize" {
		var b [16]byte
		rand.Read(b[:])
		id := hex.EncodeToString(b[:])
		h.mu.Lock()
		h.sessions[id] = &rawLegacySession{pending: map[string]chan json.RawMessage{}}
		h.mu.Unlock()
		res, _ := rawLegacyServe(&m)
		w.Header()["Mcp-Session-Id"] = []string{id}
		w.Header()["Content-Type"] = []string{"application/json"}
		json.NewEncoder(w).Encode(res)
		return
	}
	h.mu.Lock()
	s := h.sessions[r.Header.Get("Mcp-Session-Id")]
	h.mu.Unlock()
	if s == nil {
		http.Error(w, "Session not found", http.StatusNotFound)
		return
	}
	if r.Header.Get("Mcp-Protocol-Version") != legacyVersion {
		http.Error(w, "Unsupported protocol version", http.StatusBadRequest)
		return
	}
	switch {
	case m.Method == "" && len(m.ID) > 0: // an answer to a question
		s.mu.Lock()
		ch := s.pending[string(m.ID)]
		delete(s.pending, string(m.ID))
		s.mu.Unlock()
		if ch != nil {
			ch <- m.Result // buffered: never blocks
		}
		w.WriteHeader(http.StatusAccepted)
		return
	case len(m.ID) == 0: // a notification
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if res, ok := rawLegacyServe(&m); ok {
		w.Header()["Content-Type"] = []string{"application/json"}
		json.NewEncoder(w).Encode(res)
		return
	}
	// ask: the question live on this POST's SSE stream.
	s.mu.Lock()
	s.ids++
	qid := strconv.FormatInt(s.ids, 10)
	ch := make(chan json.RawMessage, 1)
	s.pending[qid] = ch
	s.mu.Unlock()
	q, _ := json.Marshal(&rawMsg{JSONRPC: "2.0", ID: json.RawMessage(qid), Method: "elicitation/create", Params: rawElicit})
	w.Header()["Content-Type"] = []string{"text/event-stream"}
	w.Header()["Cache-Control"] = []string{"no-cache"}
	buf := make([]byte, 0, 256)
	buf = append(buf, "id: 0\ndata: \n\nevent: message\nid: 1\ndata: "...)
	buf = append(buf, q...)
	buf = append(buf, "\n\n"...)
	w.Write(buf)
	http.NewResponseController(w).Flush()
	var answer json.RawMessage
	select {
	case answer = <-ch:
	case <-r.Context().Done():
		s.mu.Lock()
		delete(s.pending, qid)
		s.mu.Unlock()
		return
	}
	out, _ := json.Marshal(rawAskResult(m.ID, answer))
	buf = append(buf[:0], "event: message\nid: 2\ndata: "...)
	buf = append(buf, out...)
	buf = append(buf, "\n\n"...)
	w.Write(buf)
}

// rawLegacyHTTPCaller is the hand-written session client.
type rawLegacyHTTPCaller struct {
	url     string
	hc      *http.Client
	session string
	ids     atomic.Int64
}

func (c *rawLegacyHTTPCaller) post(ctx context.Context, m *rawMsg) (*http.Response, error) {
	body, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	r.Header["Content-Type"] = []string{"application/json"}
	r.Header["Accept"] = []string{"application/json, text/event-stream"}
	if c.session != "" {
		r.Header["Mcp-Session-Id"] = []string{c.session}
		r.Header["Mcp-Protocol-Version"] = []string{legacyVersion}
	}
	resp, err := c.hc.Do(r)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusAccepted {
		resp.Body.Close()
		return nil, fmt.Errorf("%s: status %d", m.Method, resp.StatusCode)
	}
	return resp, nil
}

// send posts a message that is answered 202 (a notification or an answer).
func (c *rawLegacyHTTPCaller) send(ctx context.Context, m *rawMsg) error {
	resp, err := c.post(ctx, m)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		return fmt.Errorf("status %d, want 202", resp.StatusCode)
	}
	return nil
}

func rawLegacyConnectHTTP(tb testing.TB, url string, hc *http.Client) caller {
	c := &rawLegacyHTTPCaller{url: url, hc: hc}
	ctx := context.Background()
	resp, err := c.post(ctx, &rawMsg{JSONRPC: "2.0", ID: json.RawMessage(strconv.FormatInt(c.ids.Add(1), 10)), Method: "initialize", Params: rawInitParams})
	if err != nil {
		tb.Fatal(err)
	}
	var m rawMsg
	err = json.NewDecoder(resp.Body).Decode(&m)
	resp.Body.Close()
	var ir rawInitResult
	if err == nil {
		err = json.Unmarshal(m.Result, &ir)
	}
	if err != nil || ir.ProtocolVersion != legacyVersion {
		tb.Fatalf("initialize: %v %s", err, m.Result)
	}
	if c.session = resp.Header.Get("Mcp-Session-Id"); c.session == "" {
		tb.Fatal("initialize: no Mcp-Session-Id")
	}
	if err := c.send(ctx, &rawMsg{JSONRPC: "2.0", Method: "notifications/initialized"}); err != nil {
		tb.Fatal(err)
	}
	return c
}

// legacyText is the text of a 2025 tools/call result.
func legacyText(m *rawMsg) (string, error) {
	if m.Error != nil {
		return "", fmt.Errorf("error %d: %s", m.Error.Code, m.Error.Message)
	}
	var r rawLegacyResult
	if err := json.Unmarshal(m.Result, &r); err != nil {
		return "", err
	}
	if r.IsError || len(r.Content) == 0 {
		return "", errorResult(r)
	}
	return r.Content[0].Text, nil
}

func (c *rawLegacyHTTPCaller) call(ctx context.Context, tool, text string) (string, error) {
	id := json.RawMessage(strconv.FormatInt(c.ids.Add(1), 10))
	p, _ := json.Marshal(map[string]any{"name": tool, "arguments": map[string]string{"text": text}})
	resp, err := c.post(ctx, &rawMsg{JSONRPC: "2.0", ID: id, Method: "tools/call", Params: p})
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.Header.Get("Content-Type") == "application/json" {
		var m rawMsg
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
			return "", err
		}
		return legacyText(&m)
	}
	// An SSE stream: questions to answer, then the result.
	br := bufio.NewReaderSize(resp.Body, 4<<10)
	var data []byte
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return "", fmt.Errorf("stream ended before the result: %w", err)
		}
		line = bytes.TrimRight(line, "\r\n")
		if d, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			data = append(data, bytes.TrimPrefix(d, []byte(" "))...)
			continue
		}
		if len(line) != 0 || len(data) == 0 {
			continue // another field, or the end of an event without data (priming)
		}
		var m rawMsg
		err = json.Unmarshal(data, &m)
		data = data[:0]
		if err != nil {
			return "", err
		}
		switch {
		case m.Method == "elicitation/create":
			if err := c.send(ctx, &rawMsg{JSONRPC: "2.0", ID: m.ID, Result: rawAnswer}); err != nil {
				return "", err
			}
		case m.Method == "" && bytes.Equal(m.ID, id):
			return legacyText(&m)
		}
	}
}

func (c *rawLegacyHTTPCaller) close() error { c.hc.CloseIdleConnections(); return nil }

// The pipe: the server loop answers line by line; ask writes its
// question and reads the next line as the answer.
func rawLegacyServePipe(tb testing.TB, r io.ReadCloser, w io.WriteCloser) {
	go func() {
		defer w.Close()
		br := bufio.NewReaderSize(r, 64<<10)
		write := func(m *rawMsg) bool {
			out, err := json.Marshal(m)
			if err != nil {
				return false
			}
			_, err = w.Write(append(out, '\n'))
			return err == nil
		}
		for {
			line, err := br.ReadSlice('\n')
			if err != nil {
				return
			}
			var m rawMsg
			if err := json.Unmarshal(line, &m); err != nil {
				return
			}
			if len(m.ID) == 0 || m.Method == "" {
				continue // a notification, or a stray answer
			}
			res, ok := rawLegacyServe(&m)
			if !ok {
				if !write(&rawMsg{JSONRPC: "2.0", ID: json.RawMessage("1"), Method: "elicitation/create", Params: rawElicit}) {
					return
				}
				line, err := br.ReadSlice('\n')
				if err != nil {
					return
				}
				var a rawMsg
				if err := json.Unmarshal(line, &a); err != nil {
					return
				}
				res = rawAskResult(m.ID, a.Result)
			}
			if !write(res) {
				return
			}
		}
	}()
}

type rawLegacyPipeCaller struct {
	mu  sync.Mutex
	w   io.WriteCloser
	r   *bufio.Reader
	rc  io.Closer
	ids int64
}

func (c *rawLegacyPipeCaller) write(m *rawMsg) error {
	line, err := json.Marshal(m)
	if err != nil {
		return err
	}
	_, err = c.w.Write(append(line, '\n'))
	return err
}

// roundTrip writes m and reads lines until the response to it, answering
// questions on the way.
func (c *rawLegacyPipeCaller) roundTrip(m *rawMsg) (*rawMsg, error) {
	if err := c.write(m); err != nil {
		return nil, err
	}
	for {
		in, err := c.r.ReadSlice('\n')
		if err != nil {
			return nil, err
		}
		var res rawMsg
		if err := json.Unmarshal(in, &res); err != nil {
			return nil, err
		}
		switch {
		case res.Method == "elicitation/create":
			if err := c.write(&rawMsg{JSONRPC: "2.0", ID: res.ID, Result: rawAnswer}); err != nil {
				return nil, err
			}
		case res.Method == "" && bytes.Equal(res.ID, m.ID):
			return &res, nil
		}
	}
}

func (c *rawLegacyPipeCaller) call(ctx context.Context, tool, text string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ids++
	p, _ := json.Marshal(map[string]any{"name": tool, "arguments": map[string]string{"text": text}})
	res, err := c.roundTrip(&rawMsg{JSONRPC: "2.0", ID: json.RawMessage(strconv.FormatInt(c.ids, 10)), Method: "tools/call", Params: p})
	if err != nil {
		return "", err
	}
	return legacyText(res)
}

func (c *rawLegacyPipeCaller) close() error { return errors.Join(c.w.Close(), c.rc.Close()) }

func rawLegacyConnectPipe(tb testing.TB, r io.ReadCloser, w io.WriteCloser) caller {
	c := &rawLegacyPipeCaller{w: w, r: bufio.NewReaderSize(r, 64<<10), rc: r, ids: 1}
	res, err := c.roundTrip(&rawMsg{JSONRPC: "2.0", ID: json.RawMessage("1"), Method: "initialize", Params: rawInitParams})
	if err != nil {
		tb.Fatal(err)
	}
	var ir rawInitResult
	if err := json.Unmarshal(res.Result, &ir); err != nil || ir.ProtocolVersion != legacyVersion {
		tb.Fatalf("initialize: %v %s", err, res.Result)
	}
	if err := c.write(&rawMsg{JSONRPC: "2.0", Method: "notifications/initialized"}); err != nil {
		tb.Fatal(err)
	}
	return c
}

var rawLegacy = subject{
	name:       "raw",
	note:       "a hand-written stateful 2025-11-25 server and client: net/http, a session map, the live question on the POST's SSE stream (priming event in the same write), encoding/json into fixed structs; a bare line loop on the pipe",
	handler:    func(tb testing.TB) http.Handler { return newRawLegacyHandler() },
	httpClient: rawLegacyConnectHTTP,
	servePipe:  rawLegacyServePipe,
	pipeClient: rawLegacyConnectPipe,
}
