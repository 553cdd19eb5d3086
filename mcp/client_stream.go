package mcp

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
)

// StreamClientOptions configure a byte-stream client transport. The zero
// value is valid.
type StreamClientOptions struct {
	// MaxMessageBytes bounds one incoming line. Zero means
	// DefaultMaxMessageBytes (4 MiB). A longer line is skipped; the
	// request it answers (when its id can be read from its first bytes)
	// fails with ErrMessageTooLarge.
	MaxMessageBytes int
	// Logger receives the transport's warnings (dropped lines). Nil
	// means slog.Default().
	Logger *slog.Logger
}

// NewStreamClientTransport returns a transport that speaks
// newline-delimited JSON-RPC (the stdio framing) on rwc, such as the
// client end of NewInMemoryTransports or a network connection to a
// server's ServeStream. Requests run concurrently, matched to responses
// by id; a response to an unknown id is ignored; when a call's context
// ends, the transport sends notifications/cancelled for it. Close closes
// rwc.
func NewStreamClientTransport(rwc io.ReadWriteCloser, opts *StreamClientOptions) ClientTransport {
	t := newStreamClientTransport(rwc, rwc, rwc.Close, opts)
	_, t.memory = rwc.(*pipeEnd)
	return t
}

// NewCommandTransport starts cmd and returns a transport speaking stdio
// to it: requests on its standard input, responses on its standard
// output. cmd.Stdin and cmd.Stdout must be unset; cmd.Stderr is left as
// the caller set it (nil discards the server's logs). Close closes the
// server's standard input, waits up to five seconds for it to exit, and
// then kills it.
func NewCommandTransport(cmd *exec.Cmd, opts *StreamClientOptions) (ClientTransport, error) {
	if cmd.Stdout != nil {
		return nil, errors.New("mcp: command transport: cmd.Stdout is already set")
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("mcp: command transport: %w", err)
	}
	// Our own pipe for stdout: cmd.Wait closes the pipes it made as soon
	// as the process exits, which could drop its last responses.
	stdout, w, err := os.Pipe()
	if err != nil {
		stdin.Close()
		return nil, fmt.Errorf("mcp: command transport: %w", err)
	}
	cmd.Stdout = w
	err = cmd.Start()
	w.Close()
	if err != nil {
		stdin.Close()
		stdout.Close()
		return nil, fmt.Errorf("mcp: starting %s: %w", cmd.Path, err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	var once sync.Once
	closeFn := func() error {
		once.Do(func() {
			stdin.Close()
			select {
			case <-exited:
			case <-time.After(5 * time.Second):
				cmd.Process.Kill()
				<-exited
			}
			stdout.Close()
		})
		return nil
	}
	return newStreamClientTransport(stdout, stdin, closeFn, opts), nil
}

type streamClientTransport struct {
	r       io.Reader
	w       io.Writer
	closeFn func() error
	max     int
	log     *slog.Logger
	memory  bool // the client end of NewInMemoryTransports
	hooks   *clientHooks
	// ctx ends with the transport: handlers answering the server's
	// requests (legacy sessions) are cancelled.
	ctx    context.Context
	cancel context.CancelFunc

	wmu     sync.Mutex
	writing atomic.Int64 // id of the request being written, 0 when none

	mu      sync.Mutex
	pending map[int64]*streamCall
	err     error // set once the transport is closed or broken
}

type streamCall struct {
	ch     chan streamReply // buffered: the reader never blocks on it
	method string
	notify func(method string, params []byte)
}

type streamReply struct {
	result []byte
	err    error
}

func newStreamClientTransport(r io.Reader, w io.Writer, closeFn func() error, opts *StreamClientOptions) *streamClientTransport {
	t := &streamClientTransport{r: r, w: w, closeFn: closeFn, max: DefaultMaxMessageBytes, pending: map[int64]*streamCall{}}
	t.ctx, t.cancel = context.WithCancel(context.Background())
	if opts != nil {
		if opts.MaxMessageBytes > 0 {
			t.max = opts.MaxMessageBytes
		}
		t.log = opts.Logger
	}
	if t.log == nil {
		t.log = slog.Default()
	}
	go t.readLoop()
	return t
}

func (t *streamClientTransport) mirrorsHeaders() bool { return false }
func (t *streamClientTransport) inMemory() bool       { return t.memory }
func (t *streamClientTransport) releasesBody() bool   { return true }
func (t *streamClientTransport) kind() string {
	if t.memory {
		return "memory"
	}
	return "stdio"
}

func (t *streamClientTransport) bind(h *clientHooks) {
	t.mu.Lock()
	t.hooks = h
	t.mu.Unlock()
}

// notify writes a notification line.
func (t *streamClientTransport) notify(ctx context.Context, r *wireRequest) error {
	t.mu.Lock()
	err := t.err
	t.mu.Unlock()
	if err != nil {
		return err
	}
	return t.write(ctx, 0, r.body)
}

// endSession does nothing: a legacy session on a byte stream ends with
// the stream.
func (t *streamClientTransport) endSession(context.Context, string, string) {}

// Close closes the stream; calls in flight fail with ErrTransportClosed.
func (t *streamClientTransport) Close() error {
	err := t.closeFn()
	t.fail(ErrTransportClosed)
	return err
}

// fail ends the transport: every call in flight and every later call
// gets err.
func (t *streamClientTransport) fail(err error) {
	t.cancel()
	t.mu.Lock()
	if t.err == nil {
		t.err = err
	}
	for id, c := range t.pending {
		delete(t.pending, id)
		c.ch <- streamReply{err: t.err}
	}
	t.mu.Unlock()
}

// callPool recycles the slots of calls that got their reply (a slot
// whose call was abandoned may still receive one, so it is not reused).
var callPool = sync.Pool{New: func() any { return &streamCall{ch: make(chan streamReply, 1)} }}

func (t *streamClientTransport) roundTrip(ctx context.Context, r *wireRequest) ([]byte, error) {
	c := callPool.Get().(*streamCall)
	c.method, c.notify = r.method, r.notify
	t.mu.Lock()
	if t.err != nil {
		err := t.err
		t.mu.Unlock()
		return nil, err
	}
	t.pending[r.id] = c
	t.mu.Unlock()
	if err := t.write(ctx, r.id, r.body); err != nil {
		if t.forget(r.id) {
			c.notify = nil
			callPool.Put(c)
		}
		return nil, err
	}
	select {
	case rep := <-c.ch:
		c.notify = nil
		callPool.Put(c)
		return rep.result, rep.err
	case <-ctx.Done():
		if t.forget(r.id) {
			t.sendCancelled(r.id, context.Cause(ctx))
		}
		return nil, ctx.Err()
	}
}

// forget removes a pending call; it reports whether it was still there.
func (t *streamClientTransport) forget(id int64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.pending[id]
	delete(t.pending, id)
	return ok
}

// write writes one line. A write still blocked when ctx ends (a server
// that stopped reading) closes the transport: half a line cannot be
// taken back.
func (t *streamClientTransport) write(ctx context.Context, id int64, body []byte) error {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	var stop func() bool
	if ctx.Done() != nil {
		t.writing.Store(id)
		stop = context.AfterFunc(ctx, func() {
			if t.writing.Load() == id {
				t.fail(fmt.Errorf("%w: a write was still blocked when its context ended", ErrTransportClosed))
				t.closeFn()
			}
		})
	}
	_, err := t.w.Write(append(body, '\n'))
	if stop != nil {
		t.writing.Store(0)
		stop()
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		t.fail(fmt.Errorf("%w: %v", ErrTransportClosed, err))
		return fmt.Errorf("%w: %v", ErrTransportClosed, err)
	}
	return nil
}

func (t *streamClientTransport) sendCancelled(id int64, cause error) {
	b := make([]byte, 0, 128)
	b = append(b, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`...)
	b = strconv.AppendInt(b, id, 10)
	if cause != nil {
		b = append(b, `,"reason":`...)
		b = jsonrpc.AppendString(b, cause.Error())
	}
	b = append(b, "}}"...)
	// Best effort, and never blocking the caller whose context ended.
	go t.write(context.Background(), 0, b)
}

func (t *streamClientTransport) readLoop() {
	br := bufio.NewReaderSize(t.r, 64<<10)
	for {
		line, head, err := readBoundedLine(br, t.max)
		if errors.Is(err, errLineTooLong) {
			t.dropLine(head, ErrMessageTooLarge)
			continue
		}
		if len(jsonrpc.TrimSpace(line)) > 0 {
			t.dispatch(line)
		}
		if err != nil {
			if err == io.EOF {
				err = ErrTransportClosed
			} else {
				err = fmt.Errorf("%w: %v", ErrTransportClosed, err)
			}
			t.fail(err)
			return
		}
	}
}

// dropLine fails the request a bad line was meant for, when its id can
// be read from the line's first bytes; otherwise it only logs.
func (t *streamClientTransport) dropLine(head []byte, reason error) {
	if id, ok := leadingID(head); ok {
		if c := t.take(id); c != nil {
			c.ch <- streamReply{err: &InvalidResponseError{Method: c.method, Err: reason}}
			return
		}
	}
	t.log.Warn("mcp: client: dropped a line from the server", "err", reason)
}

// take removes and returns the pending call with id.
func (t *streamClientTransport) take(id int64) *streamCall {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.pending[id]
	delete(t.pending, id)
	return c
}

func (t *streamClientTransport) dispatch(line []byte) {
	msg, e := jsonrpc.Decode(line)
	if e != nil {
		if id, ok := idOf(msg.ID); ok {
			if c := t.take(id); c != nil {
				c.ch <- streamReply{err: invalidResponse(c.method, "%s", e.Message)}
				return
			}
		}
		t.dropLine(line[:min(len(line), 256)], errors.New(e.Message))
		return
	}
	switch {
	case msg.IsResponse():
		id, ok := idOf(msg.ID)
		if !ok {
			return
		}
		c := t.take(id)
		if c == nil {
			return // an answer to nothing we asked (or cancelled): ignored
		}
		res, err := responseOf(c.method, &msg)
		c.ch <- streamReply{result: res, err: err}
	case msg.IsNotification():
		t.route(msg.Method, msg.Params)
	case msg.IsRequest():
		t.serve(msg)
	}
}

// serve answers a request of the server (a legacy session's
// elicitation/create, sampling/createMessage, roots/list or ping) on its
// own goroutine, so that reading goes on while a handler runs.
func (t *streamClientTransport) serve(msg jsonrpc.Message) {
	t.mu.Lock()
	h := t.hooks
	t.mu.Unlock()
	if h == nil || h.serve == nil {
		return
	}
	params := bytes.Clone(msg.Params)
	go func() {
		if resp := h.serve(t.ctx, msg.ID, msg.Method, params); resp != nil {
			if err := t.write(t.ctx, 0, resp); err != nil && t.ctx.Err() == nil {
				t.log.Warn("mcp: client: could not answer the server's request", "method", msg.Method, "err", err)
			}
		}
	}()
}

func (t *streamClientTransport) route(method string, params []byte) {
	id, ok := notificationRoute(method, params)
	t.mu.Lock()
	h := t.hooks
	if ok && method == NotificationCancelled && h != nil && h.legacy != nil && h.legacy() {
		// On a legacy session the server cancels its own requests.
		ok = false
	}
	var c *streamCall
	if ok {
		c = t.pending[id]
		if c != nil && method == NotificationCancelled {
			delete(t.pending, id)
		}
	}
	t.mu.Unlock()
	var unrouted func(string, []byte)
	if h != nil {
		unrouted = h.unrouted
	}
	switch {
	case c != nil && method == NotificationCancelled:
		c.ch <- streamReply{err: errServerCancelled}
	case c != nil:
		if c.notify != nil {
			c.notify(method, params)
		}
	case unrouted != nil:
		unrouted(method, params)
	}
}

// errServerCancelled ends a request the server cancelled (on a byte
// stream, the way a server may end a subscriptions/listen stream).
var errServerCancelled = errors.New("mcp: the server cancelled the request")

// readBoundedLine reads one line (without the newline) of at most max
// bytes. For a longer line it skips the rest and returns errLineTooLong
// with the line's first bytes in head.
func readBoundedLine(br *bufio.Reader, max int) (line, head []byte, err error) {
	var buf []byte
	for {
		frag, err := br.ReadSlice('\n')
		if len(buf)+len(frag) > max+1 {
			head = append(buf[:min(len(buf), 256):min(len(buf), 256)], frag[:min(len(frag), 256-min(len(buf), 256))]...)
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			if err != nil && err != io.EOF {
				return nil, head, err
			}
			return nil, head, errLineTooLong
		}
		buf = append(buf, frag...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if n := len(buf); n > 0 && buf[n-1] == '\n' {
			buf = buf[:n-1]
		}
		return buf, nil, err
	}
}
