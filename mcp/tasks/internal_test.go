package tasks

import (
	"context"
	"io"
	"log/slog"

	"encoding/base64"
	"encoding/json"
	"errors"
	"github.com/roundtrip-mcp/roundtrip/mcp"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
)

// The server's pollIntervalMs is taken within the client's bounds, and
// at most MaxInputRequests questions of a status are answered at once,
// by key order, skipping those answered already.
func TestPollIntervalAndInputsStayWithinTheClientsBounds(t *testing.T) {
	t.Parallel()
	o := ClientOptions{MaxPollInterval: time.Second}
	o.defaults()
	for ms, want := range map[int64]time.Duration{0: time.Second, 20: 20 * time.Millisecond, 1 << 62: time.Second} {
		if got := o.pollInterval(ms); got != want {
			t.Errorf("pollInterval(%d) = %v, want %v", ms, got, want)
		}
	}
	q := json.RawMessage(`{"method":"roots/list","params":{}}`)
	st := &Task{InputRequests: map[string]json.RawMessage{"a": q, "b": q, "c": q, "d": q}}
	keys := slices.Sorted(maps.Keys(pendingInputs(st, map[string]bool{"a": true}, 2)))
	if strings.Join(keys, ",") != "b,c" {
		t.Fatalf("keys %v", keys)
	}
}

// Without authentication the id is all a caller needs, so it must be
// unguessable: 128 bits from crypto/rand.
func TestTaskIDsCarry128RandomBits(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 1000 {
		id := newTaskID()
		b, err := base64.RawURLEncoding.DecodeString(id)
		if err != nil || len(b) < 16 {
			t.Fatalf("task id %q: %d bytes (%v)", id, len(b), err)
		}
		if seen[id] {
			t.Fatalf("task id %q repeated", id)
		}
		seen[id] = true
	}
}

// FuzzDecodeTask feeds arbitrary params (as the extension seam hands
// them over: without _meta, no member repeated; the seam's own decoder
// is FuzzDecodeExtension in package mcp) to the decoder of tasks/update:
// no panic, and either an error or answers.
func FuzzDecodeTask(f *testing.F) {
	for _, s := range []string{
		`{"taskId":"abc","inputResponses":{"k":{"action":"accept","content":{"n":1}}}}`,
		`{"taskId":"abc","requestState":"x"}`,
		`{"taskId":null,"inputResponses":null}`,
		`{"taskId":"a","InputResponses":{}}`, `{"inputResponses":{"a":1,"a":2}}`, `[]`, `{`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return // the envelope checked the JSON
		}
		rs, err := decodeUpdate(raw)
		if err == nil {
			for k, v := range rs {
				if !json.Valid(v) {
					t.Fatalf("answer %q decoded to invalid JSON %q", k, v)
				}
			}
		}
	})
}

