package mcp

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/testutil"
	"github.com/roundtrip-mcp/roundtrip/requeststate"
)

const fixedRejection = `{"code":-32602,"message":"Invalid or expired requestState","data":{"reason":"invalid_request_state"}}`

// stateServer has a tool that asks once and completes on a retry whose
// plaintext state is "asked:<arg>", counting handler runs.
type stateServer struct {
	*Server
	runs atomic.Int32
	logs *testutil.Buffer
}

func newStateServer(t testing.TB, name string, rs RequestStateOptions) *stateServer {
	t.Helper()
	logs := &testutil.Buffer{}
	s := &stateServer{logs: logs}
	s.Server = NewServer(Implementation{Name: name, Version: "1"}, &ServerOptions{
		RequestState: rs,
		Logger:       slog.New(slog.NewTextHandler(logs, nil)),
	})
	h := func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		s.runs.Add(1)
		var in struct{ X string }
		json.Unmarshal(r.Arguments, &in)
		if r.RequestState == "asked:"+in.X {
			return TextResult("done " + in.X), nil
		}
		return &InputRequiredResult{
			InputRequests: map[string]InputRequest{"q": &ElicitRequest{Message: "ok?", RequestedSchema: json.RawMessage(`{"type":"object","properties":{}}`)}},
			RequestState:  "asked:" + in.X,
		}, nil
	}
	s.AddTool(&Tool{Name: "flow"}, h)
	s.AddTool(&Tool{Name: "other"}, h)
	s.AddTool(&Tool{Name: "plain"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		s.runs.Add(1)
		return TextResult("plain"), nil
	})
	return s
}

func (s *stateServer) call(t testing.TB, id int, tool, args string, state *string, extra ...string) map[string]any {
	t.Helper()
	p := `"name":"` + tool + `","arguments":` + args
	if state != nil {
		b, _ := json.Marshal(*state)
		p += `,"requestState":` + string(b)
	}
	for _, e := range extra {
		p += "," + e
	}
	return post(t, NewHTTPHandler(s.Server, nil), req(id, MethodToolsCall, p)).last(t)
}

func round1(t testing.TB, s *stateServer, tool, args string) string {
	t.Helper()
	r := result(t, s.call(t, 1, tool, args, nil))
	st, ok := r["requestState"].(string)
	if !ok || r["resultType"] != "input_required" {
		t.Fatalf("round 1: %v", r)
	}
	return st
}

// rawError re-encodes the error member in wire order (code, message,
// data); TestRejectionWireBytes checks the bytes themselves.
func rawError(t testing.TB, v map[string]any) string {
	t.Helper()
	e, _ := v["error"].(map[string]any)
	b, _ := json.Marshal(struct {
		Code    any `json:"code"`
		Message any `json:"message"`
		Data    any `json:"data,omitempty"`
	}{e["code"], e["message"], e["data"]})
	return string(b)
}

func TestRejectionWireBytes(t *testing.T) {
	t.Parallel()
	s := newStateServer(t, "svc", RequestStateOptions{})
	body := req(41, MethodToolsCall, `"name":"flow","arguments":{},"requestState":"forged"`)
	res := post(t, NewHTTPHandler(s.Server, nil), body)
	want := `{"jsonrpc":"2.0","id":41,"error":` + fixedRejection + `}`
	if string(res.body) != want || res.status != 200 {
		t.Errorf("got %d %s\nwant %s", res.status, res.body, want)
	}
}

func TestStateIsSealedByDefaultAndHandlersSeePlaintext(t *testing.T) {
	t.Parallel()
	s := newStateServer(t, "svc", RequestStateOptions{})
	st := round1(t, s, "flow", `{"x":"1"}`)
	if !strings.HasPrefix(st, "v1.") || strings.Contains(st, "asked") {
		t.Fatalf("state on the wire is not a sealed token: %q", st)
	}
	r := result(t, s.call(t, 2, "flow", `{"x":"1"}`, &st))
	if r["resultType"] != "complete" {
		t.Fatalf("retry: %v", r)
	}
}

