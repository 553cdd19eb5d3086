package mcp

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
	"github.com/roundtrip-mcp/roundtrip/mcp/internal/linepipe"
)

// StreamOptions configure ServeStream. The zero value is valid.
type StreamOptions struct {
	// MaxMessageBytes bounds one line. Zero means 4 MiB.
	MaxMessageBytes int
	// ShutdownGrace is how long requests in flight may still run after
	// the input ends before they are cancelled. Zero means 10 s.
	ShutdownGrace time.Duration
}

// ServeStdio serves the stdio transport on os.Stdin and os.Stdout until
// stdin reaches EOF or ctx ends.
func (s *Server) ServeStdio(ctx context.Context) error {
	return s.ServeStream(ctx, os.Stdin, os.Stdout, nil)
}

// ServeStream serves newline-delimited JSON-RPC (the stdio framing) on r
// and w. Requests run concurrently; a notifications/cancelled from the
// client cancels the named request. It returns when r reaches EOF, after
// the requests in flight have answered (listen streams are ended), or
// when ctx ends.
func (s *Server) ServeStream(ctx context.Context, r io.Reader, w io.Writer, opts *StreamOptions) error {
	max, grace := defaultMaxMessageBytes, 10*time.Second
	if opts != nil && opts.MaxMessageBytes > 0 {
		max = opts.MaxMessageBytes
	}
	if opts != nil && opts.ShutdownGrace > 0 {
		grace = opts.ShutdownGrace
	}
	ctx, cancelAll := context.WithCancel(ctx)
	defer cancelAll()
	c := &streamConn{s: s, w: w, inflight: make(map[string]*inflight), work: make(chan func()), done: make(chan struct{}),
		readDone: make(chan struct{})}
	c.lines.Reset(r, max)
	defer close(c.done)
	c.reader = func() { c.read(ctx) } // made once: handing reading over costs no allocation
	c.watchTimer = time.AfterFunc(time.Hour, c.watch)
	c.watchTimer.Stop()
	defer c.watchTimer.Stop()
	c.spawn(c.reader)
	<-c.readDone
	readErr := c.readErr
	// No more requests can come: end listen streams, let the rest finish.
	c.endLegacy()
	c.mu.Lock()
	for _, f := range c.inflight {
		if f.listen {
			f.cancel()
		}
	}
	c.mu.Unlock()
	finished := make(chan struct{})
	go func() { c.wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(grace):
		cancelAll()
		<-finished
	}
	if readErr != nil {
		return readErr
	}
	return ctx.Err()
}

// read reads and handles lines until the input ends or ctx does. A
// request is served on the goroutine that read it, which goes on reading
// once the request is answered: a quick request's way from the pipe to
// its handler and back crosses no goroutine and wakes none (a wake-up on
// each side was what made a pipe call cost twice a bare line loop). A
// request still running after handOffAfter hands reading to another
// worker (handOff), so that what arrives meanwhile (its cancellation, the
// next request, the answer to a live request it sent) is read at once.
func (c *streamConn) read(ctx context.Context) {
	for {
		line, _, err := c.lines.Next()
		if errors.Is(err, linepipe.ErrLineTooLong) {
			c.writeMsg(jsonrpc.AppendError(nil, jsonrpc.ID{}, jsonrpc.NewError(CodeInvalidRequest, "Invalid request: message exceeds the size limit")))
			continue
		}
		var work func()
		if len(jsonrpc.TrimSpace(line)) > 0 {
			work = c.handle(ctx, line)
		}
		if err != nil || ctx.Err() != nil {
			if err != nil && err != io.EOF {
				c.readErr = err
			}
			close(c.readDone)
			if work != nil {
				work()
			}
			return
		}
		if work != nil && !c.serveInline(work) {
			return // another worker reads now
		}
	}
}

// handOffAfter is the period of the hand-off watch: a request served
// inline and still running at two ticks in a row (between one and two
// periods) hands reading to another worker. A watch rather than a timer
// per request: arming a timer wakes the sleeping network poller, which
// cost more than the wake-up that serving inline saves.
const handOffAfter = time.Millisecond

// serveInline runs work on the reading goroutine. It reports whether this
// goroutine is still the reader afterwards (the watch did not hand
// reading over meanwhile).
func (c *streamConn) serveInline(work func()) bool {
	g := c.inlineGen.Add(1)
	c.inline.Store(g)
	if c.watching.CompareAndSwap(false, true) {
		c.watchTimer.Reset(handOffAfter)
	}
	work()
	return c.inline.CompareAndSwap(g, 0)
}

