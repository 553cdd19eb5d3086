package sse

import (
	"net/http"
	"testing"
	"time"
)

var benchMessage = []byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"abc","progress":42,"total":100,"message":"working on it"}}`)

// BenchmarkWriteEvent writes one message event (the 2026-07-28 shape) to
// a ResponseWriter with deadlines and flushing that discards the bytes:
// the cost of rendering, arming the deadline and flushing.
func BenchmarkWriteEvent(b *testing.B) {
	rw := &discardRW{h: http.Header{}}
	w, _ := StartStream(rw, nil, 10*time.Second)
	b.ReportAllocs()
	b.SetBytes(int64(len(benchMessage)))
	for b.Loop() {
		if err := w.WriteEvent(Event{Name: "message", Data: benchMessage}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWriteEntry writes one logged event (the 2025-11-25 shape,
// with its STREAM-SEQ id).
func BenchmarkWriteEntry(b *testing.B) {
	rw := &discardRW{h: http.Header{}}
	w, _ := StartStream(rw, nil, 10*time.Second)
	b.ReportAllocs()
	b.SetBytes(int64(len(benchMessage)))
	seq := uint64(0)
	for b.Loop() {
		seq++
		if err := w.WriteEntries("message", Entry{EventID{7, seq}, benchMessage}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadEvent reads one message event from a stream of them.
func BenchmarkReadEvent(b *testing.B) {
	src := &endless{pattern: []byte("event: message\ndata: " + string(benchMessage) + "\n\n")}
	r := NewReader(src, 0, 0)
	b.ReportAllocs()
	b.SetBytes(int64(len(benchMessage)))
	for b.Loop() {
		if _, err := r.Next(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadEventWithID reads events that each carry a new id: the
// one allocation per event is the id's string.
func BenchmarkReadEventWithID(b *testing.B) {
	src := &endless{pattern: []byte("event: message\nid: 7-1\ndata: " + string(benchMessage) + "\n\nevent: message\nid: 7-2\ndata: " + string(benchMessage) + "\n\n")}
	r := NewReader(src, 0, 0)
	b.ReportAllocs()
	b.SetBytes(int64(len(benchMessage)))
	for b.Loop() {
		if _, err := r.Next(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReplayLogAppend appends to a full log (each append drops the
// oldest event).
func BenchmarkReplayLogAppend(b *testing.B) {
	l := NewReplayLog(ReplayLimits{})
	seq := uint64(0)
	b.ReportAllocs()
	for b.Loop() {
		seq++
		l.Append(EventID{seq % 8, seq}, benchMessage)
	}
}