func TestEveryRejectionIsTheSameFixedError(t *testing.T) {
	t.Parallel()
	s := newStateServer(t, "svc", RequestStateOptions{})
	st := round1(t, s, "flow", `{"x":"1"}`)
	otherServer := newStateServer(t, "svc", RequestStateOptions{})
	foreign := round1(t, otherServer, "flow", `{"x":"1"}`)
	tampered := []byte(st)
	tampered[len(tampered)/2] ^= 1
	cases := map[string]struct {
		tool, args string
		state      *string
		raw        string
	}{
		"tampered":             {"flow", `{"x":"1"}`, ptr(string(tampered)), ""},
		"suffix":               {"flow", `{"x":"1"}`, ptr(st + "-TAMPERED"), ""},
		"truncated":            {"flow", `{"x":"1"}`, ptr(st[:len(st)-4]), ""},
		"padded":               {"flow", `{"x":"1"}`, ptr(st + "="), ""},
		"newline":              {"flow", `{"x":"1"}`, ptr(st[:8] + "\n" + st[8:]), ""},
		"empty":                {"flow", `{"x":"1"}`, ptr(""), ""},
		"cross-tool":           {"other", `{"x":"1"}`, &st, ""},
		"cross-arguments":      {"flow", `{"x":"2"}`, &st, ""},
		"unknown key":          {"flow", `{"x":"1"}`, &foreign, ""},
		"never minted":         {"plain", `{}`, ptr("anything"), ""},
		"non-string":           {"flow", `{"x":"1"}`, nil, `"requestState":{"a":1}`},
		"number":               {"flow", `{"x":"1"}`, nil, `"requestState":5`},
		"plaintext of a state": {"flow", `{"x":"1"}`, ptr("asked:1"), ""},
	}
	before := s.runs.Load()
	for name, c := range cases {
		var extra []string
		if c.raw != "" {
			extra = append(extra, c.raw)
		}
		v := s.call(t, 3, c.tool, c.args, c.state, extra...)
		if got := rawError(t, v); got != fixedRejection {
			t.Errorf("%s: got %s", name, got)
		}
	}
	if s.runs.Load() != before {
		t.Errorf("the handler ran %d times for rejected states", s.runs.Load()-before)
	}
	logs := s.logs.String()
	if !strings.Contains(logs, "requestState rejected on tools/call") || !strings.Contains(logs, "level=WARN") {
		t.Errorf("no warning logged: %s", logs)
	}
	if strings.Contains(logs, st[5:25]) {
		t.Error("the token leaked into the log")
	}
}

func ptr(s string) *string { return &s }

// The clock is the bubble's: the TTL passes exactly, with no sleep a
// loaded machine could stretch. Two states sealed at the same instant:
// one is still good a millisecond before the TTL, the other is refused a
// millisecond after it.
func TestExpiredStateIsRejected(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const ttl = 50 * time.Millisecond
		s := newStateServer(t, "svc", RequestStateOptions{TTL: ttl})
		early := round1(t, s, "flow", `{"x":"1"}`)
		late := round1(t, s, "flow", `{"x":"2"}`)
		time.Sleep(ttl - time.Millisecond)
		if r := result(t, s.call(t, 2, "flow", `{"x":"1"}`, &early)); r["resultType"] != "complete" {
			t.Fatalf("within the TTL: %v", r)
		}
		time.Sleep(2 * time.Millisecond)
		if got := rawError(t, s.call(t, 3, "flow", `{"x":"2"}`, &late)); got != fixedRejection {
			t.Errorf("expired: %s", got)
		}
	})
}

