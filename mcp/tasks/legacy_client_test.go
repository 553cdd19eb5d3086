package tasks_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/testutil/wiretest"

	. "github.com/roundtrip-mcp/roundtrip/mcp"
	"github.com/roundtrip-mcp/roundtrip/mcp/tasks"
)

// check2025 validates msg against the 2025-11-25 definition def.
func check2025(t testing.TB, def string, msg []byte) {
	t.Helper()
	if err := wiretest.Validate(t, "2025-11-25", def, msg); err != nil {
		t.Errorf("%s does not match 2025-11-25 %s: %v", msg, def, err)
	}
}

// requestDefs are the 2025-11-25 schema definitions of the requests a
// client sends in these tests.
var requestDefs = map[string]string{
	"initialize":   "InitializeRequest",
	"tools/list":   "ListToolsRequest",
	"tools/call":   "CallToolRequest",
	"tasks/get":    "GetTaskRequest",
	"tasks/result": "GetTaskPayloadRequest",
	"tasks/cancel": "CancelTaskRequest",
}

// taskServer2025 is a 2025-11-25 server over loopback HTTP with the
// revision's tasks, written from its schema: tool "slow" (taskSupport
// required) becomes a task that is working for the first tasks/get and
// then input_required; its tasks/result asks one elicitation/create as
// a live request on its response stream and answers with the answer;
// tool "broken" becomes a task that fails; tool "plain" is an ordinary
// tool. Every message it receives and sends is checked against the
// schema.
type taskServer2025 struct {
	t       *testing.T
	mu      sync.Mutex
	got     []map[string]any // requests received
	gets    map[string]int   // tasks/get per task
	status  map[string]string
	answers chan json.RawMessage
}

func (s *taskServer2025) task(id, status string) string {
	return `{"taskId":"` + id + `","status":"` + status + `","createdAt":"2025-11-25T10:00:00Z","lastUpdatedAt":"2025-11-25T10:00:01Z","ttl":60000,"pollInterval":5}`
}

func (s *taskServer2025) reply(w http.ResponseWriter, id json.RawMessage, def, result string) {
	msg := `{"jsonrpc":"2.0","id":` + string(id) + `,"result":` + result + `}`
	check2025(s.t, def, []byte(msg))
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, msg)
}

func (s *taskServer2025) fail(w http.ResponseWriter, id json.RawMessage, code int, message string) {
	msg := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":%q}}`, id, code, message)
	check2025(s.t, "JSONRPCErrorResponse", []byte(msg))
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, msg)
}

