package tasks_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/roundtrip-mcp/roundtrip/mcp"
	"github.com/roundtrip-mcp/roundtrip/mcp/tasks"
)

// The server side of 2025-11-25 tasks: our client (tasks.EnableClient)
// against our server (tasks.Enable) on loopback HTTP, every message of
// both directions checked against the 2025-11-25 schema.

// wireLog records the JSON-RPC messages of an HTTP handler's exchanges.
type wireLog struct {
	mu   sync.Mutex
	msgs []wireMsg
}

type wireMsg struct {
	fromClient bool
	raw        []byte
}

func (l *wireLog) add(fromClient bool, raw []byte) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return
	}
	l.mu.Lock()
	l.msgs = append(l.msgs, wireMsg{fromClient, append([]byte(nil), raw...)})
	l.mu.Unlock()
}

type recordingWriter struct {
	http.ResponseWriter
	buf bytes.Buffer
}

func (w *recordingWriter) Write(b []byte) (int, error) {
	w.buf.Write(b)
	return w.ResponseWriter.Write(b)
}

func (w *recordingWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (l *wireLog) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		l.add(true, body)
		rw := &recordingWriter{ResponseWriter: w}
		h.ServeHTTP(rw, r)
		out := rw.buf.Bytes()
		if strings.HasPrefix(rw.Header().Get("Content-Type"), "text/event-stream") {
			sc := bufio.NewScanner(bytes.NewReader(out))
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				if d, ok := strings.CutPrefix(sc.Text(), "data:"); ok {
					l.add(false, []byte(d))
				}
			}
			return
		}
		l.add(false, out)
	})
}

// resultDefs are the schema definitions of the results of the requests
// a client sends here.
var resultDefs = map[string]string{
	"initialize":   "InitializeResult",
	"tools/list":   "ListToolsResult",
	"tools/call":   "CallToolResult",
	"tasks/get":    "GetTaskResult",
	"tasks/result": "CallToolResult",
	"tasks/list":   "ListTasksResult",
	"tasks/cancel": "CancelTaskResult",
}

// check validates every recorded message against the 2025-11-25 schema
// and returns the methods the client requested, in order.
func (l *wireLog) check(t *testing.T) []string {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	methodOf := map[string]string{} // id of a client request -> method
	var methods []string
	for _, m := range l.msgs {
		var v struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(m.raw, &v); err != nil {
			t.Errorf("not a JSON-RPC message: %q", m.raw)
			continue
		}
		switch {
		case v.Method != "" && v.ID == nil:
			check2025(t, "JSONRPCNotification", m.raw)
			if m.fromClient {
				methods = append(methods, v.Method)
			} else if v.Method == "notifications/tasks/status" {
				check2025(t, "TaskStatusNotification", m.raw)
			}
		case v.Method != "" && m.fromClient:
			methods = append(methods, v.Method)
			methodOf[string(v.ID)] = v.Method
			def := requestDefs[v.Method]
			if v.Method == "tasks/list" {
				def = "ListTasksRequest"
			}
			if def == "" {
				t.Errorf("unexpected request %s", m.raw)
				continue
			}
			check2025(t, def, m.raw)
		case v.Method != "": // a live request of the server
			if v.Method != "elicitation/create" {
				t.Errorf("unexpected server request %s", m.raw)
				continue
			}
			check2025(t, "ElicitRequest", m.raw)
		case v.Error != nil:
			check2025(t, "JSONRPCErrorResponse", m.raw)
		case m.fromClient: // the answer to a live request
			check2025(t, "JSONRPCResultResponse", m.raw)
			check2025(t, "ElicitResult", v.Result)
		default:
			check2025(t, "JSONRPCResultResponse", m.raw)
			method := methodOf[string(v.ID)]
			def := resultDefs[method]
			if method == "tools/call" && bytes.Contains(v.Result, []byte(`"task":{`)) && !bytes.Contains(v.Result, []byte(`"content"`)) {
				def = "CreateTaskResult"
			}
			if def == "" {
				t.Errorf("result of an unknown request: %s", m.raw)
				continue
			}
			check2025(t, def, v.Result)
		}
	}
	return methods
}

