package redistasks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/roundtrip-mcp/roundtrip/mcp"
	"github.com/roundtrip-mcp/roundtrip/mcp/tasks"
	"github.com/roundtrip-mcp/roundtrip/redis/redistest"
)

// instance is one server of a fleet on loopback HTTP, sharing nothing
// with the others but Redis. Its Redis client is its own, so that
// closing it cuts the instance off as a crash would.
type instance struct {
	s       *mcp.Server
	store   *Store
	rdb     *redis.Client
	hs      *httptest.Server
	release chan string   // lets "job" finish
	stopped chan error    // "job" reports its context ending
	asked   chan struct{} // "ask" is about to ask
}

type instanceOptions struct {
	lease     time.Duration
	maxBytes  int
	maxSignal int
}

func newInstance(t *testing.T, sock string, o instanceOptions) *instance {
	t.Helper()
	in := &instance{rdb: redis.NewClient(&redis.Options{Network: "unix", Addr: sock, MaxRetries: -1}),
		release: make(chan string, 4), stopped: make(chan error, 4), asked: make(chan struct{}, 4)}
	t.Cleanup(func() { in.rdb.Close() })
	in.store = New(in.rdb, &Options{Lease: o.lease, MaxBytes: o.maxBytes, MaxSignalBytes: o.maxSignal})
	in.s = mcp.NewServer(mcp.Implementation{Name: "fleet", Version: "1"}, &mcp.ServerOptions{
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	rt := tasks.Enable(in.s, &tasks.Options{Store: in.store, PollInterval: 10 * time.Millisecond})
	t.Cleanup(func() { in.s.Close() })
	in.s.AddTool(&mcp.Tool{Name: "job"}, func(ctx context.Context, r *mcp.CallToolRequest) (mcp.ToolResponse, error) {
		ctx, err := tasks.Start(ctx)
		if err != nil {
			return nil, err
		}
		select {
		case v := <-in.release:
			return mcp.TextResult("done " + v), nil
		case <-ctx.Done():
			in.stopped <- ctx.Err()
			return nil, ctx.Err()
		}
	}, rt.Support(tasks.Optional))
	in.s.AddTool(&mcp.Tool{Name: "ask"}, func(ctx context.Context, r *mcp.CallToolRequest) (mcp.ToolResponse, error) {
		ctx, err := tasks.Start(ctx)
		if err != nil {
			return nil, err
		}
		in.asked <- struct{}{}
		who, err := mcp.Elicit[struct {
			Name string `json:"name"`
		}](ctx, "Who?")
		if err != nil {
			return nil, err
		}
		return mcp.TextResult("hello " + who.Content.Name), nil
	}, rt.Support(tasks.Optional))
	in.s.AddTool(&mcp.Tool{Name: "big"}, func(ctx context.Context, r *mcp.CallToolRequest) (mcp.ToolResponse, error) {
		if _, err := tasks.Start(ctx); err != nil {
			return nil, err
		}
		return mcp.TextResult(strings.Repeat("x", 4000)), nil
	}, rt.Support(tasks.Optional))
	in.hs = httptest.NewServer(withTestUser(mcp.NewHTTPHandler(in.s, nil)))
	t.Cleanup(in.hs.Close)
	return in
}

// kill makes the instance vanish as a crashed process does: its Redis
// connection goes (so nothing more it writes lands, and its renewals
// stop), then its server; its tasks were never finished in the store.
func (in *instance) kill() {
	in.rdb.Close()
	in.hs.Close()
	in.s.Close()
}

// withTestUser stands in for authentication middleware: the X-Test-User
// header becomes the verified token's subject.
func withTestUser(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u := r.Header.Get("X-Test-User"); u != "" {
			r = r.WithContext(mcp.WithTokenInfo(r.Context(), &mcp.TokenInfo{ClientID: "app", Issuer: "https://issuer.example", Subject: u}))
		}
		h.ServeHTTP(w, r)
	})
}

