package mcp

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/testutil"
	"github.com/roundtrip-mcp/roundtrip/requeststate"
)

// A rejected requestState: the wire keeps the one fixed error; the
// server's log says why, with the fix, at most once per cause per
// interval; the client says the call must start again.

// restartable serves whichever server is current: swapping it is a
// restart behind the same URL.
type restartable struct{ h atomic.Pointer[http.Handler] }

func (r *restartable) set(s *Server) {
	h := NewHTTPHandler(s, nil)
	r.h.Store(&h)
}

func (r *restartable) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	(*r.h.Load()).ServeHTTP(w, req)
}

// askingServer asks one question on a tool "deploy", logging to logs.
func askingServer(logs *testutil.Buffer, rs RequestStateOptions) *Server {
	s := NewServer(Implementation{Name: "deployer", Version: "1"}, &ServerOptions{
		RequestState: rs,
		Logger:       slog.New(slog.NewTextHandler(logs, nil)),
	})
	s.AddTool(&Tool{Name: "deploy"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		e, err := Elicit[Region](ctx, deployQuestion)
		if err != nil {
			return nil, err
		}
		return TextResult("deploying to " + e.Content.Region), nil
	})
	return s
}

// restartBetweenRounds runs a call whose server restarts (a new process:
// a new per-process key, or the ring rs gives it) while the user
// answers. It returns the client's error and the new server's log.
func restartBetweenRounds(t *testing.T, before, after RequestStateOptions) (string, error) {
	t.Helper()
	var oldLogs, newLogs testutil.Buffer
	rt := &restartable{}
	rt.set(askingServer(&oldLogs, before))
	ts := httptest.NewServer(rt)
	t.Cleanup(ts.Close)
	c := NewClient(NewHTTPClientTransport(ts.URL, nil), &ClientOptions{Elicitation: func(context.Context, *ElicitRequest) (*ElicitResult, error) {
		rt.set(askingServer(&newLogs, after)) // the server restarts while the user thinks
		return &ElicitResult{Action: ElicitAccept, Content: map[string]any{"region": "eu"}}, nil
	}})
	t.Cleanup(func() { c.Close() })
	_, err := c.CallTool(context.Background(), "deploy", nil, nil)
	return newLogs.String(), err
}

func TestStateRejectedAfterRestartWithoutKeysIsLoggedWithTheFix(t *testing.T) {
	t.Parallel()
	logs, err := restartBetweenRounds(t, RequestStateOptions{}, RequestStateOptions{})
	if !errors.As(err, new(*StateRejectedError)) {
		t.Fatalf("err %v, want a *StateRejectedError", err)
	}
	for _, want := range []string{
		"requestState rejected on tools/call: unknown key",
		"random key made when its process started",
		"Fix: give the server keys that outlive the process",
		"RequestStateOptions.Keys",
		"requeststate.KeyFile",
		"-state-key-file",
		"cause=key",
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("log lacks %q:\n%s", want, logs)
		}
	}
}

func TestStateSealedWithAKeyRotatedOutIsLoggedWithTheFix(t *testing.T) {
	t.Parallel()
	k1, k2 := requeststate.GenerateKey(), requeststate.GenerateKey()
	r1, _ := requeststate.NewKeyRing(k1)
	r2, _ := requeststate.NewKeyRing(k2)
	logs, err := restartBetweenRounds(t, RequestStateOptions{Keys: [][]byte{k1}}, RequestStateOptions{Keys: [][]byte{k2}})
	if !errors.As(err, new(*StateRejectedError)) {
		t.Fatalf("err %v, want a *StateRejectedError", err)
	}
	for _, want := range []string{
		"the state names key id " + r1.KeyIDs()[0] + ", which the key ring does not hold (it holds " + r2.KeyIDs()[0] + ")",
		"Fix: when a key stops sealing, keep it in the ring",
		"for at least the state TTL (10m0s)",
		"keyID=" + r1.KeyIDs()[0],
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("log lacks %q:\n%s", want, logs)
		}
	}
	if strings.Contains(logs, "random key") {
		t.Errorf("a server with keys is told it has a per-process key:\n%s", logs)
	}
}