// handOff hands reading to another worker when the request being served
// inline is the generation g (any, when g is 0). Besides the watch,
// whatever is about to wait for the client (a live request of a 2025-11-25
// session) calls it, so that the answer is read at once.
func (c *streamConn) handOff(g uint64) {
	cur := c.inline.Load()
	if cur != 0 && (g == 0 || g == cur) && c.inline.CompareAndSwap(cur, 0) {
		c.spawn(c.reader)
	}
}

// watch is the hand-off watch's tick. It stops after a tick that saw no
// request served since the previous one; serveInline starts it again.
func (c *streamConn) watch() {
	select {
	case <-c.done:
		return
	default:
	}
	c.watchMu.Lock()
	defer c.watchMu.Unlock()
	g, gen := c.inline.Load(), c.inlineGen.Load()
	if g != 0 && g == c.watched {
		c.handOff(g) // the same request ran through a whole period
		g = 0
	}
	if g == 0 && gen == c.watchedGen {
		c.watching.Store(false)
		// A request that began before the store saw watching set.
		if c.inline.Load() == 0 || !c.watching.CompareAndSwap(false, true) {
			return
		}
	}
	c.watched, c.watchedGen = g, gen
	c.watchTimer.Reset(handOffAfter)
}

type inflight struct {
	cancel context.CancelFunc
	listen bool
}

// streamConn is one stdio-framed connection.
type streamConn struct {
	s   *Server
	wmu sync.Mutex
	w   io.Writer

	mu       sync.Mutex
	inflight map[string]*inflight
	wg       sync.WaitGroup

	// The input: read by one goroutine at a time (read), readErr set
	// before readDone is closed.
	lines    linepipe.Reader
	readErr  error
	readDone chan struct{}
	reader   func() // read, on the connection's context

	// The request the reader serves inline (serveInline): inline is its
	// generation while it runs, 0 once it ended or reading was handed
	// over. The watch (watch, on watchTimer, while watching) hands
	// reading over when one runs long; watched and watchedGen, under
	// watchMu, are what its previous tick saw.
	inline, inlineGen   atomic.Uint64
	watching            atomic.Bool
	watchTimer          *time.Timer
	watchMu             sync.Mutex
	watched, watchedGen uint64

	// legacy is the 2025-11-25 session the connection opened with
	// initialize, if any (legacy_stream.go).
	legacy atomic.Pointer[legacySession]

	// work hands a request to an idle worker goroutine. Workers outlive
	// their request for a while, so a busy connection reuses goroutines
	// whose stacks have already grown to what a request needs (growing a
	// fresh stack was a fifth of a pipe call's CPU).
	work chan func()
	done chan struct{}
}

// workerIdle is how long an idle worker waits for the next request.
const workerIdle = 2 * time.Second

// spawn executes f on an idle worker, or on a new one. Requests never wait
// for each other: with no idle worker a new goroutine starts.
func (c *streamConn) spawn(f func()) {
	select {
	case c.work <- f:
	default:
		go c.worker(f)
	}
}

func (c *streamConn) worker(f func()) {
	t := time.NewTimer(workerIdle)
	defer t.Stop()
	for {
		f()
		t.Reset(workerIdle)
		select {
		case f = <-c.work:
		case <-t.C:
			return
		case <-c.done:
			return
		}
	}
}

func (c *streamConn) writeMsg(b []byte) error {
	b = append(b, '\n')
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.w.Write(b)
	return err
}

// handle handles one line: what can be answered at once is, and a
// request to serve is returned as the work that serves it (its id is
// already in flight, so a cancellation read next finds it).
func (c *streamConn) handle(ctx context.Context, line []byte) (work func()) {
	c.s.countDecode(false)
	msg, e := jsonrpc.Decode(line)
	if e != nil {
		if jsonrpc.IsBatch(line) {
			c.batch(ctx, line) // legacy_batch.go
			return nil
		}
		c.writeMsg(jsonrpc.AppendError(nil, msg.ID, e))
		return nil
	}
	switch {
	case msg.IsResponse():
		if ls := c.legacy.Load(); ls != nil {
			ls.deliver(msg) // an answer to the session's live request
			return nil
		}
		c.writeMsg(jsonrpc.AppendError(nil, msg.ID, jsonrpc.NewError(CodeInvalidRequest, "Invalid request: clients send no responses in protocol revision "+LatestProtocolVersion)))
		return nil
	case msg.IsNotification():
		if msg.Method == notificationCancelled {
			c.cancelled(msg.Params)
		} else {
			c.legacyNotification(msg)
		}
		return nil
	}
	return c.classify(&msg).serveStream(ctx, c, msg)
}