func TestStateIsBoundToThePrincipal(t *testing.T) {
	t.Parallel()
	s := newStateServer(t, "svc", RequestStateOptions{})
	asUser := func(sub string) http.Handler {
		h := NewHTTPHandler(s.Server, nil)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if sub != "" {
				r = r.WithContext(WithTokenInfo(r.Context(), &TokenInfo{ClientID: "app", Issuer: "https://idp", Subject: sub}))
			}
			h.ServeHTTP(w, r)
		})
	}
	body := req(1, MethodToolsCall, `"name":"flow","arguments":{"x":"1"}`)
	st := result(t, post(t, asUser("alice"), body).last(t))["requestState"].(string)
	retry := func(h http.Handler) map[string]any {
		b, _ := json.Marshal(st)
		return post(t, h, req(2, MethodToolsCall, `"name":"flow","arguments":{"x":"1"},"requestState":`+string(b))).last(t)
	}
	if r := result(t, retry(asUser("alice"))); r["resultType"] != "complete" {
		t.Fatalf("same principal: %v", r)
	}
	for _, who := range []string{"bob", ""} {
		if got := rawError(t, retry(asUser(who))); got != fixedRejection {
			t.Errorf("principal %q: %s", who, got)
		}
	}
}

func TestAudienceSeparatesServicesSharingAKey(t *testing.T) {
	t.Parallel()
	k := requeststate.GenerateKey()
	a := newStateServer(t, "billing", RequestStateOptions{Keys: [][]byte{k}})
	b := newStateServer(t, "shipping", RequestStateOptions{Keys: [][]byte{k}})
	st := round1(t, a, "flow", `{"x":"1"}`)
	if got := rawError(t, b.call(t, 2, "flow", `{"x":"1"}`, &st)); got != fixedRejection {
		t.Errorf("cross-audience: %s", got)
	}
	c := newStateServer(t, "shipping", RequestStateOptions{Keys: [][]byte{k}, Audience: "billing"})
	if r := result(t, c.call(t, 2, "flow", `{"x":"1"}`, &st)); r["resultType"] != "complete" {
		t.Errorf("explicit shared audience: %v", r)
	}
}

func TestSharedKeysLetAnotherInstanceFinishTheRound(t *testing.T) {
	t.Parallel()
	k := requeststate.GenerateKey()
	a := newStateServer(t, "svc", RequestStateOptions{Keys: [][]byte{k}})
	b := newStateServer(t, "svc", RequestStateOptions{Keys: [][]byte{k}})
	st := round1(t, a, "flow", `{"x":"1"}`)
	if r := result(t, b.call(t, 2, "flow", `{"x":"1"}`, &st)); r["resultType"] != "complete" {
		t.Fatalf("%v", r)
	}
}

// TestKeyRotationLosesNoRoundInFlight runs two instances through the
// three phases; at every step a round started on either instance
// completes on the other.
func TestKeyRotationLosesNoRoundInFlight(t *testing.T) {
	t.Parallel()
	old, nw := requeststate.GenerateKey(), requeststate.GenerateKey()
	phases := [][][]byte{{old}, {old, nw}, {nw, old}, {nw}}
	// Instances are deployed one at a time: A moves to phase i while B is
	// still at phase i-1.
	for i := 1; i < len(phases); i++ {
		a := newStateServer(t, "svc", RequestStateOptions{Keys: phases[i]})
		b := newStateServer(t, "svc", RequestStateOptions{Keys: phases[i-1]})
		for _, pair := range [][2]*stateServer{{a, b}, {b, a}} {
			st := round1(t, pair[0], "flow", `{"x":"r"}`)
			v := pair[1].call(t, 2, "flow", `{"x":"r"}`, &st)
			if v["error"] != nil {
				t.Errorf("phase %d: a round was rejected mid-deploy: %v", i, v["error"])
			}
		}
	}
	// Phase 3 is reached one TTL after phase 2: states sealed with OLD are
	// gone, and OLD no longer verifies.
	p1 := newStateServer(t, "svc", RequestStateOptions{Keys: phases[1]})
	p3 := newStateServer(t, "svc", RequestStateOptions{Keys: phases[3]})
	st := round1(t, p1, "flow", `{"x":"r"}`)
	if got := rawError(t, p3.call(t, 2, "flow", `{"x":"r"}`, &st)); got != fixedRejection {
		t.Errorf("retired key still verifies: %s", got)
	}
}

