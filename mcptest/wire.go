package mcptest

import (
	"bytes"
	"encoding/json"
	"io"
	"sync"
)

// Message is one JSON-RPC message that crossed the pipe between the
// harness's client and the server.
type Message struct {
	// FromClient is true for a message the client sent (requests,
	// notifications, answers to the server's live requests) and false
	// for one the server sent.
	FromClient bool
	// JSON is the message exactly as it was framed, without its newline.
	JSON json.RawMessage
}

// Method returns the method of a request or notification, and "" for a
// response (or a message that is not a JSON object).
func (m Message) Method() string {
	var v struct {
		Method string `json:"method"`
	}
	json.Unmarshal(m.JSON, &v)
	return v.Method
}

// String returns the message with an arrow for its direction: "→ " for
// one the client sent, "← " for one the server sent.
func (m Message) String() string {
	if m.FromClient {
		return "→ " + string(m.JSON)
	}
	return "← " + string(m.JSON)
}

// Wire returns every message that crossed the pipe since New, both ways,
// in the order the server read or wrote them (so a message caused by
// another always comes after it). In the Legacy era it starts with the
// handshake.
func (h *Harness) Wire() []Message {
	h.wire.mu.Lock()
	defer h.wire.mu.Unlock()
	return append([]Message(nil), h.wire.msgs...)
}

// logWire logs the end of the wire, for a test that failed.
func (h *Harness) logWire() {
	const last, width = 40, 600
	msgs := h.Wire()
	if len(msgs) == 0 {
		return
	}
	var b bytes.Buffer
	b.WriteString("mcptest: the wire")
	if len(msgs) > last {
		b.WriteString(" (the last 40 messages)")
		msgs = msgs[len(msgs)-last:]
	}
	b.WriteString(":")
	for _, m := range msgs {
		s := m.String()
		if len(s) > width {
			s = s[:width] + "…"
		}
		b.WriteString("\n\t" + s)
	}
	h.t.Logf("%s", b.String())
}

// recorder keeps the messages of both directions, split at newlines.
type recorder struct {
	mu   sync.Mutex
	msgs []Message
	// partial lines of each direction
	in, out []byte
}

// add appends the complete lines of p (after what was left of the
// direction's last chunk).
func (r *recorder) add(fromClient bool, p []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	buf := &r.out
	if fromClient {
		buf = &r.in
	}
	*buf = append(*buf, p...)
	for {
		i := bytes.IndexByte(*buf, '\n')
		if i < 0 {
			return
		}
		line := bytes.TrimSpace((*buf)[:i])
		if len(line) > 0 {
			r.msgs = append(r.msgs, Message{FromClient: fromClient, JSON: bytes.Clone(line)})
		}
		*buf = (*buf)[i+1:]
	}
}

func (r *recorder) reader(src io.Reader) io.Reader { return &recReader{r, src} }
func (r *recorder) writer(dst io.Writer) io.Writer { return &recWriter{r, dst} }

// recReader records what the server reads: the client's messages.
type recReader struct {
	r   *recorder
	src io.Reader
}

func (rr *recReader) Read(p []byte) (int, error) {
	n, err := rr.src.Read(p)
	if n > 0 {
		rr.r.add(true, p[:n])
	}
	return n, err
}

// recWriter records what the server writes before the client can read
// it, so that an answer is always recorded after its question.
type recWriter struct {
	r   *recorder
	dst io.Writer
}

func (rw *recWriter) Write(p []byte) (int, error) {
	rw.r.add(false, p)
	return rw.dst.Write(p)
}