// A streamBinding serves a request on a stream connection: classify
// chooses it, once per request, from what the request carries.
type streamBinding interface {
	// serveStream answers what can be answered at once and returns the
	// work that serves the rest (nil: nothing is left), as handle does.
	serveStream(ctx context.Context, c *streamConn, msg jsonrpc.Message) (work func())
}

// classify is the era decision for a request on the connection (the one
// place that asks): a request carrying the 2026-07-28 _meta envelope is
// modern, always; otherwise initialize opens the legacy session
// (streamInitialize, legacy_stream.go) and the requests after it are the
// session's (streamSession). Without a session nothing needs a look at
// the params.
func (c *streamConn) classify(msg *jsonrpc.Message) streamBinding {
	ls := c.legacy.Load()
	legacy := c.s.legacyEnabled()
	if !legacy || ls == nil && msg.Method != methodInitialize || hasModernMeta(msg.Params) {
		return streamModern{}
	}
	if msg.Method == methodInitialize {
		return streamInitialize{}
	}
	return streamSession{ls}
}

// streamModern serves a request in the 2026-07-28 era.
type streamModern struct{}

func (streamModern) serveStream(ctx context.Context, c *streamConn, msg jsonrpc.Message) func() {
	return c.request(ctx, &call{msg: msg, era: modern})
}

// request prepares a call in its era and puts it in flight (run); a call
// that cannot run is answered here.
func (c *streamConn) request(ctx context.Context, call *call) func() {
	if f := c.s.prepare(call, nil); f != nil {
		c.writeMsg(appendFailure(nil, call.msg.ID, f))
		return nil
	}
	return c.run(ctx, call)
}

// run puts a request in flight and returns the work that serves it.
func (c *streamConn) run(ctx context.Context, call *call) func() {
	rctx, cancel := context.WithCancel(ctx)
	key := call.msg.ID.Raw()
	c.mu.Lock()
	if _, dup := c.inflight[key]; dup {
		c.mu.Unlock()
		cancel()
		c.writeMsg(jsonrpc.AppendError(nil, call.msg.ID, jsonrpc.NewError(CodeInvalidRequest, "Invalid request: id is already in use by a request in flight")))
		return nil
	}
	c.inflight[key] = &inflight{cancel: cancel, listen: call.msg.Method == methodSubscriptionsListen}
	c.wg.Add(1)
	c.mu.Unlock()
	return func() {
		defer c.wg.Done()
		defer cancel()
		out := &streamOut{c: c, ctx: rctx, call: call}
		res, f := c.s.execute(rctx, call, out)
		// The id is free again before the response leaves: a client may
		// reuse it as soon as it has the answer.
		c.mu.Lock()
		delete(c.inflight, key)
		c.mu.Unlock()
		if rctx.Err() != nil {
			// Cancelled: the client expects nothing more for this id.
			return
		}
		b, _ := c.s.encodeResult(nil, call, res, f)
		c.writeMsg(b)
	}
}

func (c *streamConn) cancelled(params []byte) {
	if params == nil {
		return
	}
	key := cancelledRequestKey(params)
	c.mu.Lock()
	f := c.inflight[key]
	c.mu.Unlock()
	if f != nil {
		f.cancel()
	}
}

// streamOut writes a request's notifications as lines.
type streamOut struct {
	c    *streamConn
	ctx  context.Context
	call *call // the request: its era encodes the notifications
}

func (o *streamOut) exchange() (TransportKind, *http.Request) { return TransportStream, nil }

func (o *streamOut) notify(method string, params any) error {
	if err := o.ctx.Err(); err != nil {
		return err
	}
	b, err := o.call.era.appendNotification(nil, method, params)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	// Checked again under the write lock: nothing more goes out for a
	// request once its cancellation has been handled.
	o.c.wmu.Lock()
	defer o.c.wmu.Unlock()
	if err := o.ctx.Err(); err != nil {
		return err
	}
	_, err = o.c.w.Write(b)
	return err
}

// NewInMemoryTransports returns the two ends of an in-memory connection
// using the stdio framing: serve one end with ServeStream and give the
// other to a client.
func NewInMemoryTransports() (clientEnd, serverEnd io.ReadWriteCloser) {
	return linepipe.New()
}

// cancelledRequestKey returns the id (as JSON text) that the params of a
// notifications/cancelled name, or "".
func cancelledRequestKey(params []byte) string {
	var key string
	_ = jsonrpc.Fields(params, func(k, v []byte) error {
		if string(k) == "requestId" {
			if id, e := jsonrpc.ParseID(v); e == nil {
				key = id.Raw()
			}
		}
		return nil
	})
	return key
}