func TestExpiredStateIsLoggedWithTheTTL(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s := newStateServer(t, "svc", RequestStateOptions{TTL: time.Minute})
		st := round1(t, s, "flow", `{"x":"1"}`)
		time.Sleep(time.Minute + time.Second)
		s.call(t, 2, "flow", `{"x":"1"}`, &st)
		logs := s.logs.String()
		for _, want := range []string{"rejected on tools/call: expired", "after its TTL (1m0s)", "Fix: raise RequestStateOptions.TTL", "cause=expired"} {
			if !strings.Contains(logs, want) {
				t.Errorf("log lacks %q:\n%s", want, logs)
			}
		}
	})
}

func TestTamperedStateIsLoggedAsTampered(t *testing.T) {
	t.Parallel()
	s := newStateServer(t, "svc", RequestStateOptions{})
	tampered := tamper(t, round1(t, s, "flow", `{"x":"1"}`))
	s.call(t, 2, "flow", `{"x":"1"}`, &tampered)
	logs := s.logs.String()
	if !strings.Contains(logs, "rejected on tools/call: seal; the token names a key this server holds but does not verify under it: it was altered") ||
		strings.Contains(logs, "Fix:") {
		t.Errorf("log:\n%s", logs)
	}
}

// tamper flips a bit of a KeyRing token's tag, keeping it well formed:
// the key id still names a key the ring holds, the seal fails.
func tamper(t *testing.T, token string) string {
	t.Helper()
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(token, "v1."))
	if err != nil || !strings.HasPrefix(token, "v1.") {
		t.Fatalf("not a v1 token: %q", token)
	}
	raw[len(raw)-1] ^= 1
	return "v1." + base64.RawURLEncoding.EncodeToString(raw)
}

// countLines counts the log lines holding s.
func countLines(logs, s string) int {
	n := 0
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, s) {
			n++
		}
	}
	return n
}

func TestStateRejectionLogIsRateLimited(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var observed atomic.Int32
		logs := &testutil.Buffer{}
		srv := NewServer(Implementation{Name: "svc", Version: "1"}, &ServerOptions{
			Logger: slog.New(slog.NewTextHandler(logs, nil)),
			Observer: func(e Event) {
				if e.Kind == EventStateRejected {
					observed.Add(1)
				}
			},
		})
		srv.AddTool(&Tool{Name: "flow"}, func(context.Context, *CallToolRequest) (ToolResponse, error) { return TextResult("x"), nil })
		h := NewHTTPHandler(srv, nil)
		forge := func(id int, state string) {
			post(t, h, req(id, MethodToolsCall, `"name":"flow","arguments":{},"requestState":"`+state+`"`))
		}
		for i := range 100 {
			forge(i, "forged")
		}
		if n := countLines(logs.String(), "requestState rejected"); n != 1 {
			t.Fatalf("100 malformed states logged %d lines, want 1:\n%s", n, logs)
		}
		// Another cause has its own allowance.
		forge(100, "v1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
		if n := countLines(logs.String(), "cause=key"); n != 1 {
			t.Errorf("an unknown key after a flood of malformed states logged %d lines, want 1", n)
		}
		time.Sleep(stateLogInterval)
		forge(101, "forged")
		if n := countLines(logs.String(), "cause=malformed"); n != 2 || !strings.Contains(logs.String(), "(99 more rejections of this cause since the last report)") ||
			!strings.Contains(logs.String(), "suppressed=99") {
			t.Errorf("after the interval: %d lines:\n%s", n, logs)
		}
		if n := observed.Load(); n != 102 {
			t.Errorf("the observer saw %d rejections, want every one (102)", n)
		}
	})
}

