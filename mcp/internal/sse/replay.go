package sse

import "errors"

// Entry is one event kept for replay: its id and its data.
type Entry struct {
	ID   EventID
	Data []byte
}

// EntryOverhead is what each kept event counts toward
// ReplayLimits.MaxBytes on top of its data: the bookkeeping it costs.
const EntryOverhead = 64

// Defaults of ReplayLimits.
const (
	DefaultReplayBytes   = 1 << 20
	DefaultReplayEvents  = 1024
	DefaultReplayStreams = 64
)

// ReplayLimits bound a ReplayLog. A zero field means its default.
type ReplayLimits struct {
	// MaxBytes bounds the events kept: the sum of their data lengths plus
	// EntryOverhead each. Zero means DefaultReplayBytes (1 MiB).
	MaxBytes int
	// MaxEvents bounds the number of events kept. Zero means
	// DefaultReplayEvents (1024).
	MaxEvents int
	// MaxStreams bounds the streams the log remembers, with or without
	// events kept. Zero means DefaultReplayStreams (64).
	MaxStreams int
}

// Errors of ReplayLog.
var (
	// ErrUnknownID: the log knows nothing of the id's stream (it never
	// saw it, or forgot it), or the id is past the stream's last event.
	ErrUnknownID = errors.New("sse: unknown event id")
	// ErrTooOld: some events of the stream after the id are no longer
	// kept, so a replay would miss them.
	ErrTooOld = errors.New("sse: events after that id are no longer kept")
	// ErrOutOfOrder: Append's id is not after its stream's last one.
	ErrOutOfOrder = errors.New("sse: event id is not after its stream's last")
)

// ReplayLog keeps the recent events of one or more streams, so that a
// client that reconnects with Last-Event-ID gets what it missed
// (2025-11-25 resumability). Events of all streams share the bounds and
// leave in the order they came, the oldest first; a stream whose events
// have left is still remembered, so that the log can tell a client whose
// events are gone (ErrTooOld) from one that missed nothing. The streams
// remembered are bounded too: past MaxStreams, the one appended to (or
// opened, or resumed) least recently is forgotten with its events.
//
// Memory: at most MaxBytes of accounted event bytes (data is kept as
// given, not copied), MaxEvents entries, and MaxStreams small records.
//
// A ReplayLog is not safe for concurrent use: its owner serializes
// Append, Since, Open and Forget (typically under the lock that guards
// the streams it serves). The zero value is not usable; use
// NewReplayLog.
type ReplayLog struct {
	lim     ReplayLimits
	ring    []Entry // circular: n entries from head
	head, n int
	bytes   int
	streams map[uint64]*streamRecord
	clock   uint64 // counts uses, for least recently used
}

// streamRecord is what the log remembers of one stream.
type streamRecord struct {
	last    uint64 // the highest sequence number known (appended, or 0 when opened)
	dropped uint64 // the highest sequence number no longer kept; 0 when none was lost
	kept    int    // events kept
	used    uint64 // clock at the last use
}

// NewReplayLog returns an empty log within lim.
func NewReplayLog(lim ReplayLimits) *ReplayLog {
	if lim.MaxBytes <= 0 {
		lim.MaxBytes = DefaultReplayBytes
	}
	if lim.MaxEvents <= 0 {
		lim.MaxEvents = DefaultReplayEvents
	}
	if lim.MaxStreams <= 0 {
		lim.MaxStreams = DefaultReplayStreams
	}
	return &ReplayLog{lim: lim, streams: make(map[uint64]*streamRecord)}
}

// Open makes stream known to the log before it has an event, so that
// Since of its priming id (Seq 0) succeeds with nothing to replay rather
// than ErrUnknownID. Opening a stream the log knows only marks it used.
func (l *ReplayLog) Open(stream uint64) {
	if rec := l.streams[stream]; rec != nil {
		rec.used = l.tick()
		return
	}
	l.record(stream)
}

