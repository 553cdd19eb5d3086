package mcp

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
)

// DefaultMaxMessageBytes bounds one incoming message on every transport.
const DefaultMaxMessageBytes = 4 << 20

// StreamOptions configure ServeStream. The zero value is valid.
type StreamOptions struct {
	// MaxMessageBytes bounds one line. Zero means DefaultMaxMessageBytes.
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
	max, grace := DefaultMaxMessageBytes, 10*time.Second
	if opts != nil && opts.MaxMessageBytes > 0 {
		max = opts.MaxMessageBytes
	}
	if opts != nil && opts.ShutdownGrace > 0 {
		grace = opts.ShutdownGrace
	}
	ctx, cancelAll := context.WithCancel(ctx)
	defer cancelAll()
	c := &streamConn{s: s, w: w, inflight: make(map[string]*inflight), work: make(chan func()), done: make(chan struct{})}
	defer close(c.done)
	br := bufio.NewReaderSize(r, 64<<10)
	var readErr error
	for {
		line, err := readLine(br, max)
		if errors.Is(err, errLineTooLong) {
			c.writeMsg(jsonrpc.AppendError(nil, jsonrpc.ID{}, jsonrpc.NewError(CodeInvalidRequest, "Invalid request: message exceeds the size limit")))
			continue
		}
		if len(jsonrpc.TrimSpace(line)) > 0 {
			c.handle(ctx, line)
		}
		if err != nil {
			if err != io.EOF {
				readErr = err
			}
			break
		}
		if ctx.Err() != nil {
			break
		}
	}
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

var errLineTooLong = errors.New("line too long")

// readLine reads one line (without the newline) of at most max bytes.
// The returned slice is owned by the caller.
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	var buf []byte
	for {
		frag, err := br.ReadSlice('\n')
		if len(buf)+len(frag) > max+1 {
			// Skip the rest of the oversized line.
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			if err != nil && err != io.EOF {
				return nil, err
			}
			return nil, errLineTooLong
		}
		buf = append(buf, frag...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if n := len(buf); n > 0 && buf[n-1] == '\n' {
			buf = buf[:n-1]
		}
		return buf, err
	}
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

func (c *streamConn) handle(ctx context.Context, line []byte) {
	msg, e := jsonrpc.Decode(line)
	if e != nil {
		if jsonrpc.IsBatch(line) {
			c.batch(ctx, line) // legacy_batch.go
			return
		}
		c.writeMsg(jsonrpc.AppendError(nil, msg.ID, e))
		return
	}
	switch {
	case msg.IsResponse():
		if ls := c.legacy.Load(); ls != nil {
			ls.deliver(msg) // an answer to the session's live request
			return
		}
		c.writeMsg(jsonrpc.AppendError(nil, msg.ID, jsonrpc.NewError(CodeInvalidRequest, "Invalid request: clients send no responses in protocol revision "+LatestProtocolVersion)))
		return
	case msg.IsNotification():
		if msg.Method == NotificationCancelled {
			c.cancelled(msg.Params)
		} else {
			c.legacyNotification(msg)
		}
		return
	}
	call := &call{msg: msg, era: c.classify(&msg)}
	if call.era == nil {
		c.initialize(msg) // opens the connection's 2025-11-25 session
		return
	}
	if f := call.era.decode(c.s, call); f != nil {
		c.writeMsg(appendFailure(nil, msg.ID, f))
		return
	}
	if f := call.era.checkVersion(c.s, call); f != nil {
		c.writeMsg(appendFailure(nil, msg.ID, f))
		return
	}
	c.run(ctx, call)
}

// classify is the era decision for a request on the connection (the one
// place that asks): a request carrying the 2026-07-28 _meta envelope is
// modern, always; otherwise initialize opens the legacy session (nil is
// returned for it) and the requests after it are the session's. Without
// a session nothing needs a look at the params.
func (c *streamConn) classify(msg *jsonrpc.Message) serverEra {
	ls := c.legacy.Load()
	legacy := c.s.legacyEnabled()
	if !legacy || ls == nil && msg.Method != MethodInitialize || hasModernMeta(msg.Params) {
		return modern
	}
	if msg.Method == MethodInitialize {
		return nil
	}
	return ls.scope()
}

// run serves one request on a worker goroutine of its own.
func (c *streamConn) run(ctx context.Context, call *call) {
	rctx, cancel := context.WithCancel(ctx)
	key := call.msg.ID.Raw()
	c.mu.Lock()
	if _, dup := c.inflight[key]; dup {
		c.mu.Unlock()
		cancel()
		c.writeMsg(jsonrpc.AppendError(nil, call.msg.ID, jsonrpc.NewError(CodeInvalidRequest, "Invalid request: id is already in use by a request in flight")))
		return
	}
	c.inflight[key] = &inflight{cancel: cancel, listen: call.msg.Method == MethodSubscriptionsListen}
	c.wg.Add(1)
	c.mu.Unlock()
	c.spawn(func() {
		defer c.wg.Done()
		defer cancel()
		out := &streamOut{c: c, ctx: rctx, rev: revisionOf(call.era)}
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
	})
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
	c   *streamConn
	ctx context.Context
	rev *revision // a legacy session's revision (legacy_revisions.go); nil for 2026-07-28
}

func (o *streamOut) exchange() (string, *http.Request) { return TransportStream, nil }

func (o *streamOut) notify(method string, params any) error {
	if err := o.ctx.Err(); err != nil {
		return err
	}
	b, err := encodeNotification(nil, method, o.rev.notification(method, params))
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
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	return &pipeEnd{r: cr, w: cw}, &pipeEnd{r: sr, w: sw}
}

type pipeEnd struct {
	r *io.PipeReader
	w *io.PipeWriter
}

func (p *pipeEnd) Read(b []byte) (int, error)  { return p.r.Read(b) }
func (p *pipeEnd) Write(b []byte) (int, error) { return p.w.Write(b) }
func (p *pipeEnd) Close() error {
	p.w.Close()
	return p.r.Close()
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