type failingCodec struct{}

func (failingCodec) Seal([]byte) (string, error)   { return "", errors.New("kms unavailable") }
func (failingCodec) Unseal(string) ([]byte, error) { return nil, errors.New("kms unavailable") }

func TestSealFailureIsInternalErrorWithoutData(t *testing.T) {
	t.Parallel()
	s := newStateServer(t, "svc", RequestStateOptions{Codec: failingCodec{}})
	v := s.call(t, 1, "flow", `{"x":"1"}`, nil)
	if got := rawError(t, v); got != `{"code":-32603,"message":"Internal error"}` {
		t.Errorf("%s", got)
	}
	if got := rawError(t, s.call(t, 2, "flow", `{"x":"1"}`, ptr("v1.x"))); got != fixedRejection {
		t.Errorf("codec error on unseal: %s", got)
	}
}

func TestRequestStateConfigurationErrors(t *testing.T) {
	t.Parallel()
	bad := map[string]struct {
		name string
		o    RequestStateOptions
	}{
		"short key":         {"svc", RequestStateOptions{Keys: [][]byte{make([]byte, 16)}}},
		"empty key":         {"svc", RequestStateOptions{Keys: [][]byte{{}}}},
		"duplicate keys":    {"svc", RequestStateOptions{Keys: [][]byte{bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{1}, 32)}}},
		"keys and codec":    {"svc", RequestStateOptions{Keys: [][]byte{requeststate.GenerateKey()}, Codec: failingCodec{}}},
		"negative TTL":      {"svc", RequestStateOptions{TTL: -time.Second}},
		"keys without name": {"", RequestStateOptions{Keys: [][]byte{requeststate.GenerateKey()}}},
	}
	for n, c := range bad {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: accepted", n)
				}
			}()
			NewServer(Implementation{Name: c.name, Version: "1"}, &ServerOptions{RequestState: c.o})
		}()
	}
	// Named by an explicit audience instead: fine.
	NewServer(Implementation{Version: "1"}, &ServerOptions{RequestState: RequestStateOptions{Keys: [][]byte{requeststate.GenerateKey()}, Audience: "svc"}})
}

// plainStateCodec is a test-only codec that seals nothing: it lets a test
// craft the plaintext claims of a "correctly sealed" state.
type plainStateCodec struct{}

func (plainStateCodec) Seal(p []byte) (string, error) {
	return "plain." + base64.RawURLEncoding.EncodeToString(p), nil
}
func (plainStateCodec) Unseal(s string) ([]byte, error) {
	b, ok := strings.CutPrefix(s, "plain.")
	if !ok {
		return nil, requeststate.ErrInvalid
	}
	return base64.RawURLEncoding.DecodeString(b)
}

func TestCustomCodecKeepsBindingsOutsideTheCodec(t *testing.T) {
	t.Parallel()
	s := newStateServer(t, "svc", RequestStateOptions{Codec: plainStateCodec{}})
	st := round1(t, s, "flow", `{"x":"1"}`)
	inner, _ := plainStateCodec{}.Unseal(st)
	if !strings.HasPrefix(st, "plain.") || !bytes.Contains(inner, []byte("flow")) || !bytes.Contains(inner, []byte("svc")) || !bytes.Contains(inner, []byte("asked:1")) {
		t.Fatalf("claims not inside the codec payload: %s", st)
	}
	// The codec is trivial, yet binding checks still apply.
	if got := rawError(t, s.call(t, 2, "other", `{"x":"1"}`, &st)); got != fixedRejection {
		t.Errorf("cross-tool through a custom codec: %s", got)
	}
}

