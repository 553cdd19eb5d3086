package linepipe

import (
	"bufio"
	"errors"
	"io"
	"os"
)

// ErrLineTooLong is returned by Reader.Next for a line longer than the
// reader's bound; the rest of that line has been skipped.
var ErrLineTooLong = errors.New("line too long")

// Reader reads the lines of the stdio framing, each of at most max
// bytes. A read stopped mid-line by a deadline keeps what it read: the
// next read goes on with the same line. The zero Reader is not usable:
// call Reset first. A Reader is used by one goroutine at a time.
type Reader struct {
	br       *bufio.Reader
	max      int
	buf      []byte // the line so far; its first bytes when skipping
	skipping bool   // the line is too long: the rest of it is skipped
}

// Reset makes r read rd (through a 64 KiB buffer), lines of at most max
// bytes.
func (r *Reader) Reset(rd io.Reader, max int) {
	r.br = bufio.NewReaderSize(rd, 64<<10)
	r.max = max
	r.buf, r.skipping = nil, false
}

// Next returns the next line, without its newline; the line is the
// caller's. For a line longer than max it skips the rest and returns
// ErrLineTooLong with the line's first bytes (at most 256) in head. A
// read that fails with os.ErrDeadlineExceeded returns that error and no
// line: the line goes on at the next call. The last line of the input
// may come with io.EOF.
func (r *Reader) Next() (line, head []byte, err error) {
	for {
		frag, err := r.br.ReadSlice('\n')
		switch {
		case r.skipping:
		case len(r.buf)+len(frag) > r.max+1:
			n := min(len(r.buf), 256)
			r.buf = append(r.buf[:n:n], frag[:min(len(frag), 256-n)]...)
			r.skipping = true
		default:
			r.buf = append(r.buf, frag...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, nil, err // the line goes on at the next read
		}
		line, r.buf = r.buf, nil
		if r.skipping {
			r.skipping = false
			if err != nil && err != io.EOF {
				return nil, line, err
			}
			return nil, line, ErrLineTooLong
		}
		if n := len(line); n > 0 && line[n-1] == '\n' {
			line = line[:n-1]
		}
		return line, nil, err
	}
}
