package sse

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"strings"
	"time"
)

// The reference the Reader is checked against: the WHATWG algorithm
// written as plainly as it reads (the whole input split into lines, a
// data buffer with a newline after every value), with the Reader's two
// bounds applied per line. It is slow and keeps everything; it is here to
// be obviously right.

// errEitherBound: a line passes both bounds; the Reader may report
// either.
var errEitherBound = errors.New("line and event bounds both passed")

type refResult struct {
	events   []Event
	lastID   string
	retry    time.Duration
	hasRetry bool
	err      error // io.EOF, ErrLineTooLong, ErrEventTooLarge or errEitherBound
}

type refLine struct {
	text       []byte
	terminated bool
}

func refLines(in []byte) []refLine {
	var out []refLine
	start := 0
	for i := 0; i < len(in); i++ {
		switch in[i] {
		case '\n':
			out = append(out, refLine{in[start:i], true})
			start = i + 1
		case '\r':
			out = append(out, refLine{in[start:i], true})
			if i+1 < len(in) && in[i+1] == '\n' {
				i++
			}
			start = i + 1
		}
	}
	if start < len(in) {
		out = append(out, refLine{in[start:], false})
	}
	return out
}

func refParse(in []byte, maxData, maxLine int) refResult {
	in = bytes.TrimPrefix(in, []byte("\xEF\xBB\xBF"))
	var res refResult
	var data, eventType, idBuf string
	res.err = io.EOF
	for _, l := range refLines(in) {
		line := string(l.text)
		var name, value string
		if i := strings.IndexByte(line, ':'); i >= 0 {
			name, value = line[:i], strings.TrimPrefix(line[i+1:], " ")
		} else {
			name = line
		}
		comment := strings.HasPrefix(line, ":")
		tooLong := len(line) > maxLine
		tooLarge := !comment && name == "data" && len(data)+len(value) > maxData
		switch {
		case tooLong && tooLarge:
			res.err = errEitherBound
		case tooLong:
			res.err = ErrLineTooLong
		case tooLarge:
			res.err = ErrEventTooLarge
		}
		if res.err != io.EOF || !l.terminated {
			break
		}
		switch {
		case line == "":
			res.lastID = idBuf
			if data == "" {
				eventType = ""
				continue
			}
			ev := Event{ID: res.lastID, Name: eventType, Data: []byte(strings.TrimSuffix(data, "\n")), Retry: res.retry}
			if ev.Name == "" {
				ev.Name = "message"
			}
			res.events = append(res.events, ev)
			data, eventType = "", ""
		case comment:
		case name == "data":
			data += value + "\n"
		case name == "event":
			eventType = value
		case name == "id":
			if !strings.Contains(value, "\x00") {
				idBuf = value
			}
		case name == "retry":
			if value != "" && strings.Trim(value, "0123456789") == "" {
				if ms, err := strconv.ParseInt(value, 10, 64); err == nil && ms <= maxRetryMs {
					res.retry, res.hasRetry = time.Duration(ms)*time.Millisecond, true
				}
			}
		}
	}
	return res
}
