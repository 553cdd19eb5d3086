package sse

import (
	"bytes"
	"errors"
	"io"
	"math"
	"time"
)

// Errors of a Reader.
var (
	// ErrLineTooLong: a line of the stream is longer than the Reader's
	// line bound.
	ErrLineTooLong = errors.New("sse: line longer than the reader's bound")
	// ErrEventTooLarge: the data of an event is larger than the Reader's
	// data bound.
	ErrEventTooLarge = errors.New("sse: event data larger than the reader's bound")
	// errBadRead: the source returned an impossible count.
	errBadRead = errors.New("sse: source returned an invalid count from Read")
)

// DefaultMaxData is the data bound of a Reader made with maxData zero.
const DefaultMaxData = 4 << 20

const (
	// readBufSize is small because a client makes a Reader per SSE
	// response: most events are a few hundred bytes, a longer line is
	// read in pieces into the event's data, and the source is an HTTP
	// body already buffered by net/http (a 4 KiB buffer here was most of
	// the bytes a live-eliciting 2025 call allocated beyond raw's).
	readBufSize = 512
	// minReadBuf keeps the start of any line that matters (a known field
	// name, its colon and the space after it) in the first piece of a line
	// longer than the buffer.
	minReadBuf = 16
	maxRetryMs = math.MaxInt64 / int64(time.Millisecond)
)

var (
	bom     = []byte("\xEF\xBB\xBF")
	newline = []byte{'\n'}
)

// Reader parses an event stream (text/event-stream) into events, by the
// WHATWG rules: lines end in LF, CRLF or CR; a line starting with a colon
// is a comment; a line without a colon is a field with an empty value; a
// single space after the colon is not part of the value; the fields are
// data, event, id (ignored when it holds NUL) and retry (ignored unless
// ASCII digits), others are ignored; an event is dispatched at a blank
// line when it has data, and one the stream ends in the middle of is
// dropped; one byte order mark at the very start is skipped. Bytes are
// taken as they are: invalid UTF-8 is passed on, not replaced.
//
// However long the input, it holds at most its 512-byte read buffer, one
// event's data (maxData) and a few field values of maxLine each (the
// event name, the last event ID, the line being read): a line or an
// event past its bound is reported (ErrLineTooLong, ErrEventTooLarge) as
// soon as its bytes show it, without reading the rest. The bounds count the bytes read so far, so a stream that ends in
// the middle of a line past a bound reports it too.
//
// A Reader is not safe for concurrent use.
type Reader struct {
	src     io.Reader
	buf     []byte
	r, w    int   // buf[r:w] is read and not yet parsed
	srcErr  error // the error src returned, acted on once buf is parsed
	err     error // what every later Next returns
	maxData int
	maxLine int
	begun   bool // the byte order mark was looked for
	skipLF  bool // the last line ended in CR: an LF right after belongs to it

	// A line longer than buf, read in pieces.
	long    bool
	lineLen int
	lfield  field

	// The event being read, and what persists between events.
	data     []byte
	hasData  bool
	name     []byte // the event type buffer
	nameStr  string // the last name returned, reused while it does not change
	idBuf    []byte // the last event ID buffer
	id       string // the last event ID, as of the last blank line
	val      []byte // the value of a long id, event or retry line
	retry    time.Duration
	hasRetry bool
}

type field uint8

const (
	fieldIgnored field = iota // comments and unknown fields
	fieldData
	fieldEvent
	fieldID
	fieldRetry
)

// NewReader returns a Reader of src. maxData bounds the data of one
// event (the data lines' values and the newlines joining them); zero or
// negative means DefaultMaxData. maxLine bounds every line, without its
// line ending; zero or negative means maxData plus the length of
// "data: ", so that an event of one data line of maxData bytes passes.
func NewReader(src io.Reader, maxData, maxLine int) *Reader {
	return newReaderSize(src, maxData, maxLine, readBufSize)
}

func newReaderSize(src io.Reader, maxData, maxLine, size int) *Reader {
	if maxData <= 0 {
		maxData = DefaultMaxData
	}
	if maxLine <= 0 {
		maxLine = maxData + len("data: ")
	}
	return &Reader{src: src, buf: make([]byte, max(size, minReadBuf)), maxData: maxData, maxLine: maxLine}
}

