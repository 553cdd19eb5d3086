package tasks_test

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/roundtrip-mcp/roundtrip/internal/testutil/wiretest"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/testutil"
	. "github.com/roundtrip-mcp/roundtrip/mcp"
	"github.com/roundtrip-mcp/roundtrip/mcp/tasks"
)

const tasksCaps = `{"elicitation":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}`

// taskClient talks to a server over loopback HTTP with the real handler,
// or hands its requests to the handler directly (newMemoryTaskClient).
type taskClient struct {
	t    *testing.T
	url  string
	h    http.Handler // set: no socket
	id   atomic.Int64
	caps string
}

func newTaskClient(t *testing.T, s *Server, caps string) *taskClient {
	t.Helper()
	hs := httptest.NewServer(NewHTTPHandler(s, nil))
	t.Cleanup(hs.Close)
	return &taskClient{t: t, url: hs.URL, caps: caps}
}

// newMemoryTaskClient is newTaskClient without the socket, for a test
// in a synctest bubble: a bubble's clock cannot wait on real I/O.
func newMemoryTaskClient(t *testing.T, s *Server, caps string) *taskClient {
	return &taskClient{t: t, url: "http://localhost/mcp", h: NewHTTPHandler(s, nil), caps: caps}
}

// body builds a request; params is the JSON object members besides _meta.
func (c *taskClient) body(method, params string) string {
	p := `"_meta":` + metaJSON(c.caps)
	if params != "" {
		p += "," + params
	}
	return `{"jsonrpc":"2.0","id":` + itoa(int(c.id.Add(1))) + `,"method":"` + method + `","params":{` + p + `}}`
}

// do posts body with the standard headers (Mcp-Name = taskId for tasks
// methods), edited by edit, validates every message against the wire
// schema and returns the status and the final message.
func (c *taskClient) do(body string, edit func(http.Header)) (int, map[string]any) {
	c.t.Helper()
	h := headersFor(c.t, body)
	var m struct {
		Method string `json:"method"`
		Params struct {
			TaskID *string `json:"taskId"`
		} `json:"params"`
	}
	_ = json.Unmarshal([]byte(body), &m)
	if m.Params.TaskID != nil {
		h.Set(HeaderName, encodeHeaderValue(*m.Params.TaskID))
	}
	if edit != nil {
		edit(h)
	}
	code, ct, b := c.roundTrip(body, h)
	msgs := wiretest.SplitMessages(ct, b)
	if len(msgs) == 0 {
		c.t.Fatalf("no message (status %d, body %q)", code, b)
	}
	wireMethod := m.Method
	var v map[string]any
	for _, msg := range msgs {
		if err := json.Unmarshal(msg, &v); err != nil {
			c.t.Fatal(err)
		}
		// The schema knows no CreateTaskResult: check it as a result.
		if r, _ := v["result"].(map[string]any); r != nil && r["resultType"] == string(tasks.ResultType) {
			wireMethod = ""
		}
		wiretest.CheckWire(c.t, wireMethod, msg)
	}
	return code, v
}

// roundTrip posts body with headers h and returns the status, the
// Content-Type and the body of the answer.
func (c *taskClient) roundTrip(body string, h http.Header) (int, string, []byte) {
	c.t.Helper()
	if c.h != nil {
		r := httptest.NewRequest(http.MethodPost, c.url, strings.NewReader(body))
		r.Header = h
		w := httptest.NewRecorder()
		c.h.ServeHTTP(w, r)
		return w.Code, w.Header().Get("Content-Type"), w.Body.Bytes()
	}
	r, err := http.NewRequest(http.MethodPost, c.url, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	r.Header = h
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), b
}

func (c *taskClient) call(method, params string) map[string]any {
	c.t.Helper()
	_, v := c.do(c.body(method, params), nil)
	return v
}

func (c *taskClient) get(id string) map[string]any {
	c.t.Helper()
	return result(c.t, c.call(tasks.MethodGet, `"taskId":`+quote(id)))
}

// await polls tasks/get until cond holds.
func (c *taskClient) await(id string, cond func(map[string]any) bool) map[string]any {
	c.t.Helper()
	var r map[string]any
	testutil.Eventually(c.t, 5*time.Second, "task "+id+" to reach the condition", func() bool { r = c.get(id); return cond(r) })
	return r
}