func (s *taskServer2025) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	case http.MethodDelete:
		return
	}
	b, _ := io.ReadAll(r.Body)
	var in struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Result json.RawMessage `json:"result"`
		Params struct {
			Name   string          `json:"name"`
			TaskID string          `json:"taskId"`
			Task   json.RawMessage `json:"task"`
		} `json:"params"`
	}
	if err := json.Unmarshal(b, &in); err != nil {
		s.t.Errorf("bad body %q", b)
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	if in.Method == "" { // the answer to the live request
		check2025(s.t, "JSONRPCResultResponse", b)
		check2025(s.t, "ElicitResult", in.Result)
		s.answers <- in.Result
		w.WriteHeader(http.StatusAccepted)
		return
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	s.mu.Lock()
	s.got = append(s.got, m)
	s.mu.Unlock()
	if def := requestDefs[in.Method]; def != "" {
		check2025(s.t, def, b)
	}
	if in.Method != "initialize" && r.Header.Get("Mcp-Session-Id") != "s1" {
		s.t.Errorf("%s without the session", in.Method)
	}
	switch in.Method {
	case "initialize":
		w.Header().Set("Mcp-Session-Id", "s1")
		s.reply(w, in.ID, "JSONRPCResultResponse", `{"protocolVersion":"2025-11-25","capabilities":{"tools":{},"tasks":{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}},"serverInfo":{"name":"tasks-2025","version":"1"}}`)
	case "notifications/initialized":
		w.WriteHeader(http.StatusAccepted)
	case "tools/list":
		s.reply(w, in.ID, "JSONRPCResultResponse", `{"tools":[`+
			`{"name":"slow","inputSchema":{"type":"object"},"execution":{"taskSupport":"required"}},`+
			`{"name":"broken","inputSchema":{"type":"object"},"execution":{"taskSupport":"optional"}},`+
			`{"name":"plain","inputSchema":{"type":"object"}},`+
			`{"name":"bogus","inputSchema":{"type":"object"},"execution":{"taskSupport":"optional"}}]}`)
	case "tools/call":
		if in.Params.Name == "plain" {
			if in.Params.Task != nil {
				s.t.Errorf("a tool without taskSupport was called as a task: %s", b)
			}
			s.reply(w, in.ID, "JSONRPCResultResponse", `{"content":[{"type":"text","text":"plain"}]}`)
			return
		}
		if in.Params.Task == nil {
			s.fail(w, in.ID, -32601, "Method not found: tool "+in.Params.Name+" must be called as a task")
			return
		}
		if in.Params.Name == "bogus" { // a CreateTaskResult without a taskId
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(in.ID)+`,"result":{"task":{"status":"working"}}}`)
			return
		}
		id := "task-" + in.Params.Name
		s.mu.Lock()
		s.status[id] = "working"
		s.mu.Unlock()
		res := `{"task":` + s.task(id, "working") + `}`
		check2025(s.t, "CreateTaskResult", []byte(res))
		s.reply(w, in.ID, "JSONRPCResultResponse", res)
	case "tasks/get", "tasks/cancel":
		id := in.Params.TaskID
		s.mu.Lock()
		st, ok := s.status[id]
		if ok && in.Method == "tasks/cancel" {
			st = "cancelled"
		} else if ok && st == "working" {
			s.gets[id]++
			if s.gets[id] > 1 {
				st = "input_required"
				if id == "task-broken" {
					st = "failed"
				}
			}
		}
		s.status[id] = st
		s.mu.Unlock()
		if !ok {
			s.fail(w, in.ID, -32602, "Invalid params: unknown task")
			return
		}
		def := "GetTaskResult"
		if in.Method == "tasks/cancel" {
			def = "CancelTaskResult"
		}
		res := s.task(id, st)
		check2025(s.t, def, []byte(res))
		s.reply(w, in.ID, "JSONRPCResultResponse", res)
	case "tasks/result":
		id := in.Params.TaskID
		if id == "task-broken" {
			s.fail(w, in.ID, -32603, "Internal error: the tool broke")
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		ask := `{"jsonrpc":"2.0","id":"e1","method":"elicitation/create","params":{"mode":"form","message":"Go on?","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}}},"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"` + id + `"}}}}`
		check2025(s.t, "ElicitRequest", []byte(ask))
		fmt.Fprintf(w, "id: 1\ndata: %s\n\n", ask)
		w.(http.Flusher).Flush()
		var ans json.RawMessage
		select {
		case ans = <-s.answers:
		case <-time.After(10 * time.Second):
			s.t.Error("the elicitation was not answered")
			return
		}
		res := `{"content":[{"type":"text","text":"answer ` + strings.ReplaceAll(string(ans), `"`, `'`) + `"}],"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"` + id + `"}}}`
		msg := `{"jsonrpc":"2.0","id":` + string(in.ID) + `,"result":` + res + `}`
		check2025(s.t, "CallToolResult", []byte(res))
		fmt.Fprintf(w, "id: 2\ndata: %s\n\n", msg)
	default:
		s.fail(w, in.ID, -32601, "Method not found")
	}
}

func (s *taskServer2025) methods() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, m := range s.got {
		out = append(out, m["method"].(string))
	}
	return out
}

func (s *taskServer2025) request(method string) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.got {
		if m["method"] == method {
			return m
		}
	}
	return nil
}

// newTaskClient2025 serves a taskServer2025 on loopback and returns a
// legacy Client with tasks enabled (and an elicitation handler).
func newTaskClient2025(t *testing.T, to *tasks.ClientOptions) (*Client, *taskServer2025) {
	t.Helper()
	srv := &taskServer2025{t: t, gets: map[string]int{}, status: map[string]string{}, answers: make(chan json.RawMessage, 1)}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	o := &ClientOptions{Mode: ModeLegacy, Elicitation: func(ctx context.Context, req *ElicitRequest) (*ElicitResult, error) {
		return &ElicitResult{Action: "accept", Content: map[string]any{"ok": true}}, nil
	}}
	tasks.EnableClient(o, to)
	c := NewClient(NewHTTPClientTransport(ts.URL, nil), o)
	t.Cleanup(func() { c.Close() })
	return c, srv
}

