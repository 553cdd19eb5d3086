package tasks_test

import (
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

	"github.com/roundtrip-mcp/roundtrip/internal/testutil"
	. "github.com/roundtrip-mcp/roundtrip/mcp"
	"github.com/roundtrip-mcp/roundtrip/mcp/tasks"
)

// taskLog records the tasks requests a server receives over HTTP
// (method and Mcp-Name) and the _meta capabilities of every request.
type taskLog struct {
	mu     sync.Mutex
	calls  []string // "method name"
	caps   []string // raw clientCapabilities, in order
	bodies []string // raw request bodies, in order
	ids    chan string
}

func newTaskLog() *taskLog { return &taskLog{ids: make(chan string, 64)} }

func (l *taskLog) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			b, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(b))
			var m struct {
				Params struct {
					Meta map[string]json.RawMessage `json:"_meta"`
				} `json:"params"`
			}
			_ = json.Unmarshal(b, &m)
			method, name := r.Header.Get(HeaderMethod), r.Header.Get(HeaderName)
			l.mu.Lock()
			l.calls = append(l.calls, method+" "+name)
			l.caps = append(l.caps, string(m.Params.Meta[MetaClientCapabilities]))
			l.bodies = append(l.bodies, string(b))
			l.mu.Unlock()
			if method == tasks.MethodGet {
				select {
				case l.ids <- name:
				default:
				}
			}
		}
		h.ServeHTTP(w, r)
	})
}

func (l *taskLog) saw(call string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.calls {
		if c == call {
			return true
		}
	}
	return false
}

