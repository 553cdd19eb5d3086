package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
	"github.com/roundtrip-mcp/roundtrip/mcp/internal/linepipe"
)

// StreamClientOptions configure a byte-stream client transport. The zero
// value is valid.
type StreamClientOptions struct {
	// MaxMessageBytes bounds one incoming line. Zero means
	// 4 MiB. A longer line is skipped; the
	// request it answers (when its id can be read from its first bytes)
	// fails with ErrMessageTooLarge.
	MaxMessageBytes int
	// Logger receives the transport's warnings (dropped lines). Nil
	// means slog.Default().
	Logger *slog.Logger
	// ExitWait and TermWait are the waits of NewCommandTransport's
	// Close, which shuts the server down in the order the stdio
	// transport's specification gives: close its standard input, wait
	// up to ExitWait for it to exit, send SIGTERM, wait up to TermWait,
	// send SIGKILL. Zero means 1 s each. (Where SIGTERM cannot be sent,
	// on Windows, SIGKILL follows ExitWait.)
	ExitWait time.Duration
	TermWait time.Duration
}

// Default waits of a command transport's Close.
const (
	defaultExitWait = time.Second
	defaultTermWait = time.Second
)

// NewStreamClientTransport returns a transport that speaks
// newline-delimited JSON-RPC (the stdio framing) on rwc, such as the
// client end of NewInMemoryTransports or a network connection to a
// server's ServeStream. Requests run concurrently, matched to responses
// by id; a response to an unknown id is ignored; when a call's context
// ends, the transport sends notifications/cancelled for it. Close closes
// rwc.
//
// A call made while no other is in flight reads its own response on its
// own goroutine, as a bare line loop would, when it can stop reading on
// cancellation: its context cannot end, or rwc has SetReadDeadline (an
// *os.File pipe, a net.Conn, NewInMemoryTransports). Otherwise, and
// whenever calls overlap, one goroutine reads for all of them. On a
// 2026-07-28 session the server writes nothing between calls, so nothing
// reads then. Once initialize opened a 2025-11-25 session, which the
// server may speak on at any time, a call still reads its own response,
// and a watch makes a goroutine read whenever no call has been made for
// a millisecond or so, until the next call's response came.
func NewStreamClientTransport(rwc io.ReadWriteCloser, opts *StreamClientOptions) ClientTransport {
	t := newStreamClientTransport(rwc, rwc, rwc.Close, opts)
	_, t.memory = rwc.(*linepipe.End)
	return t
}

// NewCommandTransport starts cmd and returns a transport speaking stdio
// to it: requests on its standard input, responses on its standard
// output. cmd.Stdin and cmd.Stdout must be unset; cmd.Stderr is left as
// the caller set it (nil discards the server's logs). Close closes the
// server's standard input, waits up to StreamClientOptions.ExitWait for
// it to exit, then sends it SIGTERM, waits up to TermWait, and then
// kills it (SIGKILL); it returns once the process has exited.
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
	exitWait, termWait := defaultExitWait, defaultTermWait
	if opts != nil {
		if opts.ExitWait > 0 {
			exitWait = opts.ExitWait
		}
		if opts.TermWait > 0 {
			termWait = opts.TermWait
		}
	}
	var once sync.Once
	closeFn := func() error {
		once.Do(func() {
			stdin.Close()
			stopProcess(cmd.Process, exited, exitWait, termWait)
			stdout.Close()
		})
		return nil
	}
	return newStreamClientTransport(stdout, stdin, closeFn, opts), nil
}

// stopProcess ends a server whose standard input was just closed, as
// the stdio transport's shutdown says: wait up to exitWait for it to
// exit, then SIGTERM, wait up to termWait, then SIGKILL. It returns once
// exited is closed.
func stopProcess(p *os.Process, exited <-chan struct{}, exitWait, termWait time.Duration) {
	wait := func(d time.Duration) bool {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-exited:
			return true
		case <-t.C:
			return false
		}
	}
	if wait(exitWait) {
		return
	}
	if p.Signal(syscall.SIGTERM) == nil && wait(termWait) {
		return
	}
	p.Kill()
	<-exited
}