func status(want tasks.Status) func(map[string]any) bool {
	return func(r map[string]any) bool { return r["status"] == string(want) }
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

// startTask calls tool and returns the CreateTaskResult's taskId after
// checking its shape.
func (c *taskClient) startTask(tool, args string) string {
	c.t.Helper()
	r := result(c.t, c.call(MethodToolsCall, `"name":`+quote(tool)+`,"arguments":`+args))
	if r["resultType"] != "task" {
		c.t.Fatalf("want a CreateTaskResult, got %v", r)
	}
	for _, k := range []string{"result", "error", "inputRequests", "requestState", "task", "ttl", "pollInterval"} {
		if _, ok := r[k]; ok {
			c.t.Fatalf("CreateTaskResult carries %q: %v", k, r)
		}
	}
	if r["status"] != "working" || r["ttlMs"] == nil || r["pollIntervalMs"] == nil {
		c.t.Fatalf("bad seed state: %v", r)
	}
	for _, k := range []string{"createdAt", "lastUpdatedAt"} {
		if _, err := time.Parse(time.RFC3339, r[k].(string)); err != nil {
			c.t.Fatalf("%s: %v", k, err)
		}
	}
	id, _ := r["taskId"].(string)
	if len(id) < 22 {
		c.t.Fatalf("task id %q too short to be unguessable", id)
	}
	return id
}

func toolText(t *testing.T, res any) string {
	t.Helper()
	b, _ := json.Marshal(res)
	if err := wiretest.Schema(t, "CallToolResult").Validate(res); err != nil {
		t.Fatalf("inlined result does not match CallToolResult: %v\n%s", err, b)
	}
	var r struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	_ = json.Unmarshal(b, &r)
	if len(r.Content) == 0 {
		t.Fatalf("no content: %s", b)
	}
	return r.Content[0].Text
}

// newTaskServer returns a server with tasks enabled and a few task tools.
// release lets "job" finish; started reports that it is running; stopped
// receives when its context ends.
func newTaskServer(t *testing.T, o tasks.Options) (s *Server, release chan string, stopped chan error) {
	s = NewServer(Implementation{Name: "tasks", Version: "1"}, nil)
	rt := tasks.Enable(s, &o)
	release, stopped = make(chan string, 4), make(chan error, 4)
	s.AddTool(&Tool{Name: "job"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		ctx, err := tasks.Start(ctx)
		if err != nil {
			return nil, err
		}
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
	s.AddTool(&Tool{Name: "plain"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		if _, err := tasks.Start(ctx); err != nil || tasks.InTask(ctx) {
			return nil, errors.New("tasks.Start must be a no-op here")
		}
		return TextResult("plain"), nil
	})
	s.AddTool(&Tool{Name: "late"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		errc := make(chan error, 1)
		go func() {
			time.Sleep(20 * time.Millisecond)
			_, err := tasks.Start(ctx)
			errc <- err
		}()
		go func() { stopped <- <-errc }()
		return TextResult("returned"), nil
	}, rt.Support(tasks.Optional))
	s.AddTool(&Tool{Name: "required"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		if _, err := tasks.Start(ctx); err != nil {
			return nil, err
		}
		return TextResult("ok"), nil
	}, rt.Support(tasks.Required))
	type name struct {
		Name string `json:"name"`
	}
	s.AddTool(&Tool{Name: "ask"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		ctx, err := tasks.Start(ctx)
		if err != nil {
			return nil, err
		}
		a, err := Elicit[name](ctx, "First?")
		if err != nil {
			return nil, err
		}
		b, err := Elicit[name](ctx, "Second?")
		if err != nil {
			return nil, err
		}
		return TextResult(a.Content.Name + "+" + b.Content.Name), nil
	}, rt.Support(tasks.Optional))
	s.AddTool(&Tool{Name: "mrtr_then_task"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		a, err := Elicit[name](ctx, "Who?", WithKey("who"))
		if err != nil {
			return nil, err
		}
		ctx, err = tasks.Start(ctx)
		if err != nil {
			return nil, err
		}
		return TextResult("hi " + a.Content.Name + " in a task: " + map[bool]string{true: "yes", false: "no"}[tasks.InTask(ctx)]), nil
	}, rt.Support(tasks.Required))
	s.AddTool(&Tool{Name: "outcome"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		var in struct{ Kind string }
		_ = json.Unmarshal(r.Arguments, &in)
		if _, err := tasks.Start(ctx); err != nil {
			return nil, err
		}
		switch in.Kind {
		case "panic":
			panic("boom")
		case "rpc":
			return nil, NewError(CodeInvalidParams, "bad input", nil)
		case "err":
			return nil, errors.New("tool failed")
		case "big":
			return TextResult(strings.Repeat("x", 2000)), nil
		}
		return nil, nil
	}, rt.Support(tasks.Optional))
	return s, release, stopped
}

func TestTasksLifecycle(t *testing.T) {
	t.Parallel()
	s, release, _ := newTaskServer(t, tasks.Options{PollInterval: 20 * time.Millisecond})
	c := newTaskClient(t, s, tasksCaps)
	id := c.startTask("job", `{}`)
	r := c.get(id)
	if r["taskId"] != id || r["status"] != "working" || r["resultType"] != "complete" || r["result"] != nil {
		t.Fatalf("working task: %v", r)
	}
	if r["pollIntervalMs"] != float64(20) || r["ttlMs"] != float64(time.Hour.Milliseconds()) {
		t.Fatalf("hints: %v", r)
	}
	release <- "now"
	r = c.await(id, status(tasks.Completed))
	if got := toolText(t, r["result"]); got != "done now" {
		t.Fatalf("result text %q", got)
	}
	if _, ok := r["error"]; ok {
		t.Fatalf("completed task with error: %v", r)
	}
	// A finished task stays readable until its TTL.
	if c.get(id)["status"] != "completed" {
		t.Fatal("completed task not readable again")
	}
}

// In a bubble, the late goroutine's sleep ends only once the handler has
// returned and its answer is written, however slow the machine.
func TestTasksStartAfterReturn(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s, _, stopped := newTaskServer(t, tasks.Options{})
		c := newMemoryTaskClient(t, s, tasksCaps)
		if r := result(t, c.call(MethodToolsCall, `"name":"late","arguments":{}`)); toolText(t, r) != "returned" {
			t.Fatalf("%v", r)
		}
		select {
		case err := <-stopped:
			if err == nil {
				t.Fatal("tasks.Start after the handler returned created a task")
			}
		case <-time.After(5 * time.Second):
			t.Fatal("timeout")
		}
	})
}

func TestTasksOutcomes(t *testing.T) {
	t.Parallel()
	s, _, _ := newTaskServer(t, tasks.Options{MaxResultBytes: 1000})
	c := newTaskClient(t, s, tasksCaps)
	for _, tc := range []struct {
		kind   string
		status tasks.Status
		code   int
	}{
		{"panic", tasks.Failed, CodeInternalError},
		{"rpc", tasks.Failed, CodeInvalidParams},
		{"err", tasks.Completed, 0},
		{"big", tasks.Failed, CodeInternalError},
		{"nil", tasks.Failed, CodeInternalError},
	} {
		id := c.startTask("outcome", `{"Kind":"`+tc.kind+`"}`)
		r := c.await(id, func(r map[string]any) bool { return tasks.Status(r["status"].(string)).Terminal() })
		if r["status"] != string(tc.status) {
			t.Fatalf("%s: status %v", tc.kind, r)
		}
		if tc.status == tasks.Failed {
			e, _ := r["error"].(map[string]any)
			if e == nil || int(e["code"].(float64)) != tc.code || r["result"] != nil {
				t.Fatalf("%s: %v", tc.kind, r)
			}
			continue
		}
		res := r["result"].(map[string]any)
		if res["isError"] != true || toolText(t, res) != "tool failed" {
			t.Fatalf("%s: %v", tc.kind, r)
		}
	}
}

func TestTasksInputThroughUpdate(t *testing.T) {
	t.Parallel()
	s, _, _ := newTaskServer(t, tasks.Options{})
	c := newTaskClient(t, s, tasksCaps)
	id := c.startTask("ask", `{}`)
	r := c.await(id, status(tasks.InputRequired))
	irs, _ := r["inputRequests"].(map[string]any)
	if len(irs) != 1 {
		t.Fatalf("inputRequests %v", r)
	}
	var key string
	for k, v := range irs {
		key = k
		if v.(map[string]any)["method"] != MethodElicit || v.(map[string]any)["params"] == nil {
			t.Fatalf("input request %v", v)
		}
	}
	// Unknown keys and null answers are ignored; the ack is empty.
	ack := result(t, c.call(tasks.MethodUpdate, `"taskId":`+quote(id)+`,"inputResponses":{"nope":{"action":"accept"},`+quote(key)+`:null}`))
	if ack["resultType"] != "complete" || ack["taskId"] != nil || ack["status"] != nil {
		t.Fatalf("ack %v", ack)
	}
	if c.get(id)["status"] != "input_required" {
		t.Fatal("task moved on without an answer")
	}
	c.call(tasks.MethodUpdate, `"taskId":`+quote(id)+`,"inputResponses":{`+quote(key)+`:{"action":"accept","content":{"name":"Ada"}}}`)
	// The second question gets a new key; the first one is gone.
	r = c.await(id, func(r map[string]any) bool {
		m, _ := r["inputRequests"].(map[string]any)
		_, old := m[key]
		return len(m) == 1 && !old
	})
	var key2 string
	for k := range r["inputRequests"].(map[string]any) {
		key2 = k
	}
	// A late answer to the first key changes nothing.
	c.call(tasks.MethodUpdate, `"taskId":`+quote(id)+`,"inputResponses":{`+quote(key)+`:{"action":"accept","content":{"name":"X"}}}`)
	c.call(tasks.MethodUpdate, `"taskId":`+quote(id)+`,"inputResponses":{`+quote(key2)+`:{"action":"accept","content":{"name":"Bo"}}}`)
	r = c.await(id, status(tasks.Completed))
	if got := toolText(t, r["result"]); got != "Ada+Bo" {
		t.Fatalf("result %q", got)
	}
}

func TestTasksInvalidAnswer(t *testing.T) {
	t.Parallel()
	s, _, _ := newTaskServer(t, tasks.Options{})
	c := newTaskClient(t, s, tasksCaps)
	id := c.startTask("ask", `{}`)
	r := c.await(id, status(tasks.InputRequired))
	for k := range r["inputRequests"].(map[string]any) {
		c.call(tasks.MethodUpdate, `"taskId":`+quote(id)+`,"inputResponses":{`+quote(k)+`:{"action":"accept","content":{"name":12}}}`)
	}
	r = c.await(id, status(tasks.Completed))
	if res := r["result"].(map[string]any); res["isError"] != true {
		t.Fatalf("invalid answer accepted: %v", r)
	}
}

func TestTasksCancel(t *testing.T) {
	t.Parallel()
	s, _, stopped := newTaskServer(t, tasks.Options{})
	c := newTaskClient(t, s, tasksCaps)
	id := c.startTask("job", `{}`)
	ack := result(t, c.call(tasks.MethodCancel, `"taskId":`+quote(id)))
	for _, k := range []string{"taskId", "status", "result", "error", "inputRequests"} {
		if _, ok := ack[k]; ok || ack["resultType"] != "complete" {
			t.Fatalf("cancel ack %v", ack)
		}
	}
	if got := c.get(id)["status"]; got != "cancelled" {
		t.Fatalf("status after cancel %v", got)
	}
	waitStopped(t, stopped, context.Canceled)
	// Idempotent on a terminal task; the status stays cancelled.
	result(t, c.call(tasks.MethodCancel, `"taskId":`+quote(id)))
	if got := c.get(id)["status"]; got != "cancelled" {
		t.Fatalf("status %v", got)
	}
}

// The bubble's clock makes the TTL exact: the task is working a
// millisecond before it, and at it the handler's context ends and the
// task is unknown.
func TestTasksUnknownAndExpired(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const ttl = 100 * time.Millisecond
		s, _, stopped := newTaskServer(t, tasks.Options{TTL: ttl})
		c := newMemoryTaskClient(t, s, tasksCaps)
		for _, m := range []string{tasks.MethodGet, tasks.MethodCancel} {
			if code := errorCode(t, c.call(m, `"taskId":"nope"`)); code != CodeInvalidParams {
				t.Fatalf("%s unknown: %d", m, code)
			}
		}
		// tasks/update acknowledges any id (SEP-2663).
		result(t, c.call(tasks.MethodUpdate, `"taskId":"nope","inputResponses":{}`))

		id := c.startTask("job", `{}`)
		time.Sleep(ttl - time.Millisecond)
		if got := c.get(id)["status"]; got != "working" {
			t.Fatalf("a millisecond before the TTL: status %v", got)
		}
		waitStopped(t, stopped, context.DeadlineExceeded)
		synctest.Wait()
		if code := errorCode(t, c.call(tasks.MethodGet, `"taskId":`+quote(id))); code != CodeInvalidParams {
			t.Fatalf("expired task: %d", code)
		}
	})
}