// Next returns the next event of the stream. It returns io.EOF when the
// stream ends (an event it ended in the middle of is dropped), the
// source's error when reading fails, ErrLineTooLong or ErrEventTooLarge
// when a bound is passed; once it has returned an error it returns that
// error again. The event's Data is valid until the next call to Next.
func (r *Reader) Next() (Event, error) {
	if r.err != nil {
		return Event{}, r.err
	}
	if cap(r.data) > maxKeptBuffer {
		r.data = nil // the last event was large: do not keep its memory
	}
	if cap(r.name) > maxKeptBuffer {
		r.name = nil
	}
	if !r.begun {
		r.begin()
	}
	for {
		if r.skipLF {
			if r.r == r.w {
				if !r.fill() {
					return r.end()
				}
				continue
			}
			if r.buf[r.r] == '\n' {
				r.r++
			}
			r.skipLF = false
		}
		seg := r.buf[r.r:r.w]
		if i := indexEOL(seg); i >= 0 {
			r.r += i + 1
			r.skipLF = seg[i] == '\r'
			var dispatch bool
			var err error
			if r.long {
				if err = r.piece(seg[:i]); err == nil {
					r.endLong()
				}
			} else {
				dispatch, err = r.line(seg[:i])
			}
			if err != nil {
				r.err = err
				return Event{}, err
			}
			if dispatch {
				return r.event(), nil
			}
			continue
		}
		// No line ends in what is buffered.
		var err error
		switch {
		case r.long:
			r.r = r.w
			err = r.piece(seg)
		case r.r == 0 && r.w == len(r.buf):
			r.r = r.w
			err = r.startLong(seg)
		}
		if err != nil {
			r.err = err
			return Event{}, err
		}
		if !r.fill() {
			return r.end()
		}
	}
}

// LastEventID returns the stream's last event ID as of the last blank
// line (an id field takes effect at the blank line after it, whether or
// not an event is dispatched there): what a client sends as
// Last-Event-ID when it reconnects. It is empty while the stream has set
// none.
func (r *Reader) LastEventID() string { return r.id }

// Retry returns the reconnection time the stream has set (its last valid
// retry field, which takes effect at once), and whether it has set one.
func (r *Reader) Retry() (time.Duration, bool) { return r.retry, r.hasRetry }

// begin skips a byte order mark at the start of the stream.
func (r *Reader) begin() {
	r.begun = true
	for r.w-r.r < len(bom) && bytes.HasPrefix(bom, r.buf[r.r:r.w]) {
		if !r.fill() {
			return
		}
	}
	if bytes.HasPrefix(r.buf[r.r:r.w], bom) {
		r.r += len(bom)
	}
}

// fill reads more into buf, after moving what is unparsed to its start;
// false when the source has ended or failed (srcErr).
func (r *Reader) fill() bool {
	if r.srcErr != nil {
		return false
	}
	if r.r > 0 {
		r.w = copy(r.buf, r.buf[r.r:r.w])
		r.r = 0
	}
	for range 100 {
		n, err := r.src.Read(r.buf[r.w:])
		if n < 0 || n > len(r.buf)-r.w {
			r.srcErr = errBadRead
			return false
		}
		r.w += n
		if err != nil {
			r.srcErr = err
			return n > 0
		}
		if n > 0 {
			return true
		}
	}
	r.srcErr = io.ErrNoProgress
	return false
}

// end ends the stream: the source's error, or a bound the unfinished line
// at the end already passes.
func (r *Reader) end() (Event, error) {
	r.err = r.srcErr
	if !r.long && r.r < r.w {
		if err := r.partial(r.buf[r.r:r.w]); err != nil {
			r.err = err
		}
	}
	return Event{}, r.err
}

// partial applies the bounds to a line the stream ended in.
func (r *Reader) partial(line []byte) error {
	if len(line) > r.maxLine {
		return ErrLineTooLong
	}
	if f, value := parseField(line); f == fieldData {
		return r.checkData(len(value))
	}
	return nil
}

// line handles one whole line; dispatch is true when it ended an event
// (r.event returns it).
func (r *Reader) line(line []byte) (dispatch bool, err error) {
	if len(line) > r.maxLine {
		return false, ErrLineTooLong
	}
	if len(line) == 0 {
		return r.blank(), nil
	}
	f, value := parseField(line)
	switch f {
	case fieldData:
		return false, r.startData(value)
	case fieldEvent:
		r.name = appendBounded(r.name[:0], value, r.maxLine)
	case fieldID:
		r.setID(value)
	case fieldRetry:
		r.setRetry(value)
	}
	return false, nil
}