func TestPromptAndResourceStatesAreSealedToo(t *testing.T) {
	t.Parallel()
	s := NewServer(Implementation{Name: "svc", Version: "1"}, nil)
	s.AddPrompt(&Prompt{Name: "brief"}, func(ctx context.Context, r *GetPromptRequest) (PromptResponse, error) {
		if r.RequestState == "p" {
			return &GetPromptResult{Messages: []PromptMessage{{Role: RoleUser, Content: &TextContent{Text: "ok"}}}}, nil
		}
		return &InputRequiredResult{RequestState: "p"}, nil
	})
	s.AddResourceTemplate(&ResourceTemplate{URITemplate: "doc://{id}", Name: "doc"}, func(ctx context.Context, r *ReadResourceRequest) (ResourceResponse, error) {
		if r.RequestState == "r"+r.Var("id") {
			return &ReadResourceResult{Contents: []*ResourceContents{{URI: r.URI, Text: "ok"}}}, nil
		}
		return &InputRequiredResult{RequestState: "r" + r.Var("id")}, nil
	})
	h := NewHTTPHandler(s, nil)
	st := result(t, post(t, h, req(1, MethodPromptsGet, `"name":"brief","arguments":{"a":"1"}`)).last(t))["requestState"].(string)
	if !strings.HasPrefix(st, "v1.") {
		t.Fatalf("prompt state not sealed: %q", st)
	}
	b, _ := json.Marshal(st)
	if r := result(t, post(t, h, req(2, MethodPromptsGet, `"name":"brief","arguments":{"a":"1"},"requestState":`+string(b))).last(t)); r["resultType"] != "complete" {
		t.Errorf("prompt retry: %v", r)
	}
	if got := rawError(t, post(t, h, req(3, MethodPromptsGet, `"name":"brief","arguments":{"a":"2"},"requestState":`+string(b))).last(t)); got != fixedRejection {
		t.Errorf("prompt cross-arguments: %s", got)
	}
	st = result(t, post(t, h, req(4, MethodResourcesRead, `"uri":"doc://7"`)).last(t))["requestState"].(string)
	b, _ = json.Marshal(st)
	if r := result(t, post(t, h, req(5, MethodResourcesRead, `"uri":"doc://7","requestState":`+string(b))).last(t)); r["resultType"] != "complete" {
		t.Errorf("resource retry: %v", r)
	}
	if got := rawError(t, post(t, h, req(6, MethodResourcesRead, `"uri":"doc://8","requestState":`+string(b))).last(t)); got != fixedRejection {
		t.Errorf("resource cross-target: %s", got)
	}
}

// Go's encoding/json maps both lone surrogates to U+FFFD; the state is
// bound to the raw argument text, so one cannot stand in for the other.
func TestLoneSurrogateArgumentsDoNotShareAState(t *testing.T) {
	t.Parallel()
	s := newStateServer(t, "svc", RequestStateOptions{})
	st := round1(t, s, "flow", `{"x":"\ud800"}`)
	if got := rawError(t, s.call(t, 2, "flow", `{"x":"\udfff"}`, &st)); got != fixedRejection {
		t.Errorf("state for \\ud800 accepted with \\udfff: %s", got)
	}
}

// carriesState, the state boundary's quick test, and binding, which
// binds, agree on every kind of request: a kind binding binds that
// carriesState missed would pass the boundary unchecked.
func TestCarriesStateAgreesWithBinding(t *testing.T) {
	t.Parallel()
	for _, p := range []Params{
		&CallToolRequest{}, &GetPromptRequest{}, &ReadResourceRequest{},
		&ExtensionRequest{}, &ExtensionRequest{m: &customMethod{spec: MethodSpec{Carrier: true}}},
		&ExtensionRequest{m: &customMethod{spec: MethodSpec{}}},
		&pingRequest{}, &SetLevelRequest{}, &SubscribeRequest{}, &ListRequest{}, &discoverRequest{},
		&CompleteRequest{}, &ListenRequest{},
	} {
		rp, _ := binding("m", p)
		if got, want := carriesState(p), rp != nil; got != want {
			t.Errorf("%T: carriesState %v, binding binds: %v", p, got, want)
		}
	}
}