type streamClientTransport struct {
	r       io.Reader
	w       io.Writer
	closeFn func() error
	max     int
	log     *slog.Logger
	memory  bool // the client end of NewInMemoryTransports
	// deadline sets the read deadline of r; nil when r has none.
	deadline func(time.Time) error
	hooks    *clientHooks
	// ctx ends with the transport: handlers answering the server's
	// requests (legacy sessions) are cancelled.
	ctx    context.Context
	cancel context.CancelFunc

	wmu     sync.Mutex
	writing atomic.Int64 // id of the request being written, 0 when none

	// A request whose context cannot end gets its bound
	// (wireRequest.timeout, ClientOptions.DefaultTimeout) from the
	// transport, at no cost on the sequential path: its due time, as a
	// duration since epoch (monotonic), arms one of two timers the
	// transport keeps, made by the first bounded request and then reset.
	// wtimer closes the transport when the write in progress, whose due
	// time is wdue (0: none or unbounded), is still blocked then (under
	// wmu). rtimer stops the read of the leader, whose due time is due
	// (0: unbounded), as interrupt does (under mu). A call that does not
	// lead waits with a timer of its own.
	epoch  time.Time
	wtimer *time.Timer
	wdue   atomic.Int64
	rtimer *time.Timer
	due    time.Duration

	mu    sync.Mutex
	calls callTable // the calls waiting for their replies (client_calls.go)
	slots sync.Pool // recycled *waitingCall slots (newCall)
	err   error     // set once the transport is closed or broken

	// Reading, done by one goroutine at a time: a call reading for its
	// own response (lead) or readLoop. reading, under mu, says one does;
	// leader is the id of the call that does, 0 for readLoop;
	// interrupted, that the leader's context ended (or its due time
	// passed) and the read deadline was set to stop it; session, that
	// initialize was sent (a legacy session: read between calls too,
	// see watch). lines
	// belongs to the reader.
	reading     bool
	leader      int64
	interrupted bool
	session     bool
	lines       linepipe.Reader

	// The idle watch of a legacy session (under mu): a server may send a
	// request or a notification between calls, when no call reads.
	// Whoever stops reading while no call is in flight arms watch
	// (watching); when it fires and finds no reader and no call made
	// since it was armed (gen, counting the calls, still seen), readLoop
	// reads until a call's response came with no other call in flight.
	// While calls come back to back it fires once per watchTick and finds
	// a call reading or a new one made.
	watch    *time.Timer
	watching bool
	gen      uint64
	seen     uint64

	answers answerSlots // bound the answers to the server's requests
}

func newStreamClientTransport(r io.Reader, w io.Writer, closeFn func() error, opts *StreamClientOptions) *streamClientTransport {
	t := &streamClientTransport{r: r, w: w, closeFn: closeFn, max: defaultMaxMessageBytes, epoch: time.Now()}
	t.calls = newCallTable(&t.mu)
	if d, ok := r.(interface{ SetReadDeadline(time.Time) error }); ok && d.SetReadDeadline(time.Time{}) == nil {
		t.deadline = d.SetReadDeadline
	}
	t.ctx, t.cancel = context.WithCancel(context.Background())
	t.answers = newAnswerSlots(t.ctx.Done())
	if opts != nil {
		if opts.MaxMessageBytes > 0 {
			t.max = opts.MaxMessageBytes
		}
		t.log = opts.Logger
	}
	t.lines.Reset(r, t.max)
	if t.log == nil {
		t.log = slog.Default()
	}
	return t
}

func (t *streamClientTransport) mirrorsHeaders() bool { return false }
func (t *streamClientTransport) inMemory() bool       { return t.memory }
func (t *streamClientTransport) releasesBody() bool   { return true }
func (t *streamClientTransport) boundsRequests()      {}
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
	return t.write(ctx, 0, r.body, 0)
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
	t.calls.failLocked(t.err)
	t.mu.Unlock()
}

