package main

import (
	"bytes"
	"fmt"
	"io"
	"sync"
	"unicode/utf8"
)

// The terminal is the user's: text a server sends (its name and
// instructions, tool names and descriptions, results, errors, questions,
// log and progress messages, a stdio server's stderr) may hold escape
// sequences that set the window title (OSC 0), write the clipboard
// (OSC 52), clear the screen (CSI 2J) or erase a line and draw a fake
// prompt (\r\x1b[2K). Everything the CLI writes on stdout and stderr goes
// through a termWriter, which renders every control character but
// newline and tab visibly: C0 controls, DEL and bytes that are not UTF-8
// as \xNN (\x1b, \x0d, \x7f, \x9b), C1 controls (U+0080–U+009F) and the
// bidirectional overrides and isolates (U+202E, ...) as \uNNNN; a \r
// right before \n is dropped (CRLF text reads as lines). --json output is
// made safe before it gets there (jsonText): the same characters are
// \u escapes of JSON, so it stays exact JSON of the same value. The
// terminal forms (huh) get the server's strings through sanitize.

// isBidiControl reports the Unicode bidirectional formatting characters:
// they reorder what the terminal shows (a name that reads backwards).
func isBidiControl(r rune) bool {
	switch {
	case r == 0x061C, r == 0x200E, r == 0x200F:
		return true
	case r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// appendSafe appends p to dst with every control character rendered
// visibly (see termWriter). final is false when more bytes may follow
// (a rune cut at the end of p is then returned as rest, to be completed
// by the next write).
func appendSafe(dst, p []byte, final bool) (out, rest []byte) {
	for i := 0; i < len(p); {
		c := p[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '\n' || c == '\t' || (c >= 0x20 && c < 0x7f):
				dst = append(dst, c)
			case c == '\r' && i+1 < len(p) && p[i+1] == '\n':
				// CRLF: the line end alone.
			default:
				dst = fmt.Appendf(dst, `\x%02x`, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(p[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			if !final && !utf8.FullRune(p[i:]) {
				return dst, p[i:]
			}
			dst = fmt.Appendf(dst, `\x%02x`, c)
			n = 1
		case r >= 0x80 && r <= 0x9f, isBidiControl(r):
			dst = fmt.Appendf(dst, `\u%04x`, r)
		default:
			dst = append(dst, p[i:i+n]...)
		}
		i += n
	}
	return dst, nil
}

// sanitize renders the control characters of s visibly: for the server's
// strings handed to the terminal forms, which draw them themselves.
func sanitize(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 && c != '\n' && c != '\t' || c >= 0x7f {
			b, _ := appendSafe(nil, []byte(s), true)
			return string(b)
		}
	}
	return s
}

// sanitizeLine is sanitize for a one-line label: a newline is shown as
// \n too.
func sanitizeLine(s string) string {
	return string(bytes.ReplaceAll([]byte(sanitize(s)), []byte("\n"), []byte(`\n`)))
}

// termWriter writes to w with control characters rendered visibly. It
// is safe for concurrent use; a rune cut between two writes (a stdio
// server's stderr copied in chunks) is held until the next one, and Flush
// writes what is held.
type termWriter struct {
	mu   sync.Mutex
	w    io.Writer
	held []byte
	buf  []byte
}

func (t *termWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	in := p
	if len(t.held) > 0 {
		in = append(t.held, p...)
		t.held = nil
	}
	out, rest := appendSafe(t.buf[:0], in, false)
	t.held = append(t.held[:0:0], rest...)
	t.buf = out[:0]
	if len(out) > 0 {
		if _, err := t.w.Write(out); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// Flush writes a held partial rune (visibly: it never became UTF-8).
func (t *termWriter) Flush() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.held) > 0 {
		out, _ := appendSafe(nil, t.held, true)
		t.held = nil
		t.w.Write(out)
	}
}

// jsonText makes JSON text encoding/json produced safe for a terminal
// without changing its value: DEL, C1 controls and bidirectional
// controls, which encoding/json writes raw, become \u escapes (and a byte
// that is not UTF-8, which can only come from a raw message, becomes
// \ufffd, as encoding/json does for strings). Outside strings JSON has no
// such characters, so every replacement is inside a string.
func jsonText(b []byte) []byte {
	clean := true
	for _, c := range b {
		if c >= 0x7f {
			clean = false
			break
		}
	}
	if clean {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			if c == 0x7f {
				out = append(out, `\u007f`...)
			} else {
				out = append(out, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			out = append(out, `\ufffd`...)
			n = 1
		case r >= 0x80 && r <= 0x9f, isBidiControl(r):
			out = fmt.Appendf(out, `\u%04x`, r)
		default:
			out = append(out, b[i:i+n]...)
		}
		i += n
	}
	return out
}