func TestTasksCapabilityNegotiation(t *testing.T) {
	t.Parallel()
	s, _, _ := newTaskServer(t, tasks.Options{})
	with := newTaskClient(t, s, tasksCaps)
	without := newTaskClient(t, s, `{"elicitation":{}}`)

	caps := result(t, with.call(MethodDiscover, ""))["capabilities"].(map[string]any)
	if ext, _ := caps["extensions"].(map[string]any); ext == nil || ext[tasks.Extension] == nil || caps["tasks"] != nil {
		t.Fatalf("discover capabilities %v", caps)
	}
	// Without the extension: tasks methods are refused with -32021 (400),
	// an optional tool runs synchronously, a required one is refused.
	st, v := without.do(without.body(tasks.MethodGet, `"taskId":"x"`), nil)
	if st != http.StatusBadRequest || errorCode(t, v) != CodeMissingRequiredCapability {
		t.Fatalf("tasks/get without extension: %d %v", st, v)
	}
	r := result(t, without.call(MethodToolsCall, `"name":"job","arguments":{}`))
	if r["resultType"] != "complete" || r["taskId"] != nil || toolText(t, r) != "sync" {
		t.Fatalf("optional tool without extension: %v", r)
	}
	st, v = without.do(without.body(MethodToolsCall, `"name":"required","arguments":{}`), nil)
	if st != http.StatusBadRequest || errorCode(t, v) != CodeMissingRequiredCapability {
		t.Fatalf("required tool without extension: %d %v", st, v)
	}
	data, _ := v["error"].(map[string]any)["data"].(map[string]any)
	ext, _ := data["requiredCapabilities"].(map[string]any)["extensions"].(map[string]any)
	if ext[tasks.Extension] == nil {
		t.Fatalf("error data %v", data)
	}
	// A legacy task param is ignored: a tool without task support answers.
	r = result(t, with.call(MethodToolsCall, `"name":"plain","arguments":{},"task":{"ttl":1}`))
	if r["resultType"] != "complete" || toolText(t, r) != "plain" {
		t.Fatalf("plain tool with a legacy task param: %v", r)
	}

	// A server without Tasks advertises nothing and answers -32601.
	plain := newTaskClient(t, NewServer(Implementation{Name: "test-server", Version: "1.0.0"}, nil), tasksCaps)
	caps = result(t, plain.call(MethodDiscover, ""))["capabilities"].(map[string]any)
	if ext, _ := caps["extensions"].(map[string]any); ext[tasks.Extension] != nil {
		t.Fatalf("extension advertised without Tasks: %v", caps)
	}
	st, v = plain.do(plain.body(tasks.MethodGet, `"taskId":"x"`), nil)
	if st != http.StatusNotFound || errorCode(t, v) != CodeMethodNotFound {
		t.Fatalf("tasks/get without Tasks: %d %v", st, v)
	}
	for _, m := range []string{"tasks/result", "tasks/list"} {
		st, v = with.do(with.body(m, `"taskId":"x"`), nil)
		if st != http.StatusNotFound || errorCode(t, v) != CodeMethodNotFound {
			t.Fatalf("%s: %d %v", m, st, v)
		}
	}
}