// Every cause, the new ones the log tells apart included, gets the same
// bytes with the same status and content type.
func TestStateRejectionOnTheWireIsUnchanged(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		k1, k2 := requeststate.GenerateKey(), requeststate.GenerateKey()
		ring, _ := requeststate.NewKeyRing(k1)
		keyed := newStateServer(t, "svc", RequestStateOptions{Codec: ring, TTL: time.Hour})
		perProcess := newStateServer(t, "svc", RequestStateOptions{TTL: time.Hour})
		restarted := newStateServer(t, "svc", RequestStateOptions{TTL: time.Hour})

		fromBeforeRestart := round1(t, perProcess, "flow", `{"x":"1"}`)
		rotatedOut := round1(t, keyed, "flow", `{"x":"1"}`)
		toExpire := round1(t, restarted, "flow", `{"x":"2"}`)
		tampered := tamper(t, round1(t, restarted, "flow", `{"x":"1"}`))
		if err := ring.SetKeys(k2); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Hour + time.Second)
		otherArgs := round1(t, restarted, "flow", `{"x":"3"}`) // fresh: only its binding is wrong

		type leg struct {
			s           *stateServer
			args, state string
			logs        string // what the log says of it
		}
		legs := map[string]leg{
			"restart without keys": {restarted, `{"x":"1"}`, fromBeforeRestart, "random key made when its process started"},
			"key rotated out":      {keyed, `{"x":"1"}`, rotatedOut, "which the key ring does not hold"},
			"expired":              {restarted, `{"x":"2"}`, toExpire, "after its TTL"},
			"tampered":             {restarted, `{"x":"1"}`, tampered, "does not verify"},
			"malformed":            {restarted, `{"x":"1"}`, "forged", "malformed: prefix"},
			"other arguments":      {restarted, `{"x":"9"}`, otherArgs, "arguments mismatch"},
		}
		want := `{"jsonrpc":"2.0","id":7,"error":` + fixedRejection + `}`
		contentType := ""
		for name, l := range legs {
			p := `"name":"flow","arguments":` + l.args + `,"requestState":"` + l.state + `"`
			res := post(t, NewHTTPHandler(l.s.Server, nil), req(7, MethodToolsCall, p))
			if contentType == "" {
				contentType = res.header.Get("Content-Type")
			}
			if !bytes.Equal(res.body, []byte(want)) || res.status != 200 || res.header.Get("Content-Type") != contentType {
				t.Errorf("%s: %d %s %s\nwant 200 %s %s", name, res.status, res.header.Get("Content-Type"), res.body, contentType, want)
			}
			if !strings.Contains(l.s.logs.String(), l.logs) {
				t.Errorf("%s: the log does not tell it apart (%q):\n%s", name, l.logs, l.s.logs)
			}
		}
	})
}

// After a restart between rounds the client's error says the call must
// start again, and still matches the server's error.
func TestClientSaysTheCallMustStartAgain(t *testing.T) {
	t.Parallel()
	_, err := restartBetweenRounds(t, RequestStateOptions{}, RequestStateOptions{})
	var sr *StateRejectedError
	if !errors.As(err, &sr) || sr.Method != MethodToolsCall || sr.Target != "deploy" {
		t.Fatalf("err %v, want a *StateRejectedError for tools/call deploy", err)
	}
	if !errors.As(err, new(*StateRejectedError)) || !errors.Is(err, ErrInvalidRequestState) || ErrorCode(err) != CodeInvalidParams {
		t.Errorf("err %v does not match *StateRejectedError, ErrInvalidRequestState and -32602", err)
	}
	want := `mcp: tools/call "deploy": the server rejected the request state (its keys may have changed, or the round expired or was used already): start the call again`
	if err.Error() != want {
		t.Errorf("message %q\nwant    %q", err, want)
	}

	// Resuming a saved call the server no longer accepts says the same.
	var logs testutil.Buffer
	s := askingServer(&logs, RequestStateOptions{})
	c := httpClient(t, s, nil, &ClientOptions{Capabilities: &ClientCapabilities{Elicitation: &ElicitationCapabilities{}}})
	_, err = c.CallTool(context.Background(), "deploy", nil, &CallOptions{Manual: true})
	var pe *PendingCallError
	if !errors.As(err, &pe) {
		t.Fatalf("round 1: %v", err)
	}
	raw, err := pe.Call.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var saved PendingCall // as another process reads it, from a server since restarted
	if err := saved.UnmarshalJSON(bytes.ReplaceAll(raw, []byte(pe.Call.RequestState), []byte("v1.forged"))); err != nil {
		t.Fatal(err)
	}
	answers := InputResponses{}
	for k := range saved.InputRequests {
		answers[k] = json.RawMessage(`{"action":"accept","content":{"region":"eu"}}`)
	}
	_, err = c.Resume(context.Background(), &saved, answers, nil)
	if !errors.As(err, new(*StateRejectedError)) {
		t.Errorf("resume: %v, want a *StateRejectedError", err)
	}

	// A first leg without a state is not a state rejection.
	_, err = c.CallTool(context.Background(), "nope", nil, nil)
	if errors.As(err, new(*StateRejectedError)) {
		t.Errorf("an unknown tool reads as a rejected state: %v", err)
	}
}