// On a 2025-11-25 session, CallTool of a tool listed with taskSupport
// sends a task-augmented tools/call, follows the CreateTaskResult with
// tasks/get until input_required, and tasks/result, whose live
// elicitation the client's handler answers, gives the call its result;
// an ordinary tool is called as before. Every message matches the
// 2025-11-25 schema.
func TestLegacyTaskToolCallFollowsTheTask(t *testing.T) {
	t.Parallel()
	c, srv := newTaskClient2025(t, &tasks.ClientOptions{TTL: time.Minute, PollInterval: time.Millisecond})
	ctx := context.Background()
	if _, err := c.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	res, err := c.CallTool(ctx, "slow", map[string]any{"n": 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Content) != 1 || res.Content[0].(*TextContent).Text != `answer {'action':'accept','content':{'ok':true}}` {
		t.Fatalf("result %+v", res.Content)
	}
	plain, err := c.CallTool(ctx, "plain", nil, nil)
	if err != nil || plain.Content[0].(*TextContent).Text != "plain" {
		t.Fatalf("plain: %v %+v", err, plain)
	}
	got := strings.Join(srv.methods(), " ")
	if got != "initialize notifications/initialized tools/list tools/call tasks/get tasks/get tasks/result tools/call" {
		t.Fatalf("requests: %s", got)
	}
	caps := srv.request("initialize")["params"].(map[string]any)["capabilities"].(map[string]any)
	if _, ok := caps["tasks"]; !ok {
		t.Fatalf("initialize declares no tasks capability: %v", caps)
	}
	call := srv.request("tools/call")["params"].(map[string]any)
	if fmt.Sprint(call["task"]) != "map[ttl:60000]" || call["name"] != "slow" {
		t.Fatalf("tools/call params %v", call)
	}
}

// A task that fails gives the call the JSON-RPC error tasks/result
// answers; a Detached call hands the task back, whose handle reads it
// with tasks/get and cancels it with tasks/cancel, and refuses
// tasks/update, which 2025-11-25 does not have.
func TestLegacyTaskFailsAndDetaches(t *testing.T) {
	t.Parallel()
	c, srv := newTaskClient2025(t, &tasks.ClientOptions{PollInterval: time.Millisecond})
	ctx := context.Background()
	if _, err := c.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	_, err := c.CallTool(ctx, "broken", nil, nil)
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeInternalError || !strings.Contains(e.Message, "the tool broke") {
		t.Fatalf("broken: %v", err)
	}
	if p := srv.request("tools/call")["params"].(map[string]any); fmt.Sprint(p["task"]) != "map[]" {
		t.Fatalf("tools/call params %v (no TTL asked: an empty task)", p)
	}

	_, err = c.CallTool(tasks.Detached(ctx), "slow", nil, nil)
	var pe *tasks.PendingError
	if !errors.As(err, &pe) || pe.Task.ID != "task-slow" || pe.Seed.Status != tasks.Working || pe.Seed.PollIntervalMs != 5 || pe.Seed.TTLMs == nil || *pe.Seed.TTLMs != 60000 {
		t.Fatalf("detached: %v %+v", err, pe)
	}
	st, err := pe.Task.Get(ctx)
	if err != nil || st.TaskID != "task-slow" || st.Status != tasks.Working {
		t.Fatalf("Get: %v %+v", err, st)
	}
	if err := pe.Task.Update(ctx, InputResponses{"k": json.RawMessage(`{}`)}); !errors.Is(err, ErrLegacyUnsupported) {
		t.Fatalf("Update on 2025-11-25: %v", err)
	}
	if err := pe.Task.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := pe.Task.Wait(ctx); !errors.Is(err, tasks.ErrCancelled) {
		t.Fatalf("Wait after Cancel: %v", err)
	}
	if _, err := tasks.Get(c, "nope", nil).Get(ctx); !errors.As(err, &e) || e.Code != CodeInvalidParams {
		t.Fatalf("unknown task: %v", err)
	}
}

// A tool the client has not seen listed, or a server that does not
// declare tasks.requests.tools.call, is called without a task.
func TestLegacyTaskNeedsTheListingAndTheCapability(t *testing.T) {
	t.Parallel()
	c, srv := newTaskClient2025(t, nil)
	_, err := c.CallTool(context.Background(), "slow", nil, nil)
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeMethodNotFound {
		t.Fatalf("unlisted task tool: %v", err)
	}
	if p := srv.request("tools/call")["params"].(map[string]any); p["task"] != nil {
		t.Fatalf("an unlisted tool was called as a task: %v", p)
	}
}

// A CreateTaskResult the client cannot follow (no taskId) fails the call
// with an invalid response, at once.
func TestLegacyTaskInvalidCreateTaskResult(t *testing.T) {
	t.Parallel()
	c, srv := newTaskClient2025(t, nil)
	ctx := context.Background()
	if _, err := c.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	_, err := c.CallTool(ctx, "bogus", nil, nil)
	var ir *InvalidResponseError
	if !errors.As(err, &ir) || ir.Method != MethodToolsCall || !strings.Contains(err.Error(), "taskId") {
		t.Fatalf("got %v", err)
	}
	if got := strings.Join(srv.methods(), " "); strings.Contains(got, "tasks/") {
		t.Fatalf("requests after an invalid seed: %s", got)
	}
}
