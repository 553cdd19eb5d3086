// Package httpstream is the HTTP machinery of package mcp's long-lived
// exchanges that knows nothing of MCP: the HTTP/1.1 chunked framing of
// a stream taken over from net/http (Hijack), and the read and write
// deadlines that let a server's Close cut short the bodies being read
// and the SSE streams being written (Exchanges).
package httpstream

import (
	"net"
	"net/http"
	"strconv"
	"time"
)

// An mcp session's GET stream, and a subscriptions/listen stream, over
// HTTP/1.1 are taken over from net/http (Hijack) once they are known to
// be long-lived: the stream is then a connection, the chunks the stream writes, one small goroutine that
// notices the client leaving, and the goroutine of the stream's hold
// loop. net/http's connection goroutine (whose stack grew serving the
// request), its background reader and its 8 KiB of buffers are let go:
// they were most of what an open stream cost (docs/performance.md, Cost
// at scale). HTTP/2, and a ResponseWriter that cannot be hijacked (a
// middleware's without Unwrap), keep the stream in net/http.
//
// net/http's Server.Shutdown does not wait for a hijacked connection;
// mcp's Server.Drain and Server.Close end these streams as they end the
// others.

// Response is the http.ResponseWriter of a hijacked exchange: the
// head as net/http would write it (with Connection: close: the
// connection ends with the stream), the body in chunks, a flush that
// writes them, and the connection's write deadline.
type Response struct {
	conn        net.Conn
	header      http.Header
	buf         []byte // chunk-framed, not yet written
	wroteHeader bool
	err         error
	gone        chan struct{} // closed when the client's side of the connection ends
}

// Gone is closed when the client's side of the connection ends (or it
// sent bytes after the request, which a client of a held stream never
// does).
func (h *Response) Gone() <-chan struct{} { return h.gone }

// Hijack takes the exchange over from net/http, when it is an HTTP/1.1
// one that can be, and returns nil otherwise (w is then untouched).
// Nothing must have been written to w. onGone, if not nil, is called
// once the client's side of the connection ends. The Response is used
// by one goroutine at a time, which calls End when the stream is over.
func Hijack(w http.ResponseWriter, r *http.Request, onGone func()) *Response {
	if r.ProtoMajor != 1 || r.ProtoMinor != 1 {
		return nil
	}
	header := w.Header().Clone()
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return nil
	}
	// The deadlines net/http's own timeouts left on the connection are
	// not the stream's: its writes arm their own (StreamWriteTimeout),
	// and its read only waits for the client to leave.
	conn.SetReadDeadline(time.Time{})
	conn.SetWriteDeadline(time.Time{})
	h := &Response{conn: conn, header: header, gone: make(chan struct{})}
	pipelined := brw.Reader.Buffered() > 0
	go h.watch(pipelined, onGone)
	return h
}

// watch closes gone, and calls onGone if not nil, when the client's side
// ends. A client sends nothing more on a held stream: bytes after the
// request (a pipelined one) end it too.
func (h *Response) watch(pipelined bool, onGone func()) {
	if !pipelined {
		var b [1]byte
		h.conn.Read(b[:])
	}
	close(h.gone)
	if onGone != nil {
		onGone()
	}
}

// Header is the head to write; once it is written, a fresh map that
// changes nothing (the head is not kept while the stream lasts).
func (h *Response) Header() http.Header {
	if h.header == nil {
		h.header = http.Header{}
	}
	return h.header
}

// WriteHeader buffers the head: the status line and the header, with
// Transfer-Encoding: chunked and Connection: close. Only the first call
// counts.
func (h *Response) WriteHeader(code int) {
	if h.wroteHeader {
		return
	}
	h.wroteHeader = true
	h.buf = append(h.buf, "HTTP/1.1 "...)
	h.buf = strconv.AppendInt(h.buf, int64(code), 10)
	h.buf = append(h.buf, ' ')
	h.buf = append(h.buf, http.StatusText(code)...)
	h.buf = append(h.buf, "\r\n"...)
	h.header.Del("Content-Length")
	h.header["Transfer-Encoding"] = []string{"chunked"}
	h.header["Connection"] = []string{"close"}
	if _, ok := h.header["Date"]; !ok {
		h.header["Date"] = []string{time.Now().UTC().Format(http.TimeFormat)}
	}
	w := bufferWriter{&h.buf}
	h.header.Write(w)
	h.buf = append(h.buf, "\r\n"...)
	h.header = nil
}

// Write buffers p as one chunk (the head first, if not yet written);
// FlushError writes it. It fails once a flush has failed.
func (h *Response) Write(p []byte) (int, error) {
	if !h.wroteHeader {
		h.WriteHeader(http.StatusOK)
	}
	if h.err != nil {
		return 0, h.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	h.buf = strconv.AppendInt(h.buf, int64(len(p)), 16)
	h.buf = append(h.buf, "\r\n"...)
	h.buf = append(h.buf, p...)
	h.buf = append(h.buf, "\r\n"...)
	return len(p), nil
}

// FlushError writes what is buffered to the connection.
func (h *Response) FlushError() error {
	if h.err != nil {
		return h.err
	}
	if len(h.buf) == 0 {
		return nil
	}
	_, h.err = h.conn.Write(h.buf)
	if cap(h.buf) > 512 {
		h.buf = nil // a held stream is mostly idle: it keeps no buffer
	} else {
		h.buf = h.buf[:0]
	}
	return h.err
}

// SetWriteDeadline sets the connection's write deadline (what
// http.ResponseController.SetWriteDeadline finds).
func (h *Response) SetWriteDeadline(t time.Time) error { return h.conn.SetWriteDeadline(t) }

// End writes the end of the body (within a second: it is five bytes) and
// closes the connection.
func (h *Response) End() {
	if h.err == nil && h.wroteHeader {
		h.buf = append(h.buf, "0\r\n\r\n"...)
		h.conn.SetWriteDeadline(time.Now().Add(time.Second))
		h.FlushError()
	}
	h.conn.Close()
}

// bufferWriter appends to a byte slice (http.Header.Write's io.Writer).
type bufferWriter struct{ b *[]byte }

func (w bufferWriter) Write(p []byte) (int, error) { *w.b = append(*w.b, p...); return len(p), nil }

var _ http.ResponseWriter = (*Response)(nil)
var _ interface{ FlushError() error } = (*Response)(nil)