// client returns a client of the given instances as user; with several,
// a round-robin balancer sends each request to the next.
func client(t *testing.T, user string, ask func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error), ins ...*instance) *mcp.Client {
	t.Helper()
	if ask == nil { // declare the capability; the tests answer themselves
		ask = func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return nil, errors.New("not answered here")
		}
	}
	var n atomic.Int64
	hc := &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
		to := ins[int(n.Add(1)-1)%len(ins)]
		u, _ := url.Parse(to.hs.URL)
		r = r.Clone(r.Context())
		r.URL.Host, r.Host = u.Host, u.Host
		return http.DefaultTransport.RoundTrip(r)
	})}
	c := mcp.NewClient(mcp.NewHTTPClientTransport(ins[0].hs.URL, &mcp.HTTPClientOptions{HTTPClient: hc, Header: http.Header{"X-Test-User": {user}}}),
		withTasks(&mcp.ClientOptions{Elicitation: ask}, &tasks.ClientOptions{PollInterval: 10 * time.Millisecond}))
	t.Cleanup(func() { c.Close() })
	return c
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// start calls tool through c, detached, and returns the task id.
func start(t *testing.T, c *mcp.Client, tool string) string {
	t.Helper()
	_, err := c.CallTool(tasks.Detached(ctxT(t)), tool, nil, nil)
	var pe *tasks.PendingError
	if !errors.As(err, &pe) {
		t.Fatalf("%s did not become a task: %v", tool, err)
	}
	return pe.Task.ID
}

// await polls h until cond holds.
func await(t *testing.T, h *tasks.Handle, cond func(*tasks.Task) bool) *tasks.Task {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		task, err := h.Get(ctxT(t))
		if err != nil {
			t.Fatalf("tasks/get: %v", err)
		}
		if cond(task) {
			return task
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s: condition not reached; last state %+v", h.ID, task)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func status(s tasks.Status) func(*tasks.Task) bool {
	return func(t *tasks.Task) bool { return t.Status == s }
}

func resultText(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var r struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal(raw, &r); err != nil || len(r.Content) == 0 {
		t.Fatalf("result %s: %v", raw, err)
	}
	return r.Content[0].Text
}

// A task started on A is polled, answered (tasks/update) and read on B:
// the answer reaches the handler running on A, and the record in Redis
// carries the principal.
func TestTaskStartedOnOneInstanceIsServedByAnother(t *testing.T) {
	sock := redistest.Start(t)
	a, b := newInstance(t, sock, instanceOptions{}), newInstance(t, sock, instanceOptions{})
	id := start(t, client(t, "alice", nil, a), "ask")
	onB := tasks.Get(client(t, "alice", nil, b), id, nil)

	task := await(t, onB, status(tasks.InputRequired))
	if len(task.InputRequests) != 1 {
		t.Fatalf("input requests %v", task.InputRequests)
	}
	for key := range task.InputRequests {
		if err := onB.Update(ctxT(t), mcp.InputResponses{key: json.RawMessage(`{"action":"accept","content":{"name":"Ada"}}`)}); err != nil {
			t.Fatal(err)
		}
	}
	task = await(t, onB, status(tasks.Completed))
	if got := resultText(t, task.Result); got != "hello Ada" {
		t.Fatalf("result %q", got)
	}
	rec, err := redistest.Client(t, sock).HGetAll(context.Background(), a.store.Key(id)).Result()
	if err != nil {
		t.Fatal(err)
	}
	if rec["p"] != `["app","https://issuer.example","alice"]` || rec["o"] != a.store.Owner() || rec["s"] != "completed" {
		t.Fatalf("record %v", rec)
	}
	if strings.Contains(rec["t"], "alice") {
		t.Fatalf("the principal is inside the reported state: %s", rec["t"])
	}
}

// Answers delivered from another instance are validated by the asking
// handler exactly as local ones: an invalid one ends the question with
// an isError result.
func TestAnswersFromAnotherInstanceAreValidated(t *testing.T) {
	sock := redistest.Start(t)
	a, b := newInstance(t, sock, instanceOptions{}), newInstance(t, sock, instanceOptions{})
	id := start(t, client(t, "alice", nil, a), "ask")
	onB := tasks.Get(client(t, "alice", nil, b), id, nil)
	task := await(t, onB, status(tasks.InputRequired))
	for key := range task.InputRequests {
		if err := onB.Update(ctxT(t), mcp.InputResponses{key: json.RawMessage(`{"action":"accept","content":{"name":12}}`)}); err != nil {
			t.Fatal(err)
		}
	}
	task = await(t, onB, status(tasks.Completed))
	if !bytes.Contains(task.Result, []byte(`"isError":true`)) {
		t.Fatalf("an invalid answer was accepted: %s", task.Result)
	}
}

// A client behind a round-robin balancer follows a task with questions
// to its end: every request lands on the other instance.
func TestTasksWorkBehindARoundRobinBalancer(t *testing.T) {
	sock := redistest.Start(t)
	a, b := newInstance(t, sock, instanceOptions{}), newInstance(t, sock, instanceOptions{})
	ask := func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: map[string]any{"name": "Bo"}}, nil
	}
	res, err := client(t, "alice", ask, a, b).CallTool(ctxT(t), "ask", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; got != "hello Bo" {
		t.Fatalf("result %q", got)
	}
}