// newCall takes a call slot from t.slots, which recycles the slots of
// calls that got their reply (a slot whose call was abandoned may still
// receive one, so it is not reused). The pool is the transport's, not
// the process's: a transport used inside a testing/synctest bubble waits
// only on channels made in that bubble, so its fake clock can advance.
func (t *streamClientTransport) newCall() *waitingCall {
	if c, _ := t.slots.Get().(*waitingCall); c != nil {
		return c
	}
	return &waitingCall{ch: make(chan streamReply, 1)}
}

func (t *streamClientTransport) roundTrip(ctx context.Context, r *wireRequest) ([]byte, error) {
	var due time.Duration // the bound of a call whose context cannot end; 0 for none
	if r.timeout > 0 && ctx.Done() == nil {
		due = time.Since(t.epoch) + r.timeout
	}
	c := t.newCall()
	c.method, c.notify = r.method, r.notify
	t.mu.Lock()
	if t.err != nil {
		err := t.err
		t.mu.Unlock()
		return nil, err
	}
	t.calls.addLocked(r.id, c)
	t.gen++
	if r.method == methodInitialize {
		t.session = true
	}
	t.mu.Unlock()
	if err := t.write(ctx, r.id, r.body, due); err != nil {
		if t.forget(r.id) {
			c.notify = nil
			t.slots.Put(c)
		}
		return nil, err
	}
	if t.lead(ctx, r.id, due) {
		// This call read until its reply came, or its context ended, or
		// its bound.
		select {
		case rep := <-c.ch:
			c.notify = nil
			t.slots.Put(c)
			return rep.result, rep.err
		default:
		}
		if due > 0 {
			return t.expired(c, r.id)
		}
	}
	if due > 0 {
		tm := time.NewTimer(due - time.Since(t.epoch))
		select {
		case rep := <-c.ch:
			tm.Stop()
			c.notify = nil
			t.slots.Put(c)
			return rep.result, rep.err
		case <-tm.C:
			return t.expired(c, r.id)
		}
	}
	select {
	case rep := <-c.ch:
		c.notify = nil
		t.slots.Put(c)
		return rep.result, rep.err
	case <-ctx.Done():
		if t.forget(r.id) {
			t.sendCancelled(r.id, context.Cause(ctx))
		}
		return nil, ctx.Err()
	}
}

// expired ends the call id at its bound, as the end of a context's
// deadline would: notifications/cancelled, context.DeadlineExceeded.
// When the reply (or the transport's failure) was taken already, it is
// what the call returns.
func (t *streamClientTransport) expired(c *waitingCall, id int64) ([]byte, error) {
	if t.forget(id) {
		t.sendCancelled(id, context.DeadlineExceeded)
		return nil, context.DeadlineExceeded
	}
	rep := <-c.ch // whoever took the call sends at once
	c.notify = nil
	t.slots.Put(c)
	return rep.result, rep.err
}

// forget removes a pending call; it reports whether it was still there.
func (t *streamClientTransport) forget(id int64) bool {
	return t.calls.take(id) != nil
}

// write writes one line. A write still blocked when ctx ends, or at due
// (since epoch; 0 for none) when ctx cannot end (a server that stopped
// reading), closes the transport: half a line cannot be taken back.
func (t *streamClientTransport) write(ctx context.Context, id int64, body []byte, due time.Duration) error {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	var stop func() bool
	if ctx.Done() == nil && due > 0 {
		t.wdue.Store(int64(due))
		if t.wtimer == nil {
			t.wtimer = time.AfterFunc(due-time.Since(t.epoch), t.writeExpired)
		} else {
			t.wtimer.Reset(due - time.Since(t.epoch))
		}
		defer func() {
			t.wdue.Store(0)
			t.wtimer.Stop()
		}()
	}
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
		if due > 0 && time.Since(t.epoch) >= due {
			return context.DeadlineExceeded // writeExpired closed the transport
		}
		t.fail(fmt.Errorf("%w: %v", ErrTransportClosed, err))
		return fmt.Errorf("%w: %v", ErrTransportClosed, err)
	}
	return nil
}

