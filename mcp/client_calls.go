package mcp

import (
	"bytes"
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
)

// The calls a client transport waits on, where one reader takes the
// server's messages for all of them (the stream transport, the HTTP+SSE
// transport): a call is added before its request goes out, its reply is
// delivered to it by id, and when the transport ends every call still
// waiting fails.

// waitingCall is one call waiting for its reply.
type waitingCall struct {
	ch     chan streamReply // buffered: the reader never blocks on it
	method string
	notify func(method string, params []byte) // the notifications related to the call; nil for none
}

// streamReply is what a waiting call gets: its result, or why it has
// none.
type streamReply struct {
	result []byte
	err    error
}

// callTable is the waiting calls of one transport by request id. It is
// guarded by the transport's own mutex (mu), which guards the rest of
// its state with it: the methods named …Locked are called with mu held,
// the others take it.
type callTable struct {
	mu    *sync.Mutex
	calls map[int64]*waitingCall
}

func newCallTable(mu *sync.Mutex) callTable {
	return callTable{mu: mu, calls: make(map[int64]*waitingCall)}
}

func (t *callTable) addLocked(id int64, c *waitingCall) { t.calls[id] = c }

// getLocked returns the call waiting on id, nil when none does.
func (t *callTable) getLocked(id int64) *waitingCall { return t.calls[id] }

func (t *callTable) lenLocked() int { return len(t.calls) }

// takeLocked removes and returns the call waiting on id (nil: none).
func (t *callTable) takeLocked(id int64) *waitingCall {
	c := t.calls[id]
	delete(t.calls, id)
	return c
}

// take is takeLocked, taking mu.
func (t *callTable) take(id int64) *waitingCall {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.takeLocked(id)
}

// failLocked fails every waiting call with err and empties the table.
func (t *callTable) failLocked(err error) {
	for id, c := range t.calls {
		delete(t.calls, id)
		c.ch <- streamReply{err: err}
	}
}

// dispatch handles one message the reader read: a response goes to the
// call waiting on its id (an answer to nothing waiting is ignored), a
// notification to route, a request of the server to serve. A malformed
// message fails the call its id names; when it names none, dispatch
// returns the decoding error for the caller to report. clone copies the
// response's bytes first, for a reader that reuses data.
func (t *callTable) dispatch(data []byte, clone bool, route func(method string, params []byte), serve func(jsonrpc.Message)) *Error {
	msg, e := jsonrpc.Decode(data)
	if e != nil {
		if id, ok := idOf(msg.ID); ok {
			if c := t.take(id); c != nil {
				c.ch <- streamReply{err: invalidResponse(c.method, "%s", e.Message)}
				return nil
			}
		}
		return e
	}
	switch {
	case msg.IsResponse():
		id, ok := idOf(msg.ID)
		if !ok {
			return nil
		}
		c := t.take(id)
		if c == nil {
			return nil // an answer to nothing we asked (or gave up on): ignored
		}
		if clone {
			msg.Result, msg.Error = bytes.Clone(msg.Result), bytes.Clone(msg.Error)
		}
		res, err := responseOf(c.method, &msg)
		c.ch <- streamReply{result: res, err: err}
	case msg.IsNotification():
		route(msg.Method, msg.Params)
	case msg.IsRequest():
		serve(msg)
	}
	return nil
}

// appendCancelled appends the notifications/cancelled a transport sends
// for a call it gave up on (id), with cause as its reason when there is
// one.
func appendCancelled(b []byte, id int64, cause error) []byte {
	b = append(b, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`...)
	b = strconv.AppendInt(b, id, 10)
	if cause != nil {
		b = append(b, `,"reason":`...)
		b = jsonrpc.AppendString(b, cause.Error())
	}
	return append(b, "}}"...)
}

// answer answers a request of the server (a legacy session's
// elicitation/create, sampling/createMessage, roots/list or ping) with
// the Client's handler (h.serve), on a goroutine of its own so that
// reading goes on, within the transport's slots (at most
// maxConcurrentAnswers at once, client_answers.go): send delivers the
// response, or the busy refusal when the slots are full, within wait.
// A request with no handler or no id gets nothing; one that finds even
// the refusals' slots full is dropped, with a warning.
func (a *answerSlots) answer(ctx context.Context, h *clientHooks, msg jsonrpc.Message, send func(resp []byte, wait time.Duration), warn func(msg string, args ...any)) {
	if h == nil || h.serve == nil || msg.ID.IsZero() {
		return
	}
	params := bytes.Clone(msg.Params)
	ok := a.run(func() {
		if resp := h.serve(ctx, msg.ID, msg.Method, params); resp != nil {
			send(resp, answerPostTimeout)
		}
	}, func() { send(busyResponse(msg.ID), refusalPostTimeout) })
	if !ok {
		warn("mcp: client: dropped a request of the server: too many in flight", "method", msg.Method)
	}
}
