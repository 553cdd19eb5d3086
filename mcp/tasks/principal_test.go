package tasks_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/testutil"
	. "github.com/roundtrip-mcp/roundtrip/mcp"
	"github.com/roundtrip-mcp/roundtrip/mcp/tasks"
)

// withTestUser stands in for authentication middleware: the X-Test-User
// header becomes the verified token's subject.
func withTestUser(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u := r.Header.Get("X-Test-User"); u != "" {
			r = r.WithContext(WithTokenInfo(r.Context(), &TokenInfo{ClientID: "app", Issuer: "https://issuer.example", Subject: u}))
		}
		h.ServeHTTP(w, r)
	})
}

func newAuthTaskClient(t *testing.T, s *Server) *taskClient {
	t.Helper()
	hs := httptest.NewServer(withTestUser(NewHTTPHandler(s, nil)))
	t.Cleanup(hs.Close)
	return &taskClient{t: t, url: hs.URL, caps: tasksCaps}
}

func as(user string) func(http.Header) {
	return func(h http.Header) {
		if user != "" {
			h.Set("X-Test-User", user)
		}
	}
}

// raw posts a tasks request with JSON-RPC id 7 as user and returns the
// status and the body, unparsed.
func (c *taskClient) raw(method, id, extra, user string) (int, []byte) {
	c.t.Helper()
	body := `{"jsonrpc":"2.0","id":7,"method":"` + method + `","params":{"_meta":` + metaJSON(c.caps) + `,"taskId":` + quote(id) + extra + `}}`
	h := headersFor(c.t, body)
	h.Set(HeaderName, encodeHeaderValue(id))
	as(user)(h)
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
	return resp.StatusCode, b
}

func (c *taskClient) startAs(user, tool string) string {
	c.t.Helper()
	_, v := c.do(c.body(MethodToolsCall, `"name":`+quote(tool)+`,"arguments":{}`), as(user))
	r := result(c.t, v)
	id, _ := r["taskId"].(string)
	if r["resultType"] != "task" || id == "" {
		c.t.Fatalf("want a CreateTaskResult, got %v", r)
	}
	return id
}

func (c *taskClient) getAs(user, id string) map[string]any {
	c.t.Helper()
	_, v := c.do(c.body(tasks.MethodGet, `"taskId":`+quote(id)), as(user))
	return v
}

// A task belongs to the principal that started it: every tasks method
// from another principal (or from an unauthenticated request) is
// answered byte for byte as for an unknown id, and does nothing.
func TestTasksOfAnotherPrincipalAreUnknown(t *testing.T) {
	t.Parallel()
	s, _, stopped := newTaskServer(t, tasks.Options{})
	c := newAuthTaskClient(t, s)
	asked := c.startAs("alice", "ask")
	var key string
	testutil.Eventually(t, 5*time.Second, "the task to ask", func() bool {
		r := result(t, c.getAs("alice", asked))
		irs, _ := r["inputRequests"].(map[string]any) // absent while the task has not asked yet
		for k := range irs {
			key = k
		}
		return key != ""
	})
	job := c.startAs("alice", "job")
	const unknown = "AAAAAAAAAAAAAAAAAAAAAA"
	answer := `,"inputResponses":{` + quote(key) + `:{"action":"accept","content":{"name":"Mallory"}}}`
	for _, intruder := range []string{"bob", ""} {
		for _, tc := range []struct{ method, id, extra string }{
			{tasks.MethodGet, asked, ""},
			{tasks.MethodCancel, job, ""},
			{tasks.MethodUpdate, asked, answer},
		} {
			st, got := c.raw(tc.method, tc.id, tc.extra, intruder)
			stU, want := c.raw(tc.method, unknown, tc.extra, intruder)
			if st != stU || !bytes.Equal(got, want) {
				t.Fatalf("%s of another principal's task (%q): %d %s\nunknown task: %d %s", tc.method, intruder, st, got, stU, want)
			}
			if tc.method != tasks.MethodUpdate && !bytes.Contains(got, []byte(`"code":-32602`)) {
				t.Fatalf("%s of another principal's task: %s", tc.method, got)
			}
		}
	}
	// Nothing happened: the question is still pending, the job running.
	if r := result(t, c.getAs("alice", asked)); r["status"] != "input_required" || r["inputRequests"].(map[string]any)[key] == nil {
		t.Fatalf("another principal's answer reached the task: %v", r)
	}
	if r := result(t, c.getAs("alice", job)); r["status"] != "working" {
		t.Fatalf("another principal cancelled the task: %v", r)
	}
	// The owner still can.
	_, v := c.do(c.body(tasks.MethodCancel, `"taskId":`+quote(job)), as("alice"))
	result(t, v)
	waitStopped(t, stopped, context.Canceled)
	c.do(c.body(tasks.MethodUpdate, `"taskId":`+quote(asked)+answer), as("alice"))
	c.do(c.body(tasks.MethodCancel, `"taskId":`+quote(asked)), as("alice"))
}