// legacyTaskServer is a server with tasks enabled and four tools: "ask"
// (Required) elicits a name and answers with it; "job" (Optional) waits
// for release or its end; "quick" (Optional) answers at once; "plain"
// has no task support.
func legacyTaskServer(t *testing.T) (h http.Handler, log *wireLog, release chan string, stopped chan error) {
	t.Helper()
	s := NewServer(Implementation{Name: "tasks", Version: "1"}, nil)
	rt := tasks.Enable(s, &tasks.Options{PollInterval: 5 * time.Millisecond})
	release, stopped = make(chan string, 4), make(chan error, 4)
	s.AddTool(&Tool{Name: "ask"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		ctx, err := tasks.Start(ctx)
		if err != nil {
			return nil, err
		}
		if !tasks.InTask(ctx) {
			return nil, errors.New("not in a task")
		}
		e, err := Elicit[struct {
			Name string `json:"name"`
		}](ctx, "Your name?")
		if err != nil {
			return nil, err
		}
		return TextResult("hello " + e.Content.Name), nil
	}, rt.Support(tasks.Required))
	s.AddTool(&Tool{Name: "job"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		ctx, _ = tasks.Start(ctx)
		if !tasks.InTask(ctx) {
			return TextResult("sync"), nil
		}
		select {
		case v := <-release:
			return TextResult("done " + v), nil
		case <-ctx.Done():
			stopped <- ctx.Err()
			return nil, ctx.Err()
		}
	}, rt.Support(tasks.Optional))
	s.AddTool(&Tool{Name: "quick"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		if tasks.InTask(ctx) {
			return TextResult("quick task"), nil
		}
		return TextResult("quick"), nil
	}, rt.Support(tasks.Optional))
	s.AddTool(&Tool{Name: "plain"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		if tasks.InTask(ctx) {
			return nil, errors.New("plain in a task")
		}
		return TextResult("plain"), nil
	})
	t.Cleanup(func() { s.Close() })
	log = &wireLog{}
	return log.wrap(withTestUser(NewHTTPHandler(s, nil))), log, release, stopped
}

