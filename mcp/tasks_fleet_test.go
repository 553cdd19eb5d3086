package mcp

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"
)

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
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	f.Fuzz(func(t *testing.T, raw []byte) {
		rt := newTaskRuntime(TaskOptions{}, log)
		ttl := time.Hour.Milliseconds()
		seed := &Task{TaskID: "t", Status: TaskWorking, CreatedAt: time.Now(), TTLMs: &ttl}
		if err := rt.store.Create(context.Background(), seed); err != nil {
			t.Fatal(err)
		}
		p := &pendingInput{raw: json.RawMessage(`{"method":"elicitation/create","params":{}}`), answer: make(chan json.RawMessage, 1)}
		lt := &liveTask{rt: rt, id: "t", cancel: func() {}, snap: seed, pending: map[string]*pendingInput{"k": p}, used: map[string]bool{"k": true}}
		rt.live["t"] = lt
		rt.receive(TaskSignal{TaskID: "t", InputResponses: raw})
		select {
		case ans := <-p.answer:
			if !json.Valid(ans) || string(ans) == "null" {
				t.Fatalf("delivered %q from %q", ans, raw)
			}
		default:
		}
		rt.receive(TaskSignal{TaskID: "t", Cancel: true})
		if rt.local("t") != nil {
			t.Fatal("a cancel signal left the task running")
		}
	})
}