// FuzzTaskSignal feeds arbitrary answers arriving through a shared store
// to a task's owner: never a panic, and only well-formed answers to keys
// that are pending reach the waiting question.
func FuzzTaskSignal(f *testing.F) {
	for _, s := range []string{
		`{"k":{"action":"accept","content":{"name":"Ada"}}}`,
		`{"k":null,"other":{"action":"decline"}}`,
		`{"k":1,"k":2}`, `[]`, `{`, `null`, ``,
	} {
		f.Add([]byte(s))
	}
	srv := mcp.NewServer(mcp.Implementation{Name: "fuzz", Version: "1"}, &mcp.ServerOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	f.Fuzz(func(t *testing.T, raw []byte) {
		rt := newRuntime(srv, Options{})
		ttl := time.Hour.Milliseconds()
		seed := &Task{TaskID: "t", Status: Working, CreatedAt: time.Now(), TTLMs: &ttl}
		if err := rt.store.Create(context.Background(), seed); err != nil {
			t.Fatal(err)
		}
		p := &pendingInput{raw: json.RawMessage(`{"method":"elicitation/create","params":{}}`), answer: make(chan json.RawMessage, 1)}
		lt := &liveTask{rt: rt, id: "t", cancel: func() {}, snap: seed, pending: map[string]*pendingInput{"k": p}, used: map[string]bool{"k": true}}
		rt.live["t"] = lt
		rt.receive(Signal{TaskID: "t", InputResponses: raw})
		select {
		case ans := <-p.answer:
			if !json.Valid(ans) || string(ans) == "null" {
				t.Fatalf("delivered %q from %q", ans, raw)
			}
		default:
		}
		rt.receive(Signal{TaskID: "t", Cancel: true})
		if rt.local("t") != nil {
			t.Fatal("a cancel signal left the task running")
		}
	})
}

// FuzzTaskState decodes arbitrary task states, a seed answering
// tools/call or a tasks/get result, as the client's task loop does, and
// answers their questions with stub handlers: no panic, and what is
// accepted is consistent.
func FuzzTaskState(f *testing.F) {
	for _, s := range []string{
		`{"resultType":"task","taskId":"t","status":"working","ttlMs":3600000,"pollIntervalMs":1000,"createdAt":"2026-01-01T00:00:00Z","lastUpdatedAt":"x"}`,
		`{"resultType":"task","taskId":"","status":"completed","pollIntervalMs":-5,"ttlMs":null}`,
		`{"taskId":"t","status":"input_required","pollIntervalMs":9223372036854775807,"inputRequests":{"a":{"method":"elicitation/create","params":{"message":"m","requestedSchema":{"type":"object","properties":{"n":{"type":"string","default":"d"}}}}},"b":{"method":"roots/list"}}}`,
		`{"taskId":"t","status":"completed","result":{"content":[{"type":"text","text":"ok"}],"isError":false}}`,
		`{"taskId":"t","status":"completed","result":{"resultType":"task","taskId":"u"}}`,
		`{"taskId":"t","status":"failed","error":{"code":-32603,"message":"boom","data":{"x":1}}}`,
		`{"taskId":"t","status":"failed","error":{"code":1.5,"message":"x"}}`,
		`{"taskId":"t","status":"cancelled","statusMessage":7,"ttlMs":1e400}`,
		`{"taskId":"t","status":"input_required","inputRequests":{"x":{"method":"tasks/get"}}}`,
	} {
		f.Add([]byte(s))
	}
	c := mcp.NewClient(mcp.NewHTTPClientTransport("http://127.0.0.1:1/mcp", nil), &mcp.ClientOptions{
		Logger: slog.New(slog.DiscardHandler),
		Elicitation: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: map[string]any{"name": "Ada"}}, nil
		},
		//lint:ignore SA1019 sampling, deprecated in 2026-07-28, is still served to the revisions that have it
		Sampling: func(ctx context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Role: mcp.RoleAssistant, Model: "m", Content: []mcp.Content{&mcp.TextContent{Text: "Paris"}}}, nil
		},
		//lint:ignore SA1019 roots, deprecated in 2026-07-28, is still served to the revisions that have it
		Roots: func(ctx context.Context, r *mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
			return &mcp.ListRootsResult{Roots: []mcp.Root{{URI: "file:///a"}}}, nil
		},
	})
	var o ClientOptions
	o.defaults()
	f.Fuzz(func(t *testing.T, raw []byte) {
		st, err := decodeState(mcp.MethodToolsCall, "", raw)
		if err != nil {
			return
		}
		if d := o.pollInterval(st.PollIntervalMs); d <= 0 || d > o.MaxPollInterval {
			t.Fatalf("poll interval %v out of bounds", d)
		}
		switch st.Status {
		case Completed:
			if _, err := resultTypeOf(MethodGet, st.Result); err == nil {
				_, _ = c.DecodeToolResult("", st.Result)
			}
		case Failed:
			if st.Error == nil {
				t.Fatal("failed task accepted without an error")
			}
		}
		reqs := pendingInputs(st, map[string]bool{}, o.MaxInputRequests)
		if len(reqs) == 0 {
			return
		}
		resp, err := c.Answer(context.Background(), MethodGet, reqs)
		if err != nil {
			var ie *mcp.InvalidResponseError
			if errors.As(err, &ie) {
				return // a question that does not decode
			}
			t.Fatalf("stub handlers failed: %v", err)
		}
		if !json.Valid(resp) {
			t.Fatalf("inputResponses is not valid JSON: %s", resp)
		}
	})
}
