package linepipe

import (
	"io"
	"os"
	"sync"
	"time"
)

// New returns the two ends of an in-memory connection: what is written
// to one is read from the other.
func New() (a, b *End) {
	up, down := newPipe(), newPipe()
	return &End{r: down, w: up}, &End{r: up, w: down}
}

// End is one end of a connection made by New: it reads one one-way pipe
// and writes the other. Its methods are safe to call concurrently.
type End struct {
	r, w *pipe
}

// Read reads what the other end wrote; it blocks until there is some,
// the read deadline passes, or either end is closed.
func (p *End) Read(b []byte) (int, error) { return p.r.read(b) }

// Write buffers b for the other end and returns once it is buffered
// (not once it is read); it waits while the other end is more than
// 1 MiB behind.
func (p *End) Write(b []byte) (int, error) { return p.w.write(b) }

// SetReadDeadline makes a Read blocked at or after d fail with
// os.ErrDeadlineExceeded; the zero time clears it.
func (p *End) SetReadDeadline(d time.Time) error { p.r.setDeadline(d); return nil }

// Close ends both directions: the other end reads what was written
// before it, then io.EOF; a write on either side fails with
// io.ErrClosedPipe.
func (p *End) Close() error {
	p.w.closeWrite()
	p.r.closeRead()
	return nil
}

// pipeLimit bounds the bytes a pipe holds: a writer waits while the
// reader is that far behind (one write larger than that goes through
// alone).
const pipeLimit = 1 << 20

// pipe is a one-way in-memory pipe whose writes return once the bytes
// are buffered, not once they are read: a message crosses it with one
// wake-up (of the reader), where io.Pipe needs two (the reader's and the
// writer's).
type pipe struct {
	mu               sync.Mutex
	cond             sync.Cond // data, space, a close or the deadline
	buf              []byte    // unread bytes are buf[off:]
	off              int
	rclosed, wclosed bool
	expired          bool        // the read deadline passed
	timer            *time.Timer // the read deadline, when in the future
}

func newPipe() *pipe {
	p := &pipe{}
	p.cond.L = &p.mu
	return p
}
func (p *pipe) read(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.off == len(p.buf) {
		if p.rclosed {
			return 0, io.ErrClosedPipe
		}
		if p.wclosed {
			return 0, io.EOF
		}
		if p.expired {
			return 0, os.ErrDeadlineExceeded
		}
		p.cond.Wait()
	}
	n := copy(b, p.buf[p.off:])
	p.off += n
	if p.off == len(p.buf) {
		p.buf, p.off = p.buf[:0], 0
		if cap(p.buf) > pipeLimit {
			p.buf = nil // do not keep what one large message grew
		}
	}
	p.cond.Broadcast()
	return n, nil
}

func (p *pipe) write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		if p.rclosed || p.wclosed {
			return 0, io.ErrClosedPipe
		}
		if pending := len(p.buf) - p.off; pending == 0 || pending+len(b) <= pipeLimit {
			break
		}
		p.cond.Wait()
	}
	p.buf = append(p.buf, b...)
	p.cond.Broadcast()
	return len(b), nil
}

func (p *pipe) setDeadline(d time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
	p.expired = false
	switch wait := time.Until(d); {
	case d.IsZero():
	case wait <= 0:
		p.expired = true
		p.cond.Broadcast()
	default:
		var t *time.Timer
		t = time.AfterFunc(wait, func() {
			p.mu.Lock()
			if p.timer == t {
				p.expired = true
				p.cond.Broadcast()
			}
			p.mu.Unlock()
		})
		p.timer = t
	}
}

func (p *pipe) closeWrite() {
	p.mu.Lock()
	p.wclosed = true
	p.cond.Broadcast()
	p.mu.Unlock()
}

func (p *pipe) closeRead() {
	p.mu.Lock()
	p.rclosed = true
	p.buf, p.off = nil, 0
	p.cond.Broadcast()
	p.mu.Unlock()
}