// writeExpired closes the transport when the write in progress is still
// blocked at its due time.
func (t *streamClientTransport) writeExpired() {
	if due := time.Duration(t.wdue.Load()); due > 0 && time.Since(t.epoch) >= due {
		t.fail(fmt.Errorf("%w: a write was still blocked at its request's deadline", ErrTransportClosed))
		t.closeFn()
	}
}

func (t *streamClientTransport) sendCancelled(id int64, cause error) {
	b := appendCancelled(make([]byte, 0, 128), id, cause)
	// Best effort, and never blocking the caller whose context ended.
	go t.write(context.Background(), 0, b, 0)
}

// lead makes the call id the reader when nothing reads and it can stop
// reading when ctx ends or at due (since epoch; 0 for none), and then
// reads until its reply came, ctx ended or due passed. It reports
// whether it read. When the call cannot stop reading, readLoop reads for
// it.
func (t *streamClientTransport) lead(ctx context.Context, id int64, due time.Duration) bool {
	t.mu.Lock()
	if t.reading || t.err != nil {
		t.mu.Unlock()
		return false
	}
	if (ctx.Done() != nil || due > 0) && t.deadline == nil {
		t.reading = true
		go t.readLoop()
		t.mu.Unlock()
		return false
	}
	t.reading, t.leader = true, id
	if due > 0 {
		t.due = due
		if t.rtimer == nil {
			t.rtimer = time.AfterFunc(due-time.Since(t.epoch), t.expire)
		} else {
			t.rtimer.Reset(due - time.Since(t.epoch))
		}
	}
	t.mu.Unlock()
	var stop func() bool
	if ctx.Done() != nil {
		stop = context.AfterFunc(ctx, func() { t.interrupt(id) })
	}
	for t.waiting(id) && t.readOne() {
	}
	if stop != nil {
		stop()
	}
	t.mu.Lock()
	if due > 0 {
		t.rtimer.Stop()
		t.due = 0
	}
	t.leader = 0
	if t.interrupted {
		t.interrupted = false
		t.deadline(time.Time{})
	}
	t.handOver()
	t.mu.Unlock()
	return true
}

// waiting reports whether the call id still waits for its reply.
func (t *streamClientTransport) waiting(id int64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.calls.getLocked(id) != nil && !t.interrupted
}

// interrupt stops the read of the leader id, whose context ended.
func (t *streamClientTransport) interrupt(id int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.leader == id && !t.interrupted {
		t.interrupted = true
		t.deadline(time.Unix(1, 0))
	}
}

// expire stops the read of a bounded leader whose due time passed.
func (t *streamClientTransport) expire() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.leader != 0 && t.due > 0 && time.Since(t.epoch) >= t.due && !t.interrupted {
		t.interrupted = true
		t.deadline(time.Unix(1, 0))
	}
}

// handOver is called, under mu, by a reader about to stop: readLoop goes
// on reading while calls are in flight; on a legacy session with none,
// the idle watch is armed.
func (t *streamClientTransport) handOver() {
	if t.err == nil && t.calls.lenLocked() > 0 {
		go t.readLoop()
		return
	}
	t.stopReadingLocked()
}

// stopReadingLocked says, under mu, that nothing reads any more, and on
// a legacy session arms the idle watch.
func (t *streamClientTransport) stopReadingLocked() {
	t.reading = false
	if t.err != nil || !t.session || t.watching {
		return
	}
	t.watching, t.seen = true, t.gen
	if t.watch == nil {
		t.watch = time.AfterFunc(watchTick, t.watchIdle)
	} else {
		t.watch.Reset(watchTick)
	}
}

// watchTick is the period of a legacy session's idle watch: the longest
// the server's request or notification sent between calls waits, beyond
// a tick, before something reads it.
const watchTick = time.Millisecond