// taskURL serves s over loopback HTTP (through log when not nil).
func taskURL(t *testing.T, s *Server, log *taskLog) string {
	t.Helper()
	var h http.Handler = NewHTTPHandler(s, nil)
	if log != nil {
		h = log.wrap(h)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

func urlClient(t *testing.T, url string, opts *ClientOptions) *Client {
	t.Helper()
	c := NewClient(NewHTTPClientTransport(url, nil), opts)
	t.Cleanup(func() { c.Close() })
	return c
}

var fastTasks = tasks.Options{PollInterval: 5 * time.Millisecond}

// taskAnswers answers the task server's questions: First? → Ada,
// Second? → Bob, Who? → Cy.
func taskAnswers(keys chan<- string) *ClientOptions {
	return withTasks(&ClientOptions{Elicitation: func(ctx context.Context, r *ElicitRequest) (*ElicitResult, error) {
		if keys != nil {
			keys <- InputRequestKey(ctx)
		}
		name := map[string]string{"First?": "Ada", "Second?": "Bob", "Who?": "Cy"}[r.Message]
		return &ElicitResult{Action: ElicitAccept, Content: map[string]any{"name": name}}, nil
	}}, &tasks.ClientOptions{})
}

func TestClientTaskCompletes(t *testing.T) {
	t.Parallel()
	s, release, _ := newTaskServer(t, fastTasks)
	clientTransports(t, s, withTasks(&ClientOptions{}, &tasks.ClientOptions{}), func(t *testing.T, c *Client) {
		release <- "x"
		res, err := c.CallTool(context.Background(), "job", nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := resultText(t, res); got != "done x" {
			t.Fatalf("got %q", got)
		}
	})
}

func TestClientTaskWireOverHTTP(t *testing.T) {
	t.Parallel()
	s, release, _ := newTaskServer(t, fastTasks)
	log := newTaskLog()
	url := taskURL(t, s, log)
	on := urlClient(t, url, withTasks(&ClientOptions{}, &tasks.ClientOptions{}))
	release <- "x"
	if _, err := on.CallTool(context.Background(), "job", nil, nil); err != nil {
		t.Fatal(err)
	}
	id := <-log.ids
	if len(id) < 22 || !log.saw(tasks.MethodGet+" "+id) {
		t.Fatalf("tasks/get not sent with Mcp-Name = taskId: %v", log.calls)
	}
	for _, c := range log.caps {
		if !strings.Contains(c, `"extensions":{"io.modelcontextprotocol/tasks":{}}`) {
			t.Fatalf("a request did not declare the extension: %s", c)
		}
	}

	// Disabled: nothing declared, the task tool answers synchronously.
	log.mu.Lock()
	log.calls, log.caps = nil, nil
	log.mu.Unlock()
	off := urlClient(t, url, nil)
	res, err := off.CallTool(context.Background(), "job", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := resultText(t, res); got != "sync" {
		t.Fatalf("got %q", got)
	}
	for _, c := range log.caps {
		if strings.Contains(c, "extensions") {
			t.Fatalf("the extension is declared while disabled: %s", c)
		}
	}
	if _, err := tasks.Get(off, id, nil).Get(context.Background()); ErrorCode(err) != CodeMissingRequiredCapability {
		t.Fatalf("tasks/get without the extension: %v", err)
	}
}

func TestClientTaskElicitation(t *testing.T) {
	t.Parallel()
	s, _, _ := newTaskServer(t, fastTasks)
	keys := make(chan string, 8)
	clientTransports(t, s, taskAnswers(keys), func(t *testing.T, c *Client) {
		res, err := c.CallTool(context.Background(), "ask", nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := resultText(t, res); got != "Ada+Bob" {
			t.Fatalf("got %q", got)
		}
		if k1, k2 := <-keys, <-keys; k1 == "" || k1 == k2 {
			t.Fatalf("handler saw keys %q, %q", k1, k2)
		}
	})
}

func TestClientTaskMRTRBeforeTask(t *testing.T) {
	t.Parallel()
	s, _, _ := newTaskServer(t, fastTasks)
	clientTransports(t, s, taskAnswers(nil), func(t *testing.T, c *Client) {
		res, err := c.CallTool(context.Background(), "mrtr_then_task", nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := resultText(t, res); got != "hi Cy in a task: yes" {
			t.Fatalf("got %q", got)
		}
	})
}

func TestClientTaskFailed(t *testing.T) {
	t.Parallel()
	s, _, _ := newTaskServer(t, fastTasks)
	clientTransports(t, s, withTasks(&ClientOptions{}, &tasks.ClientOptions{}), func(t *testing.T, c *Client) {
		_, err := c.CallTool(context.Background(), "outcome", map[string]string{"Kind": "rpc"}, nil)
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeInvalidParams || e.Message != "bad input" {
			t.Fatalf("want the task's -32602 error, got %v", err)
		}
		res, err := c.CallTool(context.Background(), "outcome", map[string]string{"Kind": "err"}, nil)
		if err != nil || !res.IsError {
			t.Fatalf("a plain error is an isError result: %+v, %v", res, err)
		}
	})
}

func TestClientTaskCancelledElsewhere(t *testing.T) {
	t.Parallel()
	s, _, stopped := newTaskServer(t, fastTasks)
	log := newTaskLog()
	url := taskURL(t, s, log)
	c := urlClient(t, url, withTasks(&ClientOptions{}, &tasks.ClientOptions{}))
	other := urlClient(t, url, withTasks(&ClientOptions{}, &tasks.ClientOptions{}))
	errc := make(chan error, 1)
	go func() {
		_, err := c.CallTool(context.Background(), "job", nil, nil)
		errc <- err
	}()
	id := <-log.ids
	if err := tasks.Get(other, id, nil).Cancel(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; !errors.Is(err, tasks.ErrCancelled) {
		t.Fatalf("want tasks.ErrCancelled, got %v", err)
	}
	<-stopped
	// Cancelling an ended task is an acknowledgement.
	if err := tasks.Get(other, id, nil).Cancel(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestClientTaskContextCancelSendsCancel(t *testing.T) {
	t.Parallel()
	s, _, stopped := newTaskServer(t, fastTasks)
	log := newTaskLog()
	url := taskURL(t, s, log)
	c := urlClient(t, url, withTasks(&ClientOptions{}, &tasks.ClientOptions{}))
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := c.CallTool(ctx, "job", nil, nil)
		errc <- err
	}()
	id := <-log.ids
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled, got %v", err)
	}
	waitStopped(t, stopped, context.Canceled)
	if !log.saw(tasks.MethodCancel + " " + id) {
		t.Fatalf("no tasks/cancel for %s: %v", id, log.calls)
	}
	st, err := tasks.Get(c, id, nil).Get(context.Background())
	if err != nil || st.Status != tasks.Cancelled {
		t.Fatalf("state after cancel: %+v, %v", st, err)
	}
}

func TestClientTaskDetachedAndResumed(t *testing.T) {
	t.Parallel()
	s, release, _ := newTaskServer(t, fastTasks)
	url := taskURL(t, s, nil)
	c := urlClient(t, url, withTasks(&ClientOptions{}, &tasks.ClientOptions{}))
	_, err := c.CallTool(tasks.Detached(context.Background()), "job", nil, nil)
	var pe *tasks.PendingError
	if !errors.As(err, &pe) || pe.Task.ID == "" || pe.Seed.Status != tasks.Working || pe.Tool != "job" {
		t.Fatalf("want a *tasks.PendingError, got %v", err)
	}
	id := pe.Task.ID // what an app persists

	other := urlClient(t, url, withTasks(&ClientOptions{}, &tasks.ClientOptions{}))
	h := tasks.Get(other, id, nil)
	st, err := h.Get(context.Background())
	if err != nil || st.Status != tasks.Working || st.TaskID != id || st.PollIntervalMs != 5 {
		t.Fatalf("get: %+v, %v", st, err)
	}
	release <- "later"
	res, err := h.Wait(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := resultText(t, res); got != "done later" {
		t.Fatalf("got %q", got)
	}
	// Wait's ctx ending leaves the task alone.
	_, err = c.CallTool(context.Background(), "job", nil, &CallOptions{Manual: true})
	if !errors.As(err, &pe) {
		t.Fatalf("Manual implies DetachTask: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if _, err := pe.Task.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want the deadline, got %v", err)
	}
	if st, err := pe.Task.Get(context.Background()); err != nil || st.Status != tasks.Working {
		t.Fatalf("Wait's deadline touched the task: %+v, %v", st, err)
	}
	if err := pe.Task.Cancel(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := pe.Task.Wait(context.Background()); !errors.Is(err, tasks.ErrCancelled) {
		t.Fatalf("want tasks.ErrCancelled, got %v", err)
	}
	if _, err := tasks.Get(other, "nope", nil).Get(context.Background()); ErrorCode(err) != CodeInvalidParams {
		t.Fatalf("unknown task: %v", err)
	}
}

func TestClientTaskManualUpdate(t *testing.T) {
	t.Parallel()
	s, _, _ := newTaskServer(t, fastTasks)
	clientTransports(t, s, withTasks(&ClientOptions{Capabilities: &ClientCapabilities{
		Elicitation: &ElicitationCapabilities{Form: json.RawMessage(`{}`)}}}, &tasks.ClientOptions{}), func(t *testing.T, c *Client) {
		_, err := c.CallTool(tasks.Detached(context.Background()), "ask", nil, nil)
		var pe *tasks.PendingError
		if !errors.As(err, &pe) {
			t.Fatalf("want a *tasks.PendingError, got %v", err)
		}
		h := pe.Task
		for _, want := range []string{"First?", "Second?"} {
			var st *tasks.Task
			testutil.Eventually(t, 5*time.Second, "the task to ask", func() bool {
				st, err = h.Get(context.Background())
				return err != nil || st.Status == tasks.InputRequired
			})
			if err != nil {
				t.Fatalf("no input_required: %+v %v", st, err)
			}
			if len(st.InputRequests) != 1 {
				t.Fatalf("want one question: %+v", st.InputRequests)
			}
			for k, raw := range st.InputRequests {
				var r struct {
					Method string `json:"method"`
					Params struct {
						Message string `json:"message"`
					} `json:"params"`
				}
				if err := json.Unmarshal(raw, &r); err != nil || r.Method != MethodElicit || r.Params.Message != want {
					t.Fatalf("question %s: %v", raw, err)
				}
				if err := h.Update(context.Background(), InputResponses{k: json.RawMessage(`{"action":"accept","content":{"name":"` + want[:1] + `"}}`)}); err != nil {
					t.Fatal(err)
				}
			}
		}
		// No handler on this client: nothing is left to answer.
		res, err := h.Wait(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if got := resultText(t, res); got != "F+S" {
			t.Fatalf("got %q", got)
		}
	})
}

func TestClientTaskServerWithoutTasks(t *testing.T) {
	t.Parallel()
	s := NewServer(Implementation{Name: "plain", Version: "1"}, nil)
	s.AddTool(&Tool{Name: "plain"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		if _, err := tasks.Start(ctx); err != nil || tasks.InTask(ctx) {
			return nil, errors.New("tasks.Start must be a no-op here")
		}
		return TextResult("plain"), nil
	})
	clientTransports(t, s, withTasks(&ClientOptions{}, &tasks.ClientOptions{}), func(t *testing.T, c *Client) {
		res, err := c.CallTool(context.Background(), "plain", nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := resultText(t, res); got != "plain" {
			t.Fatalf("got %q", got)
		}
		if _, err := tasks.Get(c, "x", nil).Get(context.Background()); ErrorCode(err) != CodeMethodNotFound {
			t.Fatalf("tasks/get on a server without tasks: %v", err)
		}
	})
}

// TestClientTaskMalformed serves hand-written task answers: each bad one
// fails the call with an *InvalidResponseError (never a panic), and the
// client gives the task up with tasks/cancel.
func TestClientTaskMalformed(t *testing.T) {
	t.Parallel()
	const seed = `{"resultType":"task","taskId":"t1","status":"working","pollIntervalMs":1}`
	cases := map[string]string{
		"unknown status":      `{"taskId":"t1","status":"sleeping"}`,
		"other task":          `{"taskId":"t2","status":"working"}`,
		"no taskId":           `{"status":"working"}`,
		"completed no result": `{"taskId":"t1","status":"completed"}`,
		"completed input":     `{"taskId":"t1","status":"completed","result":{"resultType":"input_required","requestState":"s"}}`,
		"failed no error":     `{"taskId":"t1","status":"failed"}`,
		"bad inputRequests":   `{"taskId":"t1","status":"input_required","inputRequests":[1]}`,
		"unknown request":     `{"taskId":"t1","status":"input_required","inputRequests":{"k":{"method":"tasks/get"}}}`,
		"status not string":   `{"taskId":"t1","status":7}`,
	}
	for name, get := range cases {
		t.Run(name, func(t *testing.T) {
			var mu sync.Mutex
			var methods []string
			c := rawHTTPClient(t, func(w http.ResponseWriter, r *http.Request) {
				in := readRPC(t, r)
				mu.Lock()
				methods = append(methods, in.Method)
				mu.Unlock()
				switch in.Method {
				case MethodToolsCall:
					writeResult(w, in, seed)
				case tasks.MethodGet:
					writeResult(w, in, get)
				default:
					writeResult(w, in, `{}`)
				}
			}, nil, fixtureHandlers(withTasks(&ClientOptions{}, &tasks.ClientOptions{})))
			_, err := c.CallTool(context.Background(), "x", nil, nil)
			if !errors.Is(err, ErrInvalidResponse) {
				t.Fatalf("want an invalid response, got %v", err)
			}
			mu.Lock()
			defer mu.Unlock()
			if methods[len(methods)-1] != tasks.MethodCancel {
				t.Fatalf("task not given up: %v", methods)
			}
		})
	}
	t.Run("not declared", func(t *testing.T) {
		c := rawHTTPClient(t, func(w http.ResponseWriter, r *http.Request) {
			writeResult(w, readRPC(t, r), seed)
		}, nil, nil)
		if _, err := c.CallTool(context.Background(), "x", nil, nil); !errors.Is(err, ErrUnknownResultType) {
			t.Fatalf("a task the client did not ask for: %v", err)
		}
	})
	t.Run("task on another method", func(t *testing.T) {
		c := rawHTTPClient(t, func(w http.ResponseWriter, r *http.Request) {
			writeResult(w, readRPC(t, r), seed)
		}, nil, withTasks(&ClientOptions{}, &tasks.ClientOptions{}))
		if _, err := c.GetPrompt(context.Background(), "x", nil, nil); !errors.Is(err, ErrUnknownResultType) {
			t.Fatalf("a task for prompts/get: %v", err)
		}
	})
}

// TestClientTaskBounds: at most MaxInputRequests answered per status
// (the server's pollIntervalMs within the client's bounds:
// TestPollIntervalAndInputsStayWithinTheClientsBounds).
func TestClientTaskBounds(t *testing.T) {
	t.Parallel()
	q := json.RawMessage(`{"method":"roots/list","params":{}}`)
	// Over the wire: three questions in one status, one answered per
	// tasks/update.
	var mu sync.Mutex
	var updates []string
	c := rawHTTPClient(t, func(w http.ResponseWriter, r *http.Request) {
		in := readRPC(t, r)
		switch in.Method {
		case MethodToolsCall:
			writeResult(w, in, `{"resultType":"task","taskId":"t1","status":"input_required","pollIntervalMs":1,"inputRequests":{"a":`+string(q)+`,"b":`+string(q)+`,"c":`+string(q)+`}}`)
		case tasks.MethodUpdate:
			mu.Lock()
			updates = append(updates, string(in.Params.InputResponses))
			mu.Unlock()
			writeResult(w, in, `{}`)
		case tasks.MethodGet:
			mu.Lock()
			n := len(updates)
			mu.Unlock()
			if n < 3 {
				writeResult(w, in, `{"taskId":"t1","status":"input_required","inputRequests":{"a":`+string(q)+`,"b":`+string(q)+`,"c":`+string(q)+`}}`)
				return
			}
			writeResult(w, in, `{"taskId":"t1","status":"completed","result":{"content":[{"type":"text","text":"ok"}]}}`)
		}
	}, nil, fixtureHandlers(withTasks(&ClientOptions{}, &tasks.ClientOptions{MaxInputRequests: 1})))
	res, err := c.CallTool(context.Background(), "x", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resultText(t, res) != "ok" || len(updates) != 3 {
		t.Fatalf("updates %v", updates)
	}
	for i, k := range []string{"a", "b", "c"} {
		if !strings.HasPrefix(updates[i], `{"`+k+`":`) || strings.Count(updates[i], `"roots"`) != 1 {
			t.Fatalf("update %d: %s", i, updates[i])
		}
	}
}

// TestClientTaskLegacySession: a 2025-11-25 session never declares the
// extension, and a tool the client has not seen listed gets an ordinary
// tools/call.
func TestClientTaskLegacySession(t *testing.T) {
	t.Parallel()
	s, _, _ := newTaskServer(t, fastTasks)
	log := newTaskLog()
	c := urlClient(t, taskURL(t, s, log), withTasks(&ClientOptions{Mode: ModeLegacy}, &tasks.ClientOptions{}))
	res, err := c.CallTool(context.Background(), "job", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := resultText(t, res); got != "sync" {
		t.Fatalf("got %q", got)
	}
	// tasks/get is a method of 2025-11-25 too: it is sent, and the
	// server, which serves that revision's tasks, knows no task "x".
	if _, err := tasks.Get(c, "x", nil).Get(context.Background()); ErrorCode(err) != CodeInvalidParams {
		t.Fatalf("tasks/get on a legacy session: %v", err)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	for _, b := range log.bodies {
		if strings.Contains(b, tasks.Extension) {
			t.Fatalf("a session's request declares the extension: %s", b)
		}
	}
}