// startLong handles the first piece of a line longer than buf (the whole
// of buf, so that a known field's name, colon and space are in it).
func (r *Reader) startLong(head []byte) error {
	r.long = true
	r.lineLen = len(head)
	if r.lineLen > r.maxLine {
		return ErrLineTooLong
	}
	f, value := parseField(head)
	r.lfield = f
	switch f {
	case fieldData:
		return r.startData(value)
	case fieldEvent, fieldID, fieldRetry:
		r.val = appendBounded(r.val[:0], value, r.maxLine)
	}
	return nil
}

// piece handles a later piece of a long line.
func (r *Reader) piece(p []byte) error {
	r.lineLen += len(p)
	if r.lineLen > r.maxLine {
		return ErrLineTooLong
	}
	switch r.lfield {
	case fieldData:
		if err := r.checkData(len(p)); err != nil {
			return err
		}
		r.data = appendBounded(r.data, p, r.maxData)
	case fieldEvent, fieldID, fieldRetry:
		r.val = appendBounded(r.val, p, r.maxLine)
	}
	return nil
}

// endLong handles the end of a long line.
func (r *Reader) endLong() {
	r.long = false
	switch r.lfield {
	case fieldEvent:
		r.name = appendBounded(r.name[:0], r.val, r.maxLine)
	case fieldID:
		r.setID(r.val)
	case fieldRetry:
		r.setRetry(r.val)
	}
	if cap(r.val) > maxKeptBuffer {
		r.val = nil
	}
}

// parseField splits a line (or the first piece of one) into its field
// and value.
func parseField(line []byte) (field, []byte) {
	if len(line) > 0 && line[0] == ':' {
		return fieldIgnored, nil
	}
	name, value := line, []byte(nil)
	if colon := bytes.IndexByte(line, ':'); colon >= 0 {
		name, value = line[:colon], line[colon+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	switch string(name) {
	case "data":
		return fieldData, value
	case "event":
		return fieldEvent, value
	case "id":
		return fieldID, value
	case "retry":
		return fieldRetry, value
	}
	return fieldIgnored, nil
}

// checkData reports whether n more bytes of the current data line fit.
func (r *Reader) checkData(n int) error {
	have := len(r.data)
	if r.hasData && !r.long {
		have++ // the newline joining this line to the last
	}
	if have+n > r.maxData {
		return ErrEventTooLarge
	}
	return nil
}

// startData appends the value of a data line (or its first piece).
func (r *Reader) startData(value []byte) error {
	n := len(value)
	if r.hasData {
		n++
	}
	if len(r.data)+n > r.maxData {
		return ErrEventTooLarge
	}
	if r.hasData {
		r.data = appendBounded(r.data, newline, r.maxData)
	}
	r.data = appendBounded(r.data, value, r.maxData)
	r.hasData = true
	return nil
}

func (r *Reader) setID(v []byte) {
	if bytes.IndexByte(v, 0) < 0 {
		r.idBuf = appendBounded(r.idBuf[:0], v, r.maxLine)
	}
}

func (r *Reader) setRetry(v []byte) {
	if len(v) == 0 {
		return
	}
	var ms int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return
		}
		d := int64(c - '0')
		if ms > (maxRetryMs-d)/10 {
			return // past what a time.Duration holds: ignored
		}
		ms = ms*10 + d
	}
	r.retry, r.hasRetry = time.Duration(ms)*time.Millisecond, true
}

// blank handles a blank line: the last event ID takes effect; it reports
// whether there is an event to dispatch.
func (r *Reader) blank() bool {
	if string(r.idBuf) != r.id {
		r.id = string(r.idBuf)
	}
	if !r.hasData {
		r.name = r.name[:0]
		return false
	}
	return true
}

// event returns the event ready for dispatch and starts the next one.
func (r *Reader) event() Event {
	ev := Event{ID: r.id, Name: r.eventName(), Data: r.data, Retry: r.retry}
	r.data, r.hasData, r.name = r.data[:0], false, r.name[:0]
	return ev
}

func (r *Reader) eventName() string {
	switch {
	case len(r.name) == 0, string(r.name) == "message":
		return "message"
	case string(r.name) == r.nameStr:
		return r.nameStr
	}
	r.nameStr = string(r.name)
	return r.nameStr
}

// appendBounded appends src to dst, growing dst to limit at most (the
// caller has checked that the result fits within limit).
func appendBounded(dst, src []byte, limit int) []byte {
	if need := len(dst) + len(src); need > cap(dst) {
		c := max(min(max(2*cap(dst), 64), limit), need)
		nd := make([]byte, len(dst), c)
		copy(nd, dst)
		dst = nd
	}
	return append(dst, src...)
}
