package sse

import (
	"bytes"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// chunkReader hands out its input a few bytes at a time, to put line
// ends, CRLF pairs and the byte order mark across reads; lastWithEOF
// returns the last bytes together with io.EOF.
type chunkReader struct {
	in          []byte
	chunk       int
	lastWithEOF bool
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.in) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.in[:min(c.chunk, len(c.in))])
	c.in = c.in[n:]
	if len(c.in) == 0 && c.lastWithEOF {
		return n, io.EOF
	}
	return n, nil
}

// FuzzReader checks the Reader against the reference parser on any
// input, any bounds, any buffer size and any way the input is split
// into reads: the same events, the same end (io.EOF or the bound passed),
// the same last event ID and retry, memory within the bounds, no panic.
func FuzzReader(f *testing.F) {
	for _, s := range []string{
		"data: a\n\n",
		"event: message\nid: 1-1\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n",
		"id: 2-0\nretry: 1000\ndata: \n\n",
		"\xEF\xBB\xBFdata: bom\r\n\r\n",
		"data: a\rdata: b\r\rdata: c\r\n\r\n: comment\n\n",
		"data\ndata:\ndata:  two spaces\n\n",
		"id: a\x00b\ndata: x\n\nid\ndata: y\n\n",
		"retry: 12x\nretry: 99999999999999999999\nretry: 7\ndata: r\n\n",
		"data: unterminated",
		"data: " + string(bytes.Repeat([]byte("L"), 300)) + "\n\n",
		"event: " + string(bytes.Repeat([]byte("E"), 300)) + "\ndata: x\n\n",
		"foo: bar\n:\n\n\n\r\r\n",
	} {
		f.Add([]byte(s), uint16(4096), uint16(4096), uint8(0), uint8(7))
	}
	f.Fuzz(func(t *testing.T, in []byte, maxData, maxLine uint16, bufSize, chunk uint8) {
		md, ml := int(maxData)%600+1, int(maxLine)%600+1
		bs := int(bufSize) + minReadBuf
		src := &chunkReader{in: in, chunk: int(chunk&0x3f) + 1, lastWithEOF: chunk&0x40 != 0}
		r := newReaderSize(src, md, ml, bs)
		var got []Event
		var err error
		for {
			var ev Event
			ev, err = r.Next()
			if cap(r.data) > md || cap(r.val) > ml || cap(r.idBuf) > ml || cap(r.name) > ml || len(r.buf) != bs {
				t.Fatalf("memory past the bounds: data %d/%d, val %d, id %d, name %d /%d, buf %d",
					cap(r.data), md, cap(r.val), cap(r.idBuf), cap(r.name), ml, len(r.buf))
			}
			if err != nil {
				break
			}
			if len(got) > len(in) {
				t.Fatal("more events than input bytes")
			}
			ev.Data = bytes.Clone(ev.Data)
			got = append(got, ev)
		}
		if _, again := r.Next(); again != err {
			t.Fatalf("error not sticky: %v then %v", err, again)
		}
		want := refParse(in, md, ml)
		switch {
		case want.err == errEitherBound:
			if !errors.Is(err, ErrLineTooLong) && !errors.Is(err, ErrEventTooLarge) {
				t.Fatalf("end %v, want a bound error", err)
			}
		case err != want.err:
			t.Fatalf("end %v, want %v", err, want.err)
		}
		if len(got) != len(want.events) {
			t.Fatalf("%d events, want %d:\n got %q\nwant %q", len(got), len(want.events), got, want.events)
		}
		for i := range got {
			g, w := got[i], want.events[i]
			if g.ID != w.ID || g.Name != w.Name || !bytes.Equal(g.Data, w.Data) || g.Retry != w.Retry {
				t.Fatalf("event %d: %+v, want %+v", i, g, w)
			}
		}
		if d, ok := r.Retry(); r.LastEventID() != want.lastID || d != want.retry || ok != want.hasRetry {
			t.Fatalf("state: last id %q retry %v %v, want %q %v %v", r.LastEventID(), d, ok, want.lastID, want.retry, want.hasRetry)
		}
	})
}

// FuzzParseEventID checks that ParseEventID accepts exactly the text
// String produces.
func FuzzParseEventID(f *testing.F) {
	for _, s := range []string{"0-0", "1-17", "18446744073709551615-1", "01-1", "1-", "-1", "1-2-3", "+1-1", "18446744073709551616-0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, ok := ParseEventID(s)
		if ok && id.String() != s {
			t.Fatalf("%q parsed as %v, whose text is %q", s, id, id.String())
		}
		if back, ok2 := ParseEventID(id.String()); !ok2 || back != id {
			t.Fatalf("the text of %v does not parse back", id)
		}
	})
}

// FuzzWriterReaderRoundTrip checks that whatever event the Writer
// accepts, the Reader reads back as it was written (line breaks in data
// becoming "\n", an empty name becoming "message").
func FuzzWriterReaderRoundTrip(f *testing.F) {
	f.Add("1-1", "message", []byte(`{"jsonrpc":"2.0"}`), uint32(0))
	f.Add("", "", []byte("a\r\nb\rc\n"), uint32(1500))
	f.Add(" x", ": y", []byte(" z\n\n"), uint32(1))
	f.Add("a\nb", "c", []byte{}, uint32(0))
	f.Fuzz(func(t *testing.T, id, name string, data []byte, retryMs uint32) {
		e := Event{ID: id, Name: name, Data: data, Retry: time.Duration(retryMs) * time.Millisecond}
		rr := httptest.NewRecorder()
		w, _ := StartStream(rr, nil, 0)
		err := w.WriteEvent(e)
		if err == ErrInvalidField {
			if rr.Body.Len() != 0 || !strings.ContainsAny(id, "\r\n\x00") && !strings.ContainsAny(name, "\r\n") {
				t.Fatalf("refused %+v (wrote %q)", e, rr.Body.String())
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		r := NewReader(bytes.NewReader(rr.Body.Bytes()), len(data)+1, len(id)+len(name)+len(data)+64)
		got, err := r.Next()
		if err != nil {
			t.Fatalf("reading %q: %v", rr.Body.String(), err)
		}
		wantData := strings.NewReplacer("\r\n", "\n", "\r", "\n").Replace(string(data))
		wantName := name
		if wantName == "" {
			wantName = "message"
		}
		if got.ID != id || got.Name != wantName || string(got.Data) != wantData || got.Retry != e.Retry {
			t.Fatalf("wrote %+v as %q, read %+v", e, rr.Body.String(), got)
		}
		if _, err := r.Next(); err != io.EOF {
			t.Fatalf("after the event: %v", err)
		}
	})
}