// The principal recorded with a task is the one sealed request state is
// bound to: RequestStateOptions.Principal when set, else the verified
// token's client, issuer and subject. It is stored, and never sent.
func TestTaskRecordsItsPrincipal(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		fn   func(context.Context) (string, error)
		want string
	}{
		{"default", nil, `["app","https://issuer.example","alice"]`},
		{"configured", func(ctx context.Context) (string, error) { return "tenant:" + TokenInfoFromContext(ctx).Subject, nil }, "tenant:alice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := tasks.NewMemoryStore(10)
			s := NewServer(Implementation{Name: "tasks", Version: "1"}, &ServerOptions{
				RequestState: RequestStateOptions{Principal: tc.fn}})
			rt := tasks.Enable(s, &tasks.Options{Store: store})
			s.AddTool(&Tool{Name: "job"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
				if _, err := tasks.Start(ctx); err != nil {
					return nil, err
				}
				return TextResult("done"), nil
			}, rt.Support(tasks.Optional))
			c := newAuthTaskClient(t, s)
			id := c.startAs("alice", "job")
			task, err := store.Get(context.Background(), id)
			if err != nil || task.Principal != tc.want {
				t.Fatalf("stored principal %q (%v), want %q", task.Principal, err, tc.want)
			}
			_, body := c.raw(tasks.MethodGet, id, "", "alice")
			if bytes.Contains(body, []byte("alice")) || bytes.Contains(body, []byte("rincipal")) {
				t.Fatalf("the principal went on the wire: %s", body)
			}
		})
	}
}

// A principal that cannot be derived fails the call and the tasks
// methods with -32603, never a task without an owner.
func TestTaskPrincipalErrorFails(t *testing.T) {
	t.Parallel()
	var fail atomic.Bool
	s := NewServer(Implementation{Name: "tasks", Version: "1"}, &ServerOptions{
		RequestState: RequestStateOptions{Principal: func(ctx context.Context) (string, error) {
			if fail.Load() {
				return "", errors.New("no directory")
			}
			return "p", nil
		}}})
	rt := tasks.Enable(s, &tasks.Options{})
	s.AddTool(&Tool{Name: "job"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		if _, err := tasks.Start(ctx); err != nil {
			return nil, err
		}
		return TextResult("done"), nil
	}, rt.Support(tasks.Optional))
	c := newTaskClient(t, s, tasksCaps)
	id := c.startTask("job", `{}`)
	fail.Store(true)
	if code := errorCode(t, c.call(MethodToolsCall, `"name":"job","arguments":{}`)); code != CodeInternalError {
		t.Fatalf("tools/call: %d", code)
	}
	if code := errorCode(t, c.call(tasks.MethodGet, `"taskId":`+quote(id))); code != CodeInternalError {
		t.Fatalf("tasks/get: %d", code)
	}
}

// The first terminal state a store holds is final: a later Update is
// refused with tasks.ErrEnded.
func TestMemoryTaskStoreKeepsTheFirstTerminalState(t *testing.T) {
	t.Parallel()
	st := tasks.NewMemoryStore(10)
	ctx := context.Background()
	ttl := int64(time.Hour.Milliseconds())
	task := &tasks.Task{TaskID: "a", Status: tasks.Working, CreatedAt: time.Now(), TTLMs: &ttl}
	if err := st.Create(ctx, task); err != nil {
		t.Fatal(err)
	}
	done := *task
	done.Status = tasks.Cancelled
	if err := st.Update(ctx, &done); err != nil {
		t.Fatal(err)
	}
	late := *task
	late.Status = tasks.Completed
	if err := st.Update(ctx, &late); !errors.Is(err, tasks.ErrEnded) {
		t.Fatalf("update of a terminal task: %v", err)
	}
	if got, _ := st.Get(ctx, "a"); got.Status != tasks.Cancelled {
		t.Fatalf("status %s", got.Status)
	}
	if err := st.Update(ctx, &tasks.Task{TaskID: "b"}); !errors.Is(err, tasks.ErrNotFound) {
		t.Fatalf("update of an unknown task: %v", err)
	}
}