func TestTasksMRTRBeforeTask(t *testing.T) {
	t.Parallel()
	s, _, _ := newTaskServer(t, tasks.Options{})
	c := newTaskClient(t, s, tasksCaps)
	r1 := result(t, c.call(MethodToolsCall, `"name":"mrtr_then_task","arguments":{}`))
	if r1["resultType"] != "input_required" || r1["taskId"] != nil {
		t.Fatalf("round 1: %v", r1)
	}
	state, _ := r1["requestState"].(string)
	id := c.startTask("mrtr_then_task", `{},"inputResponses":{"who":{"action":"accept","content":{"name":"Ann"}}},"requestState":`+quote(state))
	r := c.await(id, status(tasks.Completed))
	if got := toolText(t, r["result"]); got != "hi Ann in a task: yes" {
		t.Fatalf("result %q", got)
	}
}

func TestTasksHeaders(t *testing.T) {
	t.Parallel()
	s, _, _ := newTaskServer(t, tasks.Options{})
	c := newTaskClient(t, s, tasksCaps)
	id := c.startTask("job", `{}`)
	for name, edit := range map[string]func(http.Header){
		"mismatch": func(h http.Header) { h.Set(HeaderName, "other") },
		"missing":  func(h http.Header) { h.Del(HeaderName) },
	} {
		st, v := c.do(c.body(tasks.MethodGet, `"taskId":`+quote(id)), edit)
		if st != http.StatusBadRequest || errorCode(t, v) != CodeHeaderMismatch {
			t.Fatalf("%s Mcp-Name: %d %v", name, st, v)
		}
	}
	c.call(tasks.MethodCancel, `"taskId":`+quote(id))
}

