package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/testutil"
)

func resultText(t testing.TB, r *CallToolResult) string {
	t.Helper()
	if r == nil || len(r.Content) != 1 {
		t.Fatalf("want one content block, got %+v", r)
	}
	tc, ok := r.Content[0].(*TextContent)
	if !ok {
		t.Fatalf("want text, got %T", r.Content[0])
	}
	if r.IsError {
		t.Fatalf("tool error: %s", tc.Text)
	}
	return tc.Text
}

func TestClientLoopsThroughThreeRounds(t *testing.T) {
	t.Parallel()
	f := newClientFixture(t)
	// Sampling and roots come in the same round: each handler waits until
	// the other has started, which only works if they run concurrently.
	var barrier sync.WaitGroup
	opts := fixtureHandlers(nil)
	sample, roots := opts.Sampling, opts.Roots
	keys := make(chan string, 8)
	wait := func(ctx context.Context) error {
		keys <- InputRequestKey(ctx)
		barrier.Done()
		done := make(chan struct{})
		go func() { barrier.Wait(); close(done) }()
		select {
		case <-done:
			return nil
		case <-time.After(5 * time.Second):
			return errors.New("the other handler of the round never started")
		}
	}
	opts.Sampling = func(ctx context.Context, r *CreateMessageRequest) (*CreateMessageResult, error) {
		if err := wait(ctx); err != nil {
			return nil, err
		}
		return sample(ctx, r)
	}
	opts.Roots = func(ctx context.Context, r *ListRootsRequest) (*ListRootsResult, error) {
		if err := wait(ctx); err != nil {
			return nil, err
		}
		return roots(ctx, r)
	}
	clientTransports(t, f.s, opts, func(t *testing.T, c *Client) {
		barrier.Add(2)
		res, err := c.CallTool(context.Background(), "three_rounds", map[string]string{"nonce": t.Name()}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := resultText(t, res), "Hello Ada, capital Paris, 2 roots, nonce "+t.Name(); got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
		if k1, k2 := <-keys, <-keys; k1+k2 != "capitalroots" && k1+k2 != "rootscapital" {
			t.Errorf("handlers saw keys %q and %q", k1, k2)
		}
	})
	legs := f.legs("three_rounds")
	if len(legs) != 6 {
		t.Fatalf("server saw %d legs, want 3 per transport", len(legs))
	}
	// Each retry carries the same _meta as the first leg.
	for _, l := range legs {
		if l.meta.ProtocolVersion != LatestProtocolVersion || l.meta.ClientCapabilities.Sampling == nil || l.meta.ClientInfo == nil {
			t.Errorf("leg without the full _meta: %+v", l.meta)
		}
	}
}

func TestClientRoundLimit(t *testing.T) {
	t.Parallel()
	f := newClientFixture(t)
	clientTransports(t, f.s, fixtureHandlers(&ClientOptions{MaxRounds: 3}), func(t *testing.T, c *Client) {
		before := len(f.legs("forever"))
		_, err := c.CallTool(context.Background(), "forever", nil, nil)
		var re *RoundsExceededError
		if !errors.As(err, &re) || re.MaxRounds != 3 || !errors.As(err, new(*RoundsExceededError)) {
			t.Fatalf("got %v, want a RoundsExceededError with MaxRounds 3", err)
		}
		if n := len(f.legs("forever")) - before; n != 4 {
			t.Errorf("server saw %d legs, want the first and 3 retries", n)
		}
		// A per-call bound overrides the client's.
		before = len(f.legs("forever"))
		_, err = c.CallTool(context.Background(), "forever", nil, &CallOptions{MaxRounds: 1})
		if !errors.As(err, &re) || re.MaxRounds != 1 {
			t.Fatalf("got %v", err)
		}
		if n := len(f.legs("forever")) - before; n != 2 {
			t.Errorf("server saw %d legs, want 2", n)
		}
	})
}

func TestClientStateOnlyRoundsBackOff(t *testing.T) {
	t.Parallel()
	f := newClientFixture(t)
	clientTransports(t, f.s, fixtureHandlers(nil), func(t *testing.T, c *Client) {
		var slept []time.Duration
		c.sleep = func(ctx context.Context, d time.Duration) error { slept = append(slept, d); return nil }
		// 5 state-only rounds, one with a question (resets), 2 more.
		res, err := c.CallTool(context.Background(), "state_only", map[string]int{"n": 5, "m": 2}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := resultText(t, res); got != "done after 9 rounds" {
			t.Fatalf("got %q", got)
		}
		ms := func(ds ...int) []time.Duration {
			var out []time.Duration
			for _, d := range ds {
				out = append(out, time.Duration(d)*time.Millisecond)
			}
			return out
		}
		if want := ms(50, 100, 200, 250, 250, 50, 100); fmt.Sprint(slept) != fmt.Sprint(want) {
			t.Fatalf("slept %v, want %v", slept, want)
		}
		// Each state-only retry echoes the state and sends no responses.
		for _, l := range f.legs("state_only")[1:5] {
			if l.responses != nil || !l.hasState {
				t.Errorf("state-only retry: responses %v, state %q", l.responses, l.state)
			}
		}
	})
}

func TestClientStateOnlyBackOffHonoursContext(t *testing.T) {
	t.Parallel()
	f := newClientFixture(t)
	c := memClient(t, f.s, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.CallTool(ctx, "state_only", map[string]int{"n": 100}, nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("took %v", d)
	}
}

func TestClientParallelCallsAreIsolated(t *testing.T) {
	t.Parallel()
	f := newClientFixture(t)
	clientTransports(t, f.s, fixtureHandlers(nil), func(t *testing.T, c *Client) {
		var wg sync.WaitGroup
		errs := make(chan error, 40)
		for i := range 20 {
			wg.Add(2)
			go func() {
				defer wg.Done()
				nonce := fmt.Sprintf("%s-%d", t.Name(), i)
				res, err := c.CallTool(context.Background(), "three_rounds", map[string]string{"nonce": nonce}, nil)
				if err == nil && !strings.HasSuffix(resultText(t, res), "nonce "+nonce) {
					err = fmt.Errorf("flow %s got %q", nonce, resultText(t, res))
				}
				errs <- err
			}()
			go func() {
				defer wg.Done()
				_, err := c.CallTool(context.Background(), "echo", map[string]string{"text": "x"}, nil)
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Error(err)
			}
		}
	})
	for _, l := range f.legs("echo") {
		if l.responses != nil || l.hasState {
			t.Errorf("an unrelated call carried inputResponses %v or requestState %q", l.responses, l.state)
		}
	}
}

func TestClientManualModeAndResumeInAnotherClient(t *testing.T) {
	t.Parallel()
	f := newClientFixture(t)
	clientTransports(t, f.s, nil, func(t *testing.T, c *Client) {
		_, err := c.CallTool(context.Background(), "three_rounds", map[string]string{"nonce": "n1"}, &CallOptions{Manual: true})
		var pe *PendingCallError
		if !errors.As(err, &pe) {
			t.Fatalf("got %v, want a PendingCallError", err)
		}
		if _, ok := pe.Result.InputRequests["name"].(*ElicitRequest); !ok || pe.Result.RequestState == "" {
			t.Fatalf("input required result: %+v", pe.Result)
		}
		// Persist, and resume from JSON in a brand-new client (another process).
		b, err := json.Marshal(pe.Call)
		if err != nil {
			t.Fatal(err)
		}
		var p PendingCall
		if err := json.Unmarshal(b, &p); err != nil {
			t.Fatalf("%v\n%s", err, b)
		}
		if p.Method != MethodToolsCall || p.Name != "three_rounds" || p.RequestState != pe.Result.RequestState || string(p.Arguments) != `{"nonce":"n1"}` {
			t.Fatalf("round-tripped pending call: %+v\n%s", p, b)
		}
		other := memClient(t, f.s, nil)
		next, err := other.Resume(context.Background(), &p, InputResponses{"name": json.RawMessage(`{"action":"accept","content":{"name":"Bo"}}`)}, &CallOptions{Manual: true})
		if !errors.As(err, &pe) || next != nil {
			t.Fatalf("round 2: got %v, %v", next, err)
		}
		if len(pe.Call.InputRequests) != 2 {
			t.Fatalf("round 2 asks %v", pe.Call.InputRequests)
		}
		// The last round is answered automatically by a client with handlers.
		auto := memClient(t, f.s, fixtureHandlers(nil))
		res, err := auto.Resume(context.Background(), pe.Call, InputResponses{
			"capital": json.RawMessage(`{"role":"assistant","model":"m","content":{"type":"text","text":"Lyon"}}`),
			"roots":   json.RawMessage(`{"roots":[{"uri":"file:///x"}]}`),
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := resultText(t, res.(*CallToolResult)); got != "Hello Bo, capital Lyon, 1 roots, nonce n1" {
			t.Fatalf("got %q", got)
		}
		// Resume refuses to send a round with a missing answer.
		if _, err := auto.Resume(context.Background(), pe.Call, nil, nil); err == nil {
			t.Fatal("Resume without answers succeeded")
		}
	})
}

func TestPendingCallEchoesTheExactStateToken(t *testing.T) {
	t.Parallel()
	// A state with escapes that do not survive decoding (a lone
	// surrogate) must still go back as the server wrote it.
	token := `"a\ud800b\u003c\/"`
	var got atomic.Value
	c := rawHTTPClient(t, func(w http.ResponseWriter, r *http.Request) {
		in := readRPC(t, r)
		if in.Params.InputResponses == nil {
			writeResult(w, in, `{"resultType":"input_required","inputRequests":{"q":{"method":"elicitation/create","params":{"message":"?","requestedSchema":{"type":"object","properties":{}}}}},"requestState":`+token+`}`)
			return
		}
		i := strings.Index(string(in.raw), `"requestState":`)
		got.Store(string(in.raw[i+len(`"requestState":`):]))
		writeResult(w, in, `{"resultType":"complete","content":[]}`)
	}, nil, nil)
	_, err := c.CallTool(context.Background(), "t", nil, &CallOptions{Manual: true})
	var pe *PendingCallError
	if !errors.As(err, &pe) {
		t.Fatal(err)
	}
	b, _ := json.Marshal(pe.Call)
	var p PendingCall
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Resume(context.Background(), &p, InputResponses{"q": json.RawMessage(`{"action":"decline"}`)}, nil); err != nil {
		t.Fatal(err)
	}
	if s, _ := got.Load().(string); !strings.HasPrefix(s, token) {
		t.Fatalf("state echoed as %s, want %s", s, token)
	}
}

// A call can start from answers and state persisted elsewhere.
func TestClientCallSeededWithResponsesAndState(t *testing.T) {
	t.Parallel()
	f := newClientFixture(t)
	clientTransports(t, f.s, fixtureHandlers(nil), func(t *testing.T, c *Client) {
		args := map[string]string{"nonce": "seed"}
		_, err := c.CallTool(context.Background(), "three_rounds", args, &CallOptions{Manual: true})
		var pe *PendingCallError
		if !errors.As(err, &pe) {
			t.Fatal(err)
		}
		state := pe.Result.RequestState // persisted somewhere, as a plain string
		before := len(f.legs("three_rounds"))
		res, err := c.CallTool(context.Background(), "three_rounds", args, &CallOptions{
			InputResponses: InputResponses{"name": json.RawMessage(`{"action":"accept","content":{"name":"Cy"}}`)},
			RequestState:   state,
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := resultText(t, res); got != "Hello Cy, capital Paris, 2 roots, nonce seed" {
			t.Fatalf("got %q", got)
		}
		if legs := f.legs("three_rounds")[before:]; len(legs) != 2 || legs[0].state != `r1|seed|"quoted" \ state` {
			t.Fatalf("legs %+v", legs)
		}
	})
}

func TestClientPromptAndResourceLoop(t *testing.T) {
	t.Parallel()
	f := newClientFixture(t)
	clientTransports(t, f.s, fixtureHandlers(nil), func(t *testing.T, c *Client) {
		p, err := c.GetPrompt(context.Background(), "asking_prompt", map[string]string{"topic": "Go"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if txt := p.Messages[0].Content.(*TextContent).Text; txt != "Go for Ada" {
			t.Fatalf("prompt: %q", txt)
		}
		r, err := c.ReadResource(context.Background(), "test://ask/7", nil)
		if err != nil {
			t.Fatal(err)
		}
		if r.Contents[0].Text != "item 7" {
			t.Fatalf("resource: %+v", r.Contents[0])
		}
	})
}

func TestClientMissingHandlerFailsWithoutRetry(t *testing.T) {
	t.Parallel()
	f := newClientFixture(t)
	opts := fixtureHandlers(nil)
	opts.Sampling = nil
	clientTransports(t, f.s, opts, func(t *testing.T, c *Client) {
		before := len(f.legs("ask_sampling"))
		_, err := c.CallTool(context.Background(), "ask_sampling", nil, nil)
		var nh *NoHandlerError
		if !errors.As(err, &nh) || nh.Method != MethodCreateMessage || nh.Key != "s" || !errors.As(err, new(*NoHandlerError)) {
			t.Fatalf("got %v", err)
		}
		if !strings.Contains(err.Error(), "Sampling not supported") {
			t.Errorf("message %q", err)
		}
		if n := len(f.legs("ask_sampling")) - before; n != 1 {
			t.Errorf("server saw %d legs, want 1 (no retry)", n)
		}
	})
}

func TestClientFirstHandlerFailureCancelsTheOthers(t *testing.T) {
	t.Parallel()
	f := newClientFixture(t)
	sawCancel := make(chan struct{}, 2)
	opts := &ClientOptions{Elicitation: func(ctx context.Context, r *ElicitRequest) (*ElicitResult, error) {
		if r.Message == "fail" {
			return nil, errors.New("user closed the dialog")
		}
		select {
		case <-ctx.Done():
			sawCancel <- struct{}{}
			return nil, ctx.Err()
		case <-time.After(5 * time.Second):
			return &ElicitResult{Action: ElicitAccept}, nil
		}
	}}
	clientTransports(t, f.s, opts, func(t *testing.T, c *Client) {
		before := len(f.legs("two_elicits"))
		_, err := c.CallTool(context.Background(), "two_elicits", nil, nil)
		if err == nil || !strings.Contains(err.Error(), "user closed the dialog") {
			t.Fatalf("got %v", err)
		}
		select {
		case <-sawCancel:
		case <-time.After(time.Second):
			t.Fatal("the sibling handler was not cancelled")
		}
		if n := len(f.legs("two_elicits")) - before; n != 1 {
			t.Errorf("server saw %d legs, want 1", n)
		}
	})
}

func TestClientListsPageByPage(t *testing.T) {
	t.Parallel()
	f := newClientFixture(t) // PageSize 2
	clientTransports(t, f.s, nil, func(t *testing.T, c *Client) {
		var names []string
		for tool, err := range c.Tools(context.Background()) {
			if err != nil {
				t.Fatal(err)
			}
			names = append(names, tool.Name)
			if _, ok := tool.InputSchema.(json.RawMessage); !ok {
				t.Errorf("inputSchema of %s decoded as %T, want the raw JSON", tool.Name, tool.InputSchema)
			}
		}
		if len(names) != 9 {
			t.Fatalf("got %d tools: %v", len(names), names)
		}
		page, err := c.ListTools(context.Background(), nil)
		if err != nil || len(page.Tools) != 2 || page.NextCursor == nil {
			t.Fatalf("first page: %+v %v", page, err)
		}
		var n int
		for range c.Prompts(context.Background()) {
			n++
		}
		for range c.Resources(context.Background()) {
			n++
		}
		for range c.ResourceTemplates(context.Background()) {
			n++
		}
		if n != 3 {
			t.Errorf("got %d prompts, resources and templates, want 3", n)
		}
		d, err := c.Discover(context.Background())
		if err != nil || d.SupportedVersions[0] != LatestProtocolVersion || d.Capabilities.Tools == nil {
			t.Fatalf("discover: %+v %v", d, err)
		}
		if c.ProtocolVersion() != LatestProtocolVersion {
			t.Errorf("ProtocolVersion %q", c.ProtocolVersion())
		}
	})
}

func TestClientProgressAndLogs(t *testing.T) {
	t.Parallel()
	f := newClientFixture(t)
	var logs atomic.Int32
	opts := &ClientOptions{LogLevel: LevelInfo, OnLog: func(m *LoggingMessageParams) {
		if m.Level == LevelWarning {
			logs.Add(1)
		}
	}}
	clientTransports(t, f.s, opts, func(t *testing.T, c *Client) {
		var mu sync.Mutex
		var got []float64
		before := logs.Load()
		_, err := c.CallTool(context.Background(), "progress", nil, &CallOptions{OnProgress: func(p *ProgressParams) {
			mu.Lock()
			got = append(got, p.Progress)
			mu.Unlock()
		}})
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		if fmt.Sprint(got) != "[0 50 100]" {
			t.Errorf("progress %v", got)
		}
		if logs.Load() != before+1 {
			t.Errorf("got %d log messages, want 1", logs.Load()-before)
		}
	})
}

func TestClientCancellation(t *testing.T) {
	t.Parallel()
	f := newClientFixture(t)
	clientTransports(t, f.s, nil, func(t *testing.T, c *Client) {
		before, started := len(f.legs("slow-cancelled")), len(f.legs("slow"))
		// The deadline passes once the server has the call: on a busy
		// machine a fixed one could pass before the request arrives.
		ctx := newFiredDeadline()
		done := make(chan error, 1)
		go func() { _, err := c.CallTool(ctx, "slow", nil, nil); done <- err }()
		testutil.Eventually(t, 10*time.Second, "the server to start the call", func() bool { return len(f.legs("slow")) != started })
		ctx.fire()
		if err := waitResult(t, done); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("got %v", err)
		}
		testutil.Eventually(t, 5*time.Second, "the server to see the cancellation", func() bool { return len(f.legs("slow-cancelled")) != before })
		// The transport still works.
		if _, err := c.CallTool(context.Background(), "echo", nil, nil); err != nil {
			t.Fatal(err)
		}
	})
}

func TestClientListen(t *testing.T) {
	t.Parallel()
	f := newClientFixture(t)
	clientTransports(t, f.s, nil, func(t *testing.T, c *Client) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		got := make(chan *ListenNotification, 8)
		done := make(chan error, 1)
		go func() {
			done <- c.Listen(ctx, SubscriptionFilter{ToolsListChanged: true, ResourceSubscriptions: []string{"test://static"}}, func(n *ListenNotification) {
				if n.Method == NotificationSubscriptionsAck {
					// The callback may use the client.
					if _, err := c.ListTools(ctx, nil); err != nil {
						t.Error(err)
					}
				}
				got <- n
			})
		}()
		next := func() *ListenNotification {
			select {
			case n := <-got:
				return n
			case <-time.After(5 * time.Second):
				t.Fatal("no notification")
			}
			return nil
		}
		if n := next(); n.Method != NotificationSubscriptionsAck {
			t.Fatalf("first notification %s", n.Method)
		}
		f.s.AddTool(&Tool{Name: "added_" + strings.ReplaceAll(t.Name(), "/", "_")}, func(context.Context, *CallToolRequest) (ToolResponse, error) { return TextResult(""), nil })
		if n := next(); n.Method != NotificationToolListChanged {
			t.Fatalf("got %s", n.Method)
		}
		f.s.ResourceUpdated("test://static")
		if n := next(); n.Method != NotificationResourceUpdated || n.URI != "test://static" {
			t.Fatalf("got %s %q", n.Method, n.URI)
		}
		cancel()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Listen returned %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Listen did not return after cancel")
		}
	})
}

func TestClientComplete(t *testing.T) {
	t.Parallel()
	s := NewServer(Implementation{Name: "c", Version: "1"}, &ServerOptions{Completions: func(ctx context.Context, r *CompleteRequest) (*CompleteResult, error) {
		return &CompleteResult{Completion: Completion{Values: []string{r.Argument.Value + "1", r.Argument.Value + "2"}}}, nil
	}})
	s.AddPrompt(&Prompt{Name: "p"}, func(context.Context, *GetPromptRequest) (PromptResponse, error) { return &GetPromptResult{}, nil })
	clientTransports(t, s, nil, func(t *testing.T, c *Client) {
		r, err := c.Complete(context.Background(), &CompleteRequest{Ref: CompleteReference{Type: "ref/prompt", Name: "p"}, Argument: CompleteArgument{Name: "a", Value: "x"}})
		if err != nil || fmt.Sprint(r.Completion.Values) != "[x1 x2]" {
			t.Fatalf("%+v %v", r, err)
		}
	})
}

func TestClientModes(t *testing.T) {
	t.Parallel()
	f := newClientFixture(t)
	ctx := context.Background()
	c := memClient(t, f.s, nil)
	if c.ProtocolVersion() != LatestProtocolVersion {
		t.Fatalf("the in-memory client is modern from the start, got %q", c.ProtocolVersion())
	}
	c = memClient(t, f.s, &ClientOptions{Mode: ModeLegacy})
	if v := c.ProtocolVersion(); v != "" {
		t.Fatalf("legacy before the handshake: %q", v)
	}
	d, err := c.Discover(ctx)
	if err != nil || c.ProtocolVersion() != LegacyProtocolVersion || !slices.Equal(d.SupportedVersions, []string{LegacyProtocolVersion}) {
		t.Fatalf("legacy: %v %+v %q", err, d, c.ProtocolVersion())
	}
	if err := c.Listen(ctx, SubscriptionFilter{ToolsListChanged: true}, func(*ListenNotification) {}); !errors.Is(err, ErrLegacyUnsupported) {
		t.Fatalf("Listen on a legacy session: %v", err)
	}
	c = memClient(t, f.s, &ClientOptions{Mode: ModePinned, ProtocolVersion: "1999-01-01"})
	if _, err := c.Discover(ctx); !errors.As(err, new(*UnsupportedVersionError)) {
		t.Fatalf("pinned to an unknown version: %v", err)
	}
	c = memClient(t, f.s, &ClientOptions{Mode: ModePinned, ProtocolVersion: LatestProtocolVersion})
	if _, err := c.Discover(ctx); err != nil || c.ProtocolVersion() != LatestProtocolVersion {
		t.Fatalf("pinned: %v", err)
	}
	c = memClient(t, f.s, &ClientOptions{Mode: ModePinned, ProtocolVersion: LegacyProtocolVersion})
	if err := c.Connect(ctx); err != nil || c.ProtocolVersion() != LegacyProtocolVersion {
		t.Fatalf("pinned to 2025-11-25: %v %q", err, c.ProtocolVersion())
	}
}

// firedDeadline is a context whose deadline passes when the test says
// (fire): it ends with context.DeadlineExceeded, as a timeout does.
type firedDeadline struct {
	context.Context
	once sync.Once
	done chan struct{}
}

func newFiredDeadline() *firedDeadline {
	return &firedDeadline{Context: context.Background(), done: make(chan struct{})}
}

func (d *firedDeadline) fire()                 { d.once.Do(func() { close(d.done) }) }
func (d *firedDeadline) Done() <-chan struct{} { return d.done }

func (d *firedDeadline) Err() error {
	select {
	case <-d.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}