// legacyClient is our client at 2025-11-25 (tasks enabled, answering
// elicitations with the name "Ada") as user.
func legacyTaskClient(t *testing.T, url, user string) *Client {
	t.Helper()
	o := &ClientOptions{Mode: ModeLegacy, Elicitation: func(ctx context.Context, req *ElicitRequest) (*ElicitResult, error) {
		return &ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
	}}
	tasks.EnableClient(o, &tasks.ClientOptions{PollInterval: 5 * time.Millisecond})
	var hdr http.Header
	if user != "" {
		hdr = http.Header{"X-Test-User": {user}}
	}
	c := NewClient(NewHTTPClientTransport(url, &HTTPClientOptions{Header: hdr}), o)
	t.Cleanup(func() { c.Close() })
	if _, err := c.ListTools(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if v := c.ProtocolVersion(); v != "2025-11-25" {
		t.Fatalf("negotiated %q", v)
	}
	return c
}

func text(t *testing.T, r *CallToolResult) string {
	t.Helper()
	if r == nil || len(r.Content) != 1 {
		t.Fatalf("result %+v", r)
	}
	tc, ok := r.Content[0].(*TextContent)
	if !ok {
		t.Fatalf("content %+v", r.Content[0])
	}
	return tc.Text
}

// A task tool is called as a task: CreateTaskResult, tasks/get until
// input_required, tasks/result, which asks the task's question live and
// answers with the tool's result; the tools/list entry carries
// execution.taskSupport and initialize the tasks capability; a plain
// tool is called plainly.
func TestLegacyServerTaskCallPollAndResult(t *testing.T) {
	t.Parallel()
	h, log, _, _ := legacyTaskServer(t)
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	c := legacyTaskClient(t, hs.URL, "")
	ctx := context.Background()
	res, err := c.CallTool(ctx, "ask", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := text(t, res); got != "hello Ada" {
		t.Fatalf("ask: %q", got)
	}
	res, err = c.CallTool(ctx, "quick", nil, nil)
	if err != nil || text(t, res) != "quick task" {
		t.Fatalf("quick: %v %+v", err, res)
	}
	res, err = c.CallTool(ctx, "plain", nil, nil)
	if err != nil || text(t, res) != "plain" {
		t.Fatalf("plain: %v %+v", err, res)
	}
	methods := strings.Join(log.check(t), " ")
	if !strings.HasPrefix(methods, "initialize notifications/initialized tools/list tools/call tasks/get") || !strings.Contains(methods, "tasks/result") {
		t.Fatalf("requests: %s", methods)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	var sawCaps, sawListing, sawCreate, sawRelated, sawAsk, sawStatus bool
	for _, m := range log.msgs {
		s := string(m.raw)
		sawCaps = sawCaps || strings.Contains(s, `"tasks":{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}`)
		sawListing = sawListing || strings.Contains(s, `"name":"ask"`) && strings.Contains(s, `"execution":{"taskSupport":"required"}`) && strings.Contains(s, `"execution":{"taskSupport":"optional"}`)
		sawCreate = sawCreate || !m.fromClient && strings.Contains(s, `"result":{"task":{"taskId":`)
		sawStatus = sawStatus || !m.fromClient && strings.Contains(s, `"method":"notifications/tasks/status"`) && strings.Contains(s, `"status":"completed"`)
		sawAsk = sawAsk || !m.fromClient && strings.Contains(s, `"method":"elicitation/create"`) && strings.Contains(s, `"Your name?"`)
		sawRelated = sawRelated || strings.Contains(s, `"hello Ada"`) && strings.Contains(s, `"io.modelcontextprotocol/related-task":{"taskId":`)
		if !m.fromClient && strings.Contains(s, `"protocolVersion":"2025-11-25"`) && strings.Contains(s, `"extensions"`) {
			t.Errorf("initialize declares the tasks extension to a session: %s", s)
		}
		if !m.fromClient && strings.Contains(s, `"name":"plain"`) && strings.Contains(s, `"execution"`) && !strings.Contains(s, `"name":"plain","inputSchema":{"type":"object"}}`) {
			t.Errorf("plain is listed with execution: %s", s)
		}
	}
	if !sawCaps || !sawListing || !sawCreate || !sawRelated || !sawAsk || !sawStatus {
		t.Fatalf("capability %v, listing %v, CreateTaskResult %v, related-task result %v, live question %v, status notification %v", sawCaps, sawListing, sawCreate, sawRelated, sawAsk, sawStatus)
	}
}

// A detached call hands the task back: tasks/get reads it, tasks/list
// lists it, tasks/cancel cancels it (the handler's context ends) and
// answers the cancelled task, and a second cancel is refused.
func TestLegacyServerTaskListAndCancel(t *testing.T) {
	t.Parallel()
	h, log, _, stopped := legacyTaskServer(t)
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	c := legacyTaskClient(t, hs.URL, "")
	ctx := context.Background()
	_, err := c.CallTool(tasks.Detached(ctx), "job", nil, nil)
	var pe *tasks.PendingError
	if !errors.As(err, &pe) || pe.Seed.Status != tasks.Working || pe.Seed.TTLMs == nil {
		t.Fatalf("detached: %v", err)
	}
	st, err := pe.Task.Get(ctx)
	if err != nil || st.TaskID != pe.Task.ID || st.Status != tasks.Working {
		t.Fatalf("get: %v %+v", err, st)
	}
	raw, err := c.Request(ctx, &MethodCall{Method: "tasks/list"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Tasks []struct {
			TaskID string `json:"taskId"`
			Status string `json:"status"`
		} `json:"tasks"`
	}
	if err := json.Unmarshal(raw.Result, &list); err != nil || len(list.Tasks) != 1 || list.Tasks[0].TaskID != pe.Task.ID {
		t.Fatalf("tasks/list: %v %s", err, raw.Result)
	}
	if err := pe.Task.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-stopped:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("handler ended with %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the cancelled task's context did not end")
	}
	if _, err := pe.Task.Wait(ctx); !errors.Is(err, tasks.ErrCancelled) {
		t.Fatalf("wait: %v", err)
	}
	var e *Error
	if err := pe.Task.Cancel(ctx); !errors.As(err, &e) || e.Code != CodeInvalidParams {
		t.Fatalf("second cancel: %v", err)
	}
	log.check(t)
}

// Another principal's task is not found: tasks/get, tasks/result and
// tasks/cancel answer as for an unknown id, tasks/list does not show it,
// and the task goes on.
func TestLegacyServerTaskOfAnotherPrincipalIsNotFound(t *testing.T) {
	t.Parallel()
	h, log, release, _ := legacyTaskServer(t)
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	alice := legacyTaskClient(t, hs.URL, "alice")
	bob := legacyTaskClient(t, hs.URL, "bob")
	ctx := context.Background()
	_, err := alice.CallTool(tasks.Detached(ctx), "job", nil, nil)
	var pe *tasks.PendingError
	if !errors.As(err, &pe) {
		t.Fatalf("detached: %v", err)
	}
	for _, m := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
		_, err := bob.Request(ctx, &MethodCall{Method: m, Params: map[string]string{"taskId": pe.Task.ID}, TargetMember: "taskId"}, nil)
		_, errU := bob.Request(ctx, &MethodCall{Method: m, Params: map[string]string{"taskId": "AAAAAAAAAAAAAAAAAAAAAA"}, TargetMember: "taskId"}, nil)
		var e, eu *Error
		if !errors.As(err, &e) || !errors.As(errU, &eu) || e.Code != CodeInvalidParams || e.Message != eu.Message {
			t.Fatalf("%s of alice's task as bob: %v (unknown: %v)", m, err, errU)
		}
	}
	raw, err := bob.Request(ctx, &MethodCall{Method: "tasks/list"}, nil)
	if err != nil || !bytes.Contains(raw.Result, []byte(`"tasks":[]`)) {
		t.Fatalf("bob's tasks/list: %v %+v", err, raw)
	}
	release <- "x"
	r, err := pe.Task.Wait(ctx)
	if err != nil || text(t, r) != "done x" {
		t.Fatalf("alice's result: %v %+v", err, r)
	}
	log.check(t)
}

// A 2025-06-18 session has no tasks: the task member is ignored and the
// tool answers as a plain call; tools/list carries no execution and
// initialize no tasks capability.
func TestLegacyServerTaskIgnoredBefore20251125(t *testing.T) {
	t.Parallel()
	h, _, _, _ := legacyTaskServer(t)
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	post, init := legacySession(t, hs.URL, "2025-06-18", `{"tasks":{}}`)
	if strings.Contains(init, `"tasks":{`) {
		t.Fatalf("initialize: %s", init)
	}
	list := post(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if !strings.Contains(list, `"name":"quick"`) || strings.Contains(list, `"execution"`) {
		t.Fatalf("tools/list: %s", list)
	}
	call := post(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"quick","arguments":{},"task":{"ttl":1000}}}`)
	if !strings.Contains(call, `"text":"quick"`) || strings.Contains(call, `"taskId"`) {
		t.Fatalf("tools/call: %s", call)
	}
	if got := post(`{"jsonrpc":"2.0","id":4,"method":"tasks/get","params":{"taskId":"x"}}`); !strings.Contains(got, `"code":-32601`) {
		t.Fatalf("tasks/get on 2025-06-18: %s", got)
	}
}

// legacySession opens a session of version on hs with the client
// capabilities caps and returns a function posting a request on it, and
// the initialize response.
func legacySession(t *testing.T, url, version, caps string) (func(body string) string, string) {
	t.Helper()
	post := func(sid, body string) (http.Header, string) {
		r, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			r.Header.Set("Mcp-Session-Id", sid)
			r.Header.Set("Mcp-Protocol-Version", version)
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.Header, string(b)
	}
	hdr, init := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+version+`","capabilities":`+caps+`,"clientInfo":{"name":"raw","version":"1"}}}`)
	sid := hdr.Get("Mcp-Session-Id")
	if sid == "" || !strings.Contains(init, `"protocolVersion":"`+version+`"`) {
		t.Fatalf("initialize: %s", init)
	}
	post(sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return func(body string) string { _, b := post(sid, body); return b }, init
}

// On 2025-11-25, a Required tool called without a task is -32601, and a
// task member from a client that did not declare tasks is ignored.
func TestLegacyServerTaskNeedsTheTaskMemberAndTheCapability(t *testing.T) {
	t.Parallel()
	h, log, _, _ := legacyTaskServer(t)
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	with, _ := legacySession(t, hs.URL, "2025-11-25", `{"tasks":{}}`)
	if got := with(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ask","arguments":{}}}`); !strings.Contains(got, `"code":-32601`) {
		t.Fatalf("a required task tool called plainly: %s", got)
	}
	without, _ := legacySession(t, hs.URL, "2025-11-25", `{}`)
	if got := without(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"quick","arguments":{},"task":{}}}`); !strings.Contains(got, `"text":"quick"`) || strings.Contains(got, `"taskId"`) {
		t.Fatalf("a task member without the tasks capability: %s", got)
	}
	if got := without(`{"jsonrpc":"2.0","id":3,"method":"tasks/list","params":{}}`); !strings.Contains(got, `"tasks":[]`) {
		t.Fatalf("tasks/list: %s", got)
	}
	log.check(t)
}