// Append keeps data as the event id of its stream, dropping the oldest
// events of the log (any stream) as the bounds require. The sequence
// numbers of a stream must increase (ErrOutOfOrder otherwise, and nothing
// is kept); a sequence number that skips some marks the skipped ones as
// lost, since the log never had them, as is every event of a stream
// before the first the log sees unless the stream was opened (Open). An
// event larger than MaxBytes by itself is not kept (and so is lost for
// replay) without dropping any other.
//
// data is kept as it is, not copied: the caller must not modify it
// afterwards.
func (l *ReplayLog) Append(id EventID, data []byte) error {
	rec := l.streams[id.Stream]
	switch {
	case id.Seq == 0 || rec != nil && id.Seq <= rec.last:
		return ErrOutOfOrder
	case rec == nil:
		rec = l.record(id.Stream)
	}
	rec.used = l.tick()
	if id.Seq > rec.last+1 {
		rec.dropped = id.Seq - 1
	}
	rec.last = id.Seq
	size := len(data) + EntryOverhead
	if size > l.lim.MaxBytes {
		rec.dropped = id.Seq
		return nil
	}
	for l.n > 0 && (l.bytes+size > l.lim.MaxBytes || l.n >= l.lim.MaxEvents) {
		l.dropOldest()
	}
	if l.n == len(l.ring) {
		l.grow()
	}
	l.ring[(l.head+l.n)%len(l.ring)] = Entry{ID: id, Data: data}
	l.n++
	l.bytes += size
	rec.kept++
	return nil
}

// Since returns the events of id's stream after id, oldest first, for a
// client whose Last-Event-ID is id: nothing (and no error) when it missed
// nothing. It reports ErrUnknownID when the log does not know id's
// stream or id is past the stream's last event, and ErrTooOld when some
// event after id is no longer kept. The entries' Data are those given to
// Append (shared, not copied); the slice is the caller's.
func (l *ReplayLog) Since(id EventID) ([]Entry, error) {
	rec := l.streams[id.Stream]
	if rec == nil || id.Seq > rec.last {
		return nil, ErrUnknownID
	}
	rec.used = l.tick()
	if id.Seq < rec.dropped {
		return nil, ErrTooOld
	}
	if rec.kept == 0 || id.Seq == rec.last {
		return nil, nil
	}
	out := make([]Entry, 0, min(rec.kept, int(rec.last-id.Seq)))
	for i := 0; i < l.n; i++ {
		e := &l.ring[(l.head+i)%len(l.ring)]
		if e.ID.Stream == id.Stream && e.ID.Seq > id.Seq {
			out = append(out, *e)
		}
	}
	return out, nil
}

// Forget drops stream's events and the log's record of it: Since of its
// ids then reports ErrUnknownID. Forgetting a stream the log does not
// know does nothing.
func (l *ReplayLog) Forget(stream uint64) {
	rec := l.streams[stream]
	if rec == nil {
		return
	}
	delete(l.streams, stream)
	if rec.kept == 0 {
		return
	}
	j := 0
	for i := 0; i < l.n; i++ {
		e := l.ring[(l.head+i)%len(l.ring)]
		if e.ID.Stream == stream {
			l.bytes -= len(e.Data) + EntryOverhead
			continue
		}
		l.ring[(l.head+j)%len(l.ring)] = e
		j++
	}
	for k := j; k < l.n; k++ {
		l.ring[(l.head+k)%len(l.ring)] = Entry{}
	}
	l.n = j
}

// Len returns the number of events kept.
func (l *ReplayLog) Len() int { return l.n }

// Size returns the bytes the kept events count toward MaxBytes.
func (l *ReplayLog) Size() int { return l.bytes }

// Streams returns the number of streams the log remembers.
func (l *ReplayLog) Streams() int { return len(l.streams) }

func (l *ReplayLog) tick() uint64 {
	l.clock++
	return l.clock
}

// record makes a record for a stream the log does not know, forgetting
// the least recently used stream when the log is at MaxStreams.
func (l *ReplayLog) record(stream uint64) *streamRecord {
	if len(l.streams) >= l.lim.MaxStreams {
		var victim uint64
		var oldest *streamRecord
		for s, rec := range l.streams {
			if oldest == nil || rec.used < oldest.used {
				victim, oldest = s, rec
			}
		}
		l.Forget(victim)
	}
	rec := &streamRecord{used: l.tick()}
	l.streams[stream] = rec
	return rec
}

func (l *ReplayLog) dropOldest() {
	e := &l.ring[l.head]
	if rec := l.streams[e.ID.Stream]; rec != nil {
		rec.kept--
		if e.ID.Seq > rec.dropped {
			rec.dropped = e.ID.Seq
		}
	}
	l.bytes -= len(e.Data) + EntryOverhead
	*e = Entry{}
	l.head = (l.head + 1) % len(l.ring)
	l.n--
}

// grow makes room for one more entry, within MaxEvents.
func (l *ReplayLog) grow() {
	c := min(max(2*len(l.ring), 16), l.lim.MaxEvents)
	ring := make([]Entry, c)
	for i := 0; i < l.n; i++ {
		ring[i] = l.ring[(l.head+i)%len(l.ring)]
	}
	l.ring, l.head = ring, 0
}