// tasks/cancel on B marks the task cancelled at once and cancels the
// handler's context on A.
func TestTaskCancelledOnAnotherInstanceStopsItsHandler(t *testing.T) {
	sock := redistest.Start(t)
	a, b := newInstance(t, sock, instanceOptions{}), newInstance(t, sock, instanceOptions{})
	id := start(t, client(t, "alice", nil, a), "job")
	onB := tasks.Get(client(t, "alice", nil, b), id, nil)
	if err := onB.Cancel(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if task, err := onB.Get(ctxT(t)); err != nil || task.Status != tasks.Cancelled {
		t.Fatalf("after cancel: %+v %v", task, err)
	}
	select {
	case err := <-a.stopped:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the handler's context ended with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the handler on A was not cancelled")
	}
	// Idempotent, and the state stays cancelled.
	if err := onB.Cancel(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if task, _ := onB.Get(ctxT(t)); task.Status != tasks.Cancelled {
		t.Fatalf("status %s", task.Status)
	}
}

// An instance that dies with a task running: B reports the task failed
// (the instance running it stopped) within the lease, not forever
// working.
func TestTaskOfADeadInstanceIsReportedFailed(t *testing.T) {
	const lease = 300 * time.Millisecond
	sock := redistest.Start(t)
	a, b := newInstance(t, sock, instanceOptions{lease: lease}), newInstance(t, sock, instanceOptions{lease: lease})
	id := start(t, client(t, "alice", nil, a), "job")
	onB := tasks.Get(client(t, "alice", nil, b), id, nil)
	// Renewals keep it running well past one lease.
	time.Sleep(2 * lease)
	if task, err := onB.Get(ctxT(t)); err != nil || task.Status != tasks.Working {
		t.Fatalf("a live task: %+v %v", task, err)
	}
	a.kill()
	killed := time.Now()
	task := await(t, onB, func(t *tasks.Task) bool { return t.Status.Terminal() })
	elapsed := time.Since(killed)
	if task.Status != tasks.Failed || task.Error == nil || task.Error.Code != mcp.CodeInternalError || !strings.Contains(task.Error.Message, "stopped") {
		t.Fatalf("dead instance's task: %+v (error %+v)", task, task.Error)
	}
	t.Logf("reported failed %v after the instance died (lease %v)", elapsed, lease)
	if elapsed > lease+time.Second {
		t.Fatalf("reported failed %v after the instance died; the lease is %v", elapsed, lease)
	}
	// The failure is stored: every later read agrees.
	if again, _ := onB.Get(ctxT(t)); again.Status != tasks.Failed {
		t.Fatalf("status %s", again.Status)
	}
}

// A slow owner whose lease lapsed, and a reader that failed its task:
// the reader's state stands, the owner's late result is refused, and the
// owner stops the handler at its next renewal.
func TestLapsedLeaseFailsTheTaskForEveryone(t *testing.T) {
	sock := redistest.Start(t)
	rdb := redistest.Client(t, sock)
	// A long lease: no renewal happens while the test runs.
	a, b := newInstance(t, sock, instanceOptions{lease: time.Hour}), newInstance(t, sock, instanceOptions{lease: time.Hour})
	id := start(t, client(t, "alice", nil, a), "job")
	onB := tasks.Get(client(t, "alice", nil, b), id, nil)
	if task, _ := onB.Get(ctxT(t)); task.Status != tasks.Working {
		t.Fatalf("status %s", task.Status)
	}
	rdb.Del(context.Background(), a.store.leaseKey(id)) // the lease lapses
	task, err := onB.Get(ctxT(t))
	if err != nil || task.Status != tasks.Failed {
		t.Fatalf("lapsed lease: %+v %v", task, err)
	}
	a.release <- "late"
	time.Sleep(50 * time.Millisecond) // the handler returns, its write is refused
	if task, _ := onB.Get(ctxT(t)); task.Status != tasks.Failed || task.Result != nil {
		t.Fatalf("the late result replaced the failure: %+v", task)
	}
	ended, err := a.store.Renew(context.Background(), []string{id})
	if err != nil || len(ended) != 1 {
		t.Fatalf("renew of a failed task: %v %v", ended, err)
	}
}

// A task that ended in the store without its owner hearing of it (the
// cancellation signal lost, say) is stopped at the owner's next renewal.
func TestOwnerStopsTasksThatEndedElsewhere(t *testing.T) {
	const lease = 300 * time.Millisecond
	sock := redistest.Start(t)
	a := newInstance(t, sock, instanceOptions{lease: lease})
	id := start(t, client(t, "alice", nil, a), "job")
	other := New(redistest.Client(t, sock), nil)
	task, err := other.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	failed := *task
	failed.Status, failed.Error = tasks.Failed, mcp.NewError(mcp.CodeInternalError, "stopped by an operator", nil)
	if err := other.Update(context.Background(), &failed); err != nil { // no signal to A
		t.Fatal(err)
	}
	select {
	case err := <-a.stopped:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the handler's context ended with %v", err)
		}
	case <-time.After(lease + 2*time.Second):
		t.Fatal("the owner did not stop a task that ended in the store")
	}
	if got, _ := other.Get(context.Background(), id); got.Status != tasks.Failed || got.Error.Message != "stopped by an operator" {
		t.Fatalf("state %+v", got)
	}
}

// The store's atomic check: a reader finding the lease lapsed and an
// owner writing its final state never leave them disagreeing.
func TestLapsedLeaseAndLiveOwnerAgree(t *testing.T) {
	sock := redistest.Start(t)
	rdb := redistest.Client(t, sock)
	owner, reader := New(rdb, nil), New(rdb, nil)
	ctx := context.Background()
	ttl := time.Hour.Milliseconds()
	for i := range 50 {
		id := "race" + strings.Repeat("x", i%3) + string(rune('a'+i%26)) + string(rune('a'+i/26))
		task := &tasks.Task{TaskID: id, Status: tasks.Working, CreatedAt: time.Now(), TTLMs: &ttl}
		if err := owner.Create(ctx, task); err != nil {
			t.Fatal(err)
		}
		rdb.Del(ctx, owner.leaseKey(id))
		done := *task
		done.Status, done.Result = tasks.Completed, json.RawMessage(`{"content":[]}`)
		var wg sync.WaitGroup
		var seen *tasks.Task
		var upErr, getErr error
		wg.Add(2)
		go func() { defer wg.Done(); upErr = owner.Update(ctx, &done) }()
		go func() { defer wg.Done(); seen, getErr = reader.Get(ctx, id) }()
		wg.Wait()
		final, err := reader.Get(ctx, id)
		if getErr != nil || err != nil {
			t.Fatal(getErr, err)
		}
		switch {
		case upErr == nil: // the owner first: completed for everyone
			if final.Status != tasks.Completed || (seen.Status != tasks.Completed && seen.Status != tasks.Working) {
				t.Fatalf("owner won, reader saw %s, final %s", seen.Status, final.Status)
			}
			if seen.Status == tasks.Working {
				t.Fatalf("the reader saw a running task without a lease and did not fail it")
			}
		case errors.Is(upErr, tasks.ErrEnded): // the reader first: failed for everyone
			if final.Status != tasks.Failed || seen.Status != tasks.Failed || !strings.Contains(final.Error.Message, "stopped") {
				t.Fatalf("reader won, saw %s, final %s", seen.Status, final.Status)
			}
		default:
			t.Fatal(upErr)
		}
	}
	// An owner that renews in time keeps its task running.
	task := &tasks.Task{TaskID: "renewed", Status: tasks.Working, CreatedAt: time.Now(), TTLMs: &ttl}
	if err := owner.Create(ctx, task); err != nil {
		t.Fatal(err)
	}
	rdb.Del(ctx, owner.leaseKey("renewed"))
	if ended, err := owner.Renew(ctx, []string{"renewed"}); err != nil || len(ended) != 0 {
		t.Fatalf("renew: %v %v", ended, err)
	}
	if got, _ := reader.Get(ctx, "renewed"); got.Status != tasks.Working {
		t.Fatalf("a renewed task: %s", got.Status)
	}
}

// Another principal on any instance gets exactly the unknown-task
// answer (same status, same bytes), and changes nothing.
func TestTasksOfAnotherPrincipalAreUnknownAcrossTheFleet(t *testing.T) {
	sock := redistest.Start(t)
	a, b := newInstance(t, sock, instanceOptions{}), newInstance(t, sock, instanceOptions{})
	alice := client(t, "alice", nil, a)
	job, asked := start(t, alice, "job"), start(t, alice, "ask")
	onB := client(t, "alice", nil, b)
	task := await(t, tasks.Get(onB, asked, nil), status(tasks.InputRequired))
	var key string
	for k := range task.InputRequests {
		key = k
	}
	answer := `,"inputResponses":{"` + key + `":{"action":"accept","content":{"name":"Mallory"}}}`
	const unknown = "AAAAAAAAAAAAAAAAAAAAAA"
	for _, in := range []*instance{a, b} {
		for _, tc := range []struct{ method, id, extra string }{
			{tasks.MethodGet, asked, ""},
			{tasks.MethodCancel, job, ""},
			{tasks.MethodUpdate, asked, answer},
		} {
			st, got := post(t, in, "bob", tc.method, tc.id, tc.extra)
			stU, want := post(t, in, "bob", tc.method, unknown, tc.extra)
			if st != stU || !bytes.Equal(got, want) {
				t.Fatalf("%s of another principal's task: %d %s\nunknown task: %d %s", tc.method, st, got, stU, want)
			}
			if tc.method != tasks.MethodUpdate && !bytes.Contains(got, []byte(`"code":-32602`)) {
				t.Fatalf("%s: %s", tc.method, got)
			}
		}
	}
	if task, _ := tasks.Get(onB, job, nil).Get(ctxT(t)); task.Status != tasks.Working {
		t.Fatalf("another principal cancelled the task: %s", task.Status)
	}
	if task, _ := tasks.Get(onB, asked, nil).Get(ctxT(t)); task.Status != tasks.InputRequired || task.InputRequests[key] == nil {
		t.Fatalf("another principal's answer reached the task: %+v", task)
	}
	select {
	case err := <-a.stopped:
		t.Fatalf("the handler stopped: %v", err)
	default:
	}
}

// post sends one tasks request (JSON-RPC id 7) to in as user and returns
// the status and the raw body.
func post(t *testing.T, in *instance, user, method, id, extra string) (int, []byte) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":7,"method":"` + method + `","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientCapabilities":{"elicitation":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}},"taskId":"` + id + `"` + extra + `}}`
	r, _ := http.NewRequest(http.MethodPost, in.hs.URL, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	r.Header.Set(mcp.HeaderProtocolVersion, "2026-07-28")
	r.Header.Set(mcp.HeaderMethod, method)
	r.Header.Set(mcp.HeaderName, id)
	r.Header.Set("X-Test-User", user)
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// A result the store cannot hold fails the task with an internal error
// rather than leaving it running until its lease lapses.
func TestStateOverTheStoreBoundFailsTheTask(t *testing.T) {
	sock := redistest.Start(t)
	a := newInstance(t, sock, instanceOptions{maxBytes: 2000})
	c := client(t, "alice", nil, a)
	id := start(t, c, "big")
	task := await(t, tasks.Get(c, id, nil), func(t *tasks.Task) bool { return t.Status.Terminal() })
	if task.Status != tasks.Failed || task.Error.Code != mcp.CodeInternalError || task.Result != nil {
		t.Fatalf("over the bound: %+v", task)
	}
	s := New(redistest.Client(t, sock), &Options{MaxBytes: 100})
	ttl := int64(60000)
	if err := s.Create(context.Background(), &tasks.Task{TaskID: "big", Status: tasks.Working, CreatedAt: time.Now(), TTLMs: &ttl, Result: json.RawMessage(`"` + strings.Repeat("x", 200) + `"`)}); err == nil {
		t.Fatal("a state over MaxBytes was stored")
	}
}

// Records expire with their task, leases after one lease; ids that are
// not the server's never reach Redis.
func TestRecordsExpireWithTheirTask(t *testing.T) {
	sock := redistest.Start(t)
	rdb := redistest.Client(t, sock)
	s := New(rdb, &Options{Lease: 2 * time.Second})
	ctx := context.Background()
	ttl := time.Minute.Milliseconds()
	if err := s.Create(ctx, &tasks.Task{TaskID: "t1", Status: tasks.Working, CreatedAt: time.Now(), TTLMs: &ttl, Principal: "p"}); err != nil {
		t.Fatal(err)
	}
	if d := rdb.PTTL(ctx, s.Key("t1")).Val(); d <= 59*time.Second || d > time.Minute+time.Second {
		t.Errorf("record lifetime %v, want the task's minute", d)
	}
	if d := rdb.PTTL(ctx, s.leaseKey("t1")).Val(); d <= time.Second || d > 2*time.Second {
		t.Errorf("lease lifetime %v, want 2s", d)
	}
	if err := s.Create(ctx, &tasks.Task{TaskID: "t1", Status: tasks.Working, CreatedAt: time.Now(), TTLMs: &ttl}); err == nil {
		t.Error("a second task under the same id was stored")
	}
	if err := s.Create(ctx, &tasks.Task{TaskID: "t2", Status: tasks.Working, CreatedAt: time.Now()}); err == nil {
		t.Error("a task without a TTL was stored")
	}
	for _, id := range []string{"", "a}b", "x:lease", strings.Repeat("a", 200)} {
		if _, err := s.Get(ctx, id); !errors.Is(err, tasks.ErrNotFound) {
			t.Errorf("Get(%q): %v", id, err)
		}
	}
	if _, err := s.Get(ctx, "nope"); !errors.Is(err, tasks.ErrNotFound) {
		t.Errorf("unknown id: %v", err)
	}
	if err := s.Signal(ctx, tasks.Signal{TaskID: "nope"}); !errors.Is(err, tasks.ErrNotFound) {
		t.Errorf("signal to an unknown task: %v", err)
	}
	if err := s.Cancel(ctx, &tasks.Task{TaskID: "nope", Status: tasks.Cancelled}); !errors.Is(err, tasks.ErrNotFound) {
		t.Errorf("cancel of an unknown task: %v", err)
	}
}

// Signals wait in the owner's inbox stream: sent while the owner is not
// reading (a brief disconnect), they are delivered when it reads again,
// each once, in order; entries that are not signals are skipped.
func TestSignalsSurviveABriefDisconnect(t *testing.T) {
	sock := redistest.Start(t)
	rdb := redistest.Client(t, sock)
	owner, other := New(rdb, nil), New(rdb, nil)
	owner.block = 50 * time.Millisecond
	ctx := context.Background()
	ttl := time.Minute.Milliseconds()
	if err := owner.Create(ctx, &tasks.Task{TaskID: "t1", Status: tasks.Working, CreatedAt: time.Now(), TTLMs: &ttl}); err != nil {
		t.Fatal(err)
	}
	receive := func(want int) []tasks.Signal {
		t.Helper()
		got := make(chan tasks.Signal, 16)
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- owner.Receive(rctx, func(s tasks.Signal) { got <- s }) }()
		var out []tasks.Signal
		for len(out) < want {
			select {
			case s := <-got:
				out = append(out, s)
			case <-time.After(5 * time.Second):
				t.Fatalf("received %d signals, want %d", len(out), want)
			}
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		select {
		case s := <-got:
			t.Fatalf("an extra signal %+v", s)
		default:
		}
		return out
	}
	if err := other.Signal(ctx, tasks.Signal{TaskID: "t1", InputResponses: json.RawMessage(`{"k":{"action":"decline"}}`)}); err != nil {
		t.Fatal(err)
	}
	inbox := owner.inbox(owner.Owner())
	rdb.XAdd(ctx, &redis.XAddArgs{Stream: inbox, Values: []any{"d", "not json"}})
	rdb.XAdd(ctx, &redis.XAddArgs{Stream: inbox, Values: []any{"d", `{"taskId":"a}b"}`}})
	if err := other.Signal(ctx, tasks.Signal{TaskID: "t1", Cancel: true}); err != nil {
		t.Fatal(err)
	}
	got := receive(2)
	if string(got[0].InputResponses) != `{"k":{"action":"decline"}}` || got[0].Cancel || !got[1].Cancel {
		t.Fatalf("signals %+v", got)
	}
	if err := other.Signal(ctx, tasks.Signal{TaskID: "t1", InputResponses: json.RawMessage(`{"k2":null}`)}); err != nil {
		t.Fatal(err)
	}
	if got := receive(1); string(got[0].InputResponses) != `{"k2":null}` {
		t.Fatalf("resumed with %+v", got)
	}
	if d := rdb.PTTL(ctx, inbox).Val(); d <= 0 {
		t.Errorf("the inbox never expires (%v)", d)
	}
}

// An owner's inbox holds at most MaxInboxBytes of signals not yet read,
// each at most MaxSignalBytes: past either bound the sender gets a clear
// error (-32602 for a signal too large, ErrTemporarilyUnavailable for a
// full inbox), and nothing sent is lost: every signal accepted is
// delivered, in order, and once read its bytes are free again.
func TestATaskInboxIsBoundedInBytes(t *testing.T) {
	sock := redistest.Start(t)
	rdb := redistest.Client(t, sock)
	o := &Options{MaxSignalBytes: 10 << 10, MaxInboxBytes: 64 << 10}
	owner, other := New(rdb, o), New(rdb, o)
	owner.block = 50 * time.Millisecond
	ctx := context.Background()
	ttl := time.Minute.Milliseconds()
	if err := owner.Create(ctx, &tasks.Task{TaskID: "t1", Status: tasks.InputRequired, CreatedAt: time.Now(), TTLMs: &ttl}); err != nil {
		t.Fatal(err)
	}
	answer := func(n, size int) tasks.Signal {
		return tasks.Signal{TaskID: "t1", InputResponses: json.RawMessage(
			fmt.Sprintf(`{"k":{"action":"accept","content":{"n":%d,"pad":%q}}}`, n, strings.Repeat("x", size)))}
	}
	var e *mcp.Error
	if err := other.Signal(ctx, answer(0, 20<<10)); !errors.As(err, &e) || e.Code != mcp.CodeInvalidParams || !strings.Contains(e.Message, "10240") {
		t.Fatalf("a signal of 20 KiB, over MaxSignalBytes: %v", err)
	}
	sent := 0
	for n := 1; ; n++ {
		err := other.Signal(ctx, answer(n, 8<<10))
		if err != nil {
			if !errors.Is(err, mcp.ErrTemporarilyUnavailable) {
				t.Fatalf("signal %d into a full inbox: %v, want ErrTemporarilyUnavailable", n, err)
			}
			break
		}
		if sent++; sent > 100 {
			t.Fatal("the inbox took 100 signals of 8 KiB under a bound of 64 KiB")
		}
	}
	held := 0
	for _, m := range rdb.XRange(ctx, owner.inbox(owner.Owner()), "-", "+").Val() {
		d, _ := m.Values["d"].(string)
		held += len(d)
	}
	if sent == 0 || held > 64<<10 {
		t.Fatalf("the inbox holds %d bytes in %d signals, bound 64 KiB", held, sent)
	}
	if err := other.Signal(ctx, tasks.Signal{TaskID: "t1", Cancel: true}); err != nil {
		t.Fatalf("a cancellation into a full inbox: %v", err)
	}

	got := make(chan tasks.Signal, 128)
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- owner.Receive(rctx, func(s tasks.Signal) { got <- s }) }()
	for n := 1; n <= sent+1; n++ {
		select {
		case s := <-got:
			if n <= sent && !strings.Contains(string(s.InputResponses), fmt.Sprintf(`"n":%d,`, n)) || n > sent && !s.Cancel {
				t.Fatalf("signal %d: %.40s (cancel %v)", n, s.InputResponses, s.Cancel)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("received %d signals of %d sent", n-1, sent+1)
		}
	}
	// Read: the bytes are free again.
	deadline := time.Now().Add(5 * time.Second)
	for rdb.XLen(ctx, owner.inbox(owner.Owner())).Val() != 0 || rdb.Get(ctx, owner.inboxBytes(owner.Owner())).Val() != "0" {
		if time.Now().After(deadline) {
			t.Fatalf("after reading: %d entries, %q bytes counted", rdb.XLen(ctx, owner.inbox(owner.Owner())).Val(), rdb.Get(ctx, owner.inboxBytes(owner.Owner())).Val())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := other.Signal(ctx, answer(99, 8<<10)); err != nil {
		t.Fatalf("a signal after the inbox was read: %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// A tasks/update whose answers are over the store's signal bound, sent
// to an instance that does not run the task, is answered -32602 naming
// the bound, not Internal error; the answers within it still arrive.
func TestAnAnswerOverTheSignalBoundIsRefusedToItsSender(t *testing.T) {
	sock := redistest.Start(t)
	o := instanceOptions{maxSignal: 1024}
	a, b := newInstance(t, sock, o), newInstance(t, sock, o)
	id := start(t, client(t, "alice", nil, a), "ask")
	onB := tasks.Get(client(t, "alice", nil, b), id, nil)
	task := await(t, onB, status(tasks.InputRequired))
	for key := range task.InputRequests {
		big := fmt.Sprintf(`{"action":"accept","content":{"name":%q}}`, strings.Repeat("A", 4096))
		err := onB.Update(ctxT(t), mcp.InputResponses{key: json.RawMessage(big)})
		var e *mcp.Error
		if !errors.As(err, &e) || e.Code != mcp.CodeInvalidParams || !strings.Contains(e.Message, "1024") {
			t.Fatalf("answers of 4 KiB over a bound of 1 KiB: %v", err)
		}
		if err := onB.Update(ctxT(t), mcp.InputResponses{key: json.RawMessage(`{"action":"accept","content":{"name":"Ada"}}`)}); err != nil {
			t.Fatal(err)
		}
	}
	if task = await(t, onB, status(tasks.Completed)); resultText(t, task.Result) != "hello Ada" {
		t.Fatalf("result %s", task.Result)
	}
}

// withTasks enables the tasks extension on o.
func withTasks(o *mcp.ClientOptions, to *tasks.ClientOptions) *mcp.ClientOptions {
	tasks.EnableClient(o, to)
	return o
}