// watchIdle is the idle watch firing: when nothing reads and no call was
// made since the last tick, it reads (readLoop), whether or not a call is
// in flight; when a call reads, that call arms the watch again once it
// stopped.
func (t *streamClientTransport) watchIdle() {
	t.mu.Lock()
	if t.err != nil || t.reading || !t.watching {
		t.watching = false
		t.mu.Unlock()
		return
	}
	if t.gen != t.seen {
		// A call was made since the last tick: it reads for itself.
		t.seen = t.gen
		t.watch.Reset(watchTick)
		t.mu.Unlock()
		return
	}
	// Nothing read for a tick and no call made. A call made before the
	// last tick that does not read yet is still writing its request,
	// perhaps blocked because the server is itself blocked writing to
	// us: read, and that call gets its response from readLoop.
	t.watching = false
	t.reading, t.leader = true, 0
	t.mu.Unlock()
	t.readLoop()
}

// readLoop reads for every call in flight, until none is; on a legacy
// session it reads between calls as well, until a call made since it
// started (or in flight then) got its response and none is in flight.
// Where the stream has no read deadline, a call whose context can end
// cannot read for itself, so there readLoop goes on reading for the
// whole session, as it did before calls read their own responses.
func (t *streamClientTransport) readLoop() {
	t.mu.Lock()
	start, busy := t.gen, t.calls.lenLocked() > 0
	t.mu.Unlock()
	for t.readOne() {
		t.mu.Lock()
		if t.err == nil && t.calls.lenLocked() == 0 && (!t.session || t.deadline != nil && (busy || t.gen != start)) {
			t.stopReadingLocked()
			t.mu.Unlock()
			return
		}
		t.mu.Unlock()
	}
	t.mu.Lock()
	t.handOver()
	t.mu.Unlock()
}

// readOne reads and dispatches one line. It reports false when the
// transport failed or the read was interrupted (a leader's context
// ended; the line's first part is kept for the next reader).
func (t *streamClientTransport) readOne() bool {
	line, head, err := t.lines.Next()
	if errors.Is(err, linepipe.ErrLineTooLong) {
		t.dropLine(head, ErrMessageTooLarge)
		return true
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.mu.Lock()
		stopped := t.interrupted
		t.mu.Unlock()
		if stopped {
			return false
		}
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
		return false
	}
	return true
}

// dropLine fails the request a bad line was meant for, when its id can
// be read from the line's first bytes; otherwise it only logs.
func (t *streamClientTransport) dropLine(head []byte, reason error) {
	if id, ok := leadingID(head); ok {
		if c := t.calls.take(id); c != nil {
			c.ch <- streamReply{err: &InvalidResponseError{Method: c.method, Err: reason}}
			return
		}
	}
	t.log.Warn("mcp: client: dropped a line from the server", "err", reason)
}

func (t *streamClientTransport) dispatch(line []byte) {
	if e := t.calls.dispatch(line, false, t.route, t.serve); e != nil {
		t.dropLine(line[:min(len(line), 256)], errors.New(e.Message))
	}
}

// serve answers a request of the server (a legacy session's
// elicitation/create, sampling/createMessage, roots/list or ping) on a
// goroutine of its own, so that reading goes on while a handler runs;
// at most maxConcurrentAnswers at once (client_answers.go).
func (t *streamClientTransport) serve(msg jsonrpc.Message) {
	t.mu.Lock()
	h := t.hooks
	t.mu.Unlock()
	t.answers.answer(t.ctx, h, msg, func(resp []byte, _ time.Duration) {
		if err := t.write(t.ctx, 0, resp, 0); err != nil && t.ctx.Err() == nil {
			t.log.Warn("mcp: client: could not answer the server's request", "method", msg.Method, "err", err)
		}
	}, t.log.Warn)
}

func (t *streamClientTransport) route(method string, params []byte) {
	id, ok := notificationRoute(method, params)
	t.mu.Lock()
	h := t.hooks
	if ok && method == notificationCancelled && h != nil && h.legacy != nil && h.legacy() {
		// On a legacy session the server cancels its own requests.
		ok = false
	}
	var c *waitingCall
	if ok {
		c = t.calls.getLocked(id)
		if c != nil && method == notificationCancelled {
			t.calls.takeLocked(id)
		}
	}
	t.mu.Unlock()
	var unrouted func(string, []byte)
	if h != nil {
		unrouted = h.unrouted
	}
	switch {
	case c != nil && method == notificationCancelled:
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
