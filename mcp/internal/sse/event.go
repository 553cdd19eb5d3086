package sse

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"time"
)

// Event is one server-sent event.
//
// Written (Writer.WriteEvent), each non-zero field becomes a field line,
// in the order event, id, retry, data. Read (Reader.Next), an Event is
// what the WHATWG dispatch algorithm hands to a listener, plus the
// reconnection time.
type Event struct {
	// ID is the event's id field. Written: an id line when not empty (it
	// must hold no CR, LF or NUL). Read: the stream's last event ID at
	// this event, which stays in force until an id field changes it, so an
	// event without an id line carries the id of an earlier one (empty
	// when the stream has set none).
	ID string
	// Name is the event field (the event type). Written: an event line
	// when not empty (no CR or LF). Read: "message" when the event had
	// none, as the standard says.
	Name string
	// Data is the event's data. Written: one data line per line of Data
	// (split at LF, CRLF and CR; an empty Data is one empty data line,
	// which a reader dispatches as an event with empty data). Read: the
	// data lines joined with "\n"; it is valid until the next call to
	// Reader.Next, which reuses its memory.
	Data []byte
	// Retry is the reconnection time. Written: a retry line, in whole
	// milliseconds, when positive. Read: the reconnection time the stream
	// has set so far (it stays in force, like ID), zero when none.
	Retry time.Duration
}

// EventID is the id of an event kept for replay: its stream and its
// place in that stream. Its text, the wire form of the SSE id field and
// of the Last-Event-ID header, is "STREAM-SEQ" in decimal, such as
// "3-17". Sequence numbers of a stream start at 1; Seq 0 names the
// moment before its first event (the id of a priming event sent before
// any).
type EventID struct {
	Stream uint64
	Seq    uint64
}

// String returns the text of id, "STREAM-SEQ".
func (id EventID) String() string { return string(id.Append(nil)) }

// Append appends the text of id to b and returns the extended slice; it
// does not allocate when b has room.
func (id EventID) Append(b []byte) []byte {
	b = strconv.AppendUint(b, id.Stream, 10)
	b = append(b, '-')
	return strconv.AppendUint(b, id.Seq, 10)
}

// ParseEventID parses the text of an EventID. Only the canonical text
// String produces is accepted (decimal digits without sign, leading
// zeros or spaces, each number within 64 bits), so that ParseEventID and
// String are inverses; ok is false for anything else, such as an id from
// another server.
func ParseEventID(s string) (id EventID, ok bool) {
	a, b, found := strings.Cut(s, "-")
	if !found {
		return EventID{}, false
	}
	var ok1, ok2 bool
	id.Stream, ok1 = parseCanonicalUint(a)
	id.Seq, ok2 = parseCanonicalUint(b)
	return id, ok1 && ok2
}

func parseCanonicalUint(s string) (uint64, bool) {
	if s == "" || len(s) > 1 && s[0] == '0' {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil
}

// ErrInvalidField is returned, and nothing written, for an event or
// comment whose text would break the framing of the stream: an id or
// event name holding CR or LF, an id holding NUL (a reader ignores it),
// a comment holding CR or LF.
var ErrInvalidField = errors.New("sse: field holds a line break or NUL")

// validFieldValue reports whether s can be one field line's value.
func validFieldValue(s string, nulAllowed bool) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\r', '\n':
			return false
		case 0:
			if !nulAllowed {
				return false
			}
		}
	}
	return true
}

func validEvent(e *Event) bool {
	return validFieldValue(e.ID, false) && validFieldValue(e.Name, true)
}

// appendEvent renders e (already validated) and the blank line that ends
// it.
func appendEvent(b []byte, e *Event) []byte {
	if e.Name != "" {
		b = append(b, "event: "...)
		b = append(b, e.Name...)
		b = append(b, '\n')
	}
	if e.ID != "" {
		b = append(b, "id: "...)
		b = append(b, e.ID...)
		b = append(b, '\n')
	}
	b = appendRetry(b, e.Retry)
	b = appendData(b, e.Data)
	return append(b, '\n')
}

// appendEntry renders a logged event: its name, its EventID, its data.
func appendEntry(b []byte, name string, en *Entry) []byte {
	if name != "" {
		b = append(b, "event: "...)
		b = append(b, name...)
		b = append(b, '\n')
	}
	b = append(b, "id: "...)
	b = en.ID.Append(b)
	b = append(b, '\n')
	b = appendData(b, en.Data)
	return append(b, '\n')
}

// appendPrime renders a priming event: an id, the retry interval when
// positive, one empty data line.
func appendPrime(b []byte, id EventID, retry time.Duration) []byte {
	b = append(b, "id: "...)
	b = id.Append(b)
	b = append(b, '\n')
	b = appendRetry(b, retry)
	return append(b, "data: \n\n"...)
}

func appendRetry(b []byte, retry time.Duration) []byte {
	if retry <= 0 {
		return b
	}
	b = append(b, "retry: "...)
	b = strconv.AppendInt(b, retry.Milliseconds(), 10)
	return append(b, '\n')
}

// appendData renders data as data lines, one per line of data.
func appendData(b, data []byte) []byte {
	for {
		i := indexEOL(data)
		b = append(b, "data: "...)
		if i < 0 {
			b = append(b, data...)
			return append(b, '\n')
		}
		b = append(b, data[:i]...)
		b = append(b, '\n')
		if data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n' {
			i++
		}
		data = data[i+1:]
	}
}

// indexEOL returns the index of the first CR or LF in p, or -1.
func indexEOL(p []byte) int {
	i := bytes.IndexByte(p, '\n')
	lim := p
	if i >= 0 {
		lim = p[:i]
	}
	if j := bytes.IndexByte(lim, '\r'); j >= 0 {
		return j
	}
	return i
}