func TestTasksBounds(t *testing.T) {
	t.Parallel()
	s, _, _ := newTaskServer(t, tasks.Options{MaxTasks: 2})
	c := newTaskClient(t, s, tasksCaps)
	a, b := c.startTask("job", `{}`), c.startTask("job", `{}`)
	if code := errorCode(t, c.call(MethodToolsCall, `"name":"job","arguments":{}`)); code != CodeInternalError {
		t.Fatalf("third task: %d", code)
	}
	c.call(tasks.MethodCancel, `"taskId":`+quote(a))
	c.call(tasks.MethodCancel, `"taskId":`+quote(b))

	// Malformed params are -32602, never a panic.
	for _, p := range []string{`"taskId":7`, ``, `"taskId":"a","inputResponses":[]`, `"taskId":"a"`} {
		if code := errorCode(t, c.call(tasks.MethodUpdate, p)); code != CodeInvalidParams {
			t.Fatalf("tasks/update {%s}: %d", p, code)
		}
	}
}

func TestMemoryTaskStoreExpiry(t *testing.T) {
	t.Parallel()
	st := tasks.NewMemoryStore(1)
	ttl := int64(1)
	old := &tasks.Task{TaskID: "a", CreatedAt: time.Now().Add(-time.Second), TTLMs: &ttl}
	ctx := context.Background()
	if err := st.Create(ctx, old); err != nil {
		t.Fatal(err)
	}
	// Full, but the expired task makes room.
	if err := st.Create(ctx, &tasks.Task{TaskID: "b", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Get(ctx, "a"); !errors.Is(err, tasks.ErrNotFound) {
		t.Fatalf("expired task: %v", err)
	}
	if err := st.Create(ctx, &tasks.Task{TaskID: "c", CreatedAt: time.Now()}); !errors.Is(err, tasks.ErrLimit) {
		t.Fatalf("over the limit: %v", err)
	}
}

// Server.Close cancels running tasks: their handlers' contexts end and
// the tasks read cancelled.
func TestServerCloseCancelsTasks(t *testing.T) {
	t.Parallel()
	s, _, stopped := newTaskServer(t, tasks.Options{})
	c := newTaskClient(t, s, tasksCaps)
	id := c.startTask("job", `{}`)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	waitStopped(t, stopped, context.Canceled)
	if got := c.get(id)["status"]; got != "cancelled" {
		t.Fatalf("status after Close %v", got)
	}
}

// waitStopped waits for a task handler to end and checks its context's
// error.
func waitStopped(t *testing.T, stopped <-chan error, want error) {
	t.Helper()
	select {
	case err := <-stopped:
		if !errors.Is(err, want) {
			t.Fatalf("the handler's context ended with %v, want %v", err, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("the handler's context did not end (want %v)", want)
	}
}
