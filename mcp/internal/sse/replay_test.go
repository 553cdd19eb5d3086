package sse

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

func ids(es []Entry) string {
	var b strings.Builder
	for i, e := range es {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(e.ID.String())
	}
	return b.String()
}

func mustAppend(t *testing.T, l *ReplayLog, stream, seq uint64, data string) {
	t.Helper()
	if err := l.Append(EventID{stream, seq}, []byte(data)); err != nil {
		t.Fatalf("Append %d-%d: %v", stream, seq, err)
	}
}

func since(t *testing.T, l *ReplayLog, stream, seq uint64) (string, error) {
	t.Helper()
	es, err := l.Since(EventID{stream, seq})
	return ids(es), err
}

func TestReplayLogReturnsTheEventsOfTheStreamAfterAnID(t *testing.T) {
	t.Parallel()
	l := NewReplayLog(ReplayLimits{})
	mustAppend(t, l, 1, 1, "a")
	mustAppend(t, l, 2, 1, "x")
	mustAppend(t, l, 1, 2, "b")
	mustAppend(t, l, 1, 3, "c")
	for seq, want := range []string{"1-1 1-2 1-3", "1-2 1-3", "1-3", ""} {
		got, err := since(t, l, 1, uint64(seq))
		if err != nil || got != want {
			t.Errorf("after 1-%d: %q %v, want %q", seq, got, err, want)
		}
	}
	es, _ := l.Since(EventID{1, 1})
	if string(es[0].Data) != "b" || string(es[1].Data) != "c" {
		t.Errorf("data %q %q", es[0].Data, es[1].Data)
	}
}

func TestReplayLogDropsTheOldestPastItsBound(t *testing.T) {
	t.Parallel()
	l := NewReplayLog(ReplayLimits{MaxBytes: 3 * (EntryOverhead + 10)})
	for seq := uint64(1); seq <= 5; seq++ {
		mustAppend(t, l, 1, seq, strings.Repeat("d", 10))
	}
	if l.Len() != 3 || l.Size() != 3*(EntryOverhead+10) {
		t.Fatalf("kept %d events, %d bytes; want the newest 3", l.Len(), l.Size())
	}
	if got, err := since(t, l, 1, 2); err != nil || got != "1-3 1-4 1-5" {
		t.Errorf("after 1-2: %q %v", got, err)
	}
	// A larger event drops as many old ones as it needs.
	mustAppend(t, l, 1, 6, strings.Repeat("d", EntryOverhead+20))
	if got, err := since(t, l, 1, 4); err != nil || got != "1-5 1-6" {
		t.Errorf("after 1-4: %q %v", got, err)
	}
}

func TestReplayLogDropsTheOldestPastItsCount(t *testing.T) {
	t.Parallel()
	l := NewReplayLog(ReplayLimits{MaxEvents: 4})
	for seq := uint64(1); seq <= 5; seq++ {
		mustAppend(t, l, 0, seq, "")
		mustAppend(t, l, 1, seq, "")
	}
	if l.Len() != 4 {
		t.Fatalf("kept %d events", l.Len())
	}
	got0, err0 := since(t, l, 0, 3)
	got1, err1 := since(t, l, 1, 3)
	if got0 != "0-4 0-5" || got1 != "1-4 1-5" || err0 != nil || err1 != nil {
		t.Errorf("kept %q and %q (%v, %v), want the 4 newest of both streams", got0, got1, err0, err1)
	}
}

func TestReplayLogReportsAnIDWhoseNextEventsWereDroppedAsTooOld(t *testing.T) {
	t.Parallel()
	l := NewReplayLog(ReplayLimits{MaxEvents: 2})
	for seq := uint64(1); seq <= 4; seq++ {
		mustAppend(t, l, 1, seq, "")
	}
	for _, seq := range []uint64{0, 1} {
		if _, err := since(t, l, 1, seq); err != ErrTooOld {
			t.Errorf("after 1-%d with 1-2 gone: %v, want ErrTooOld", seq, err)
		}
	}
	if got, err := since(t, l, 1, 2); err != nil || got != "1-3 1-4" {
		t.Errorf("after 1-2, whose next are kept: %q %v", got, err)
	}
	// A stream whose events all left is still known: its last id missed
	// nothing.
	mustAppend(t, l, 2, 1, "")
	mustAppend(t, l, 2, 2, "")
	if got, err := since(t, l, 1, 4); err != nil || got != "" {
		t.Errorf("after the last id of a stream with nothing kept: %q %v", got, err)
	}
	if _, err := since(t, l, 1, 3); err != ErrTooOld {
		t.Errorf("after 1-3 with 1-4 gone: %v", err)
	}
}

func TestReplayLogReportsAnUnknownStreamOrAFutureID(t *testing.T) {
	t.Parallel()
	l := NewReplayLog(ReplayLimits{})
	mustAppend(t, l, 1, 1, "")
	if _, err := since(t, l, 2, 0); err != ErrUnknownID {
		t.Errorf("unknown stream: %v", err)
	}
	if _, err := since(t, l, 1, 2); err != ErrUnknownID {
		t.Errorf("an id past the stream's last: %v", err)
	}
}

func TestReplayLogResumesAnOpenedStreamFromItsPrimingID(t *testing.T) {
	t.Parallel()
	l := NewReplayLog(ReplayLimits{})
	l.Open(5)
	if got, err := since(t, l, 5, 0); err != nil || got != "" {
		t.Errorf("after the prime of an opened stream: %q %v", got, err)
	}
	mustAppend(t, l, 5, 1, "")
	if got, err := since(t, l, 5, 0); err != nil || got != "5-1" {
		t.Errorf("after the prime: %q %v", got, err)
	}
	// Not opened: events before the first seen may have existed.
	mustAppend(t, l, 6, 1, "")
	if got, err := since(t, l, 6, 0); err != nil || got != "6-1" {
		t.Errorf("starting at 1: %q %v", got, err)
	}
}

func TestReplayLogTreatsSkippedSequenceNumbersAsLost(t *testing.T) {
	t.Parallel()
	l := NewReplayLog(ReplayLimits{})
	mustAppend(t, l, 1, 1, "")
	mustAppend(t, l, 1, 4, "")
	if _, err := since(t, l, 1, 1); err != ErrTooOld {
		t.Errorf("after 1-1 with 1-2 and 1-3 never appended: %v", err)
	}
	if got, err := since(t, l, 1, 3); err != nil || got != "1-4" {
		t.Errorf("after 1-3: %q %v", got, err)
	}
	mustAppend(t, l, 2, 7, "")
	if _, err := since(t, l, 2, 0); err != ErrTooOld {
		t.Errorf("a stream first seen at 7, not opened: %v", err)
	}
}

func TestReplayLogDoesNotKeepAnEventLargerThanItsBound(t *testing.T) {
	t.Parallel()
	l := NewReplayLog(ReplayLimits{MaxBytes: 2*EntryOverhead + 10})
	mustAppend(t, l, 1, 1, "a")
	mustAppend(t, l, 2, 1, strings.Repeat("h", EntryOverhead+100))
	if l.Len() != 1 {
		t.Errorf("kept %d: an event that can never fit dropped the others", l.Len())
	}
	if _, err := since(t, l, 2, 0); err != ErrTooOld {
		t.Errorf("after the event not kept's predecessor: %v, want ErrTooOld", err)
	}
	if got, err := since(t, l, 2, 1); err != nil || got != "" {
		t.Errorf("after the event not kept: %q %v", got, err)
	}
}

func TestReplayLogRefusesIDsThatDoNotIncrease(t *testing.T) {
	t.Parallel()
	l := NewReplayLog(ReplayLimits{})
	mustAppend(t, l, 1, 2, "")
	for _, seq := range []uint64{2, 1} {
		if err := l.Append(EventID{1, seq}, nil); err != ErrOutOfOrder {
			t.Errorf("1-%d after 1-2: %v", seq, err)
		}
	}
	if err := l.Append(EventID{3, 0}, nil); err != ErrOutOfOrder {
		t.Errorf("sequence 0 (the priming id): %v", err)
	}
	if l.Len() != 1 || l.Streams() != 1 {
		t.Errorf("refused appends left %d events, %d streams", l.Len(), l.Streams())
	}
}

func TestReplayLogForgetsAStream(t *testing.T) {
	t.Parallel()
	l := NewReplayLog(ReplayLimits{MaxEvents: 8})
	for seq := uint64(1); seq <= 2; seq++ {
		for stream := uint64(0); stream < 3; stream++ {
			mustAppend(t, l, stream, seq, "xy")
		}
	}
	l.Forget(1)
	if _, err := since(t, l, 1, 0); err != ErrUnknownID {
		t.Errorf("forgotten stream: %v", err)
	}
	if l.Len() != 4 || l.Size() != 4*(EntryOverhead+2) || l.Streams() != 2 {
		t.Errorf("after Forget: %d events, %d bytes, %d streams", l.Len(), l.Size(), l.Streams())
	}
	got0, _ := since(t, l, 0, 0)
	got2, _ := since(t, l, 2, 0)
	if got0 != "0-1 0-2" || got2 != "2-1 2-2" {
		t.Errorf("the others: %q %q", got0, got2)
	}
	l.Forget(9) // unknown: nothing
	// The ring still works across the hole.
	for seq := uint64(3); seq <= 20; seq++ {
		mustAppend(t, l, 0, seq, "")
	}
	if got, err := since(t, l, 0, 16); got != "0-17 0-18 0-19 0-20" || err != nil || l.Len() != 8 {
		t.Errorf("after wrapping: %q %v, %d kept", got, err, l.Len())
	}
}

func TestReplayLogForgetsTheLeastRecentlyUsedStreamPastMaxStreams(t *testing.T) {
	t.Parallel()
	l := NewReplayLog(ReplayLimits{MaxStreams: 3})
	mustAppend(t, l, 1, 1, "")
	mustAppend(t, l, 2, 1, "")
	mustAppend(t, l, 3, 1, "")
	mustAppend(t, l, 1, 2, "") // 2 is now the least recently used
	mustAppend(t, l, 4, 1, "")
	if l.Streams() != 3 {
		t.Fatalf("%d streams", l.Streams())
	}
	if _, err := since(t, l, 2, 0); err != ErrUnknownID {
		t.Errorf("stream 2: %v, want it forgotten", err)
	}
	for _, s := range []uint64{1, 3, 4} {
		if _, err := since(t, l, s, 1); err != nil {
			t.Errorf("stream %d: %v", s, err)
		}
	}
	if l.Len() != 4 {
		t.Errorf("%d events kept; the forgotten stream's must go with it", l.Len())
	}
}

func TestEventIDTextIsStreamDashSeq(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		id   EventID
		text string
	}{{EventID{0, 0}, "0-0"}, {EventID{3, 17}, "3-17"}, {EventID{1<<64 - 1, 1}, "18446744073709551615-1"}} {
		if got := c.id.String(); got != c.text {
			t.Errorf("%#v: %q", c.id, got)
		}
		if got, ok := ParseEventID(c.text); !ok || got != c.id {
			t.Errorf("%q: %v %v", c.text, got, ok)
		}
	}
}

func TestParseEventIDRefusesAllButTheCanonicalText(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "1", "1-", "-1", "01-1", "1-01", "+1-1", "1-+1", " 1-1", "1-1 ", "1-2-3", "a-1", "1_0-1",
		"18446744073709551616-1", fmt.Sprint(uint64(1<<63)) + "0-1"} {
		if id, ok := ParseEventID(s); ok {
			t.Errorf("%q parsed as %v", s, id)
		}
	}
}

// replayModel is the ReplayLog's contract written plainly: a slice of
// what is kept, oldest first.
type replayModel struct {
	lim     ReplayLimits
	kept    []Entry
	streams map[uint64]*streamRecord
	clock   uint64
}

func (m *replayModel) size() int {
	n := 0
	for _, e := range m.kept {
		n += len(e.Data) + EntryOverhead
	}
	return n
}

func (m *replayModel) touch(stream uint64) *streamRecord {
	m.clock++
	if rec := m.streams[stream]; rec != nil {
		rec.used = m.clock
		return rec
	}
	if len(m.streams) >= m.lim.MaxStreams {
		var victim uint64
		var oldest *streamRecord
		for s, rec := range m.streams {
			if oldest == nil || rec.used < oldest.used {
				victim, oldest = s, rec
			}
		}
		m.forget(victim)
	}
	rec := &streamRecord{used: m.clock}
	m.streams[stream] = rec
	return rec
}

func (m *replayModel) forget(stream uint64) {
	delete(m.streams, stream)
	var keep []Entry
	for _, e := range m.kept {
		if e.ID.Stream != stream {
			keep = append(keep, e)
		}
	}
	m.kept = keep
}

func (m *replayModel) append(id EventID, data []byte) error {
	if rec := m.streams[id.Stream]; id.Seq == 0 || rec != nil && id.Seq <= rec.last {
		return ErrOutOfOrder
	}
	rec := m.touch(id.Stream)
	if id.Seq > rec.last+1 {
		rec.dropped = id.Seq - 1
	}
	rec.last = id.Seq
	if len(data)+EntryOverhead > m.lim.MaxBytes {
		rec.dropped = id.Seq
		return nil
	}
	for len(m.kept) > 0 && (m.size()+len(data)+EntryOverhead > m.lim.MaxBytes || len(m.kept) >= m.lim.MaxEvents) {
		old := m.kept[0]
		m.kept = m.kept[1:]
		if r := m.streams[old.ID.Stream]; r != nil && old.ID.Seq > r.dropped {
			r.dropped = old.ID.Seq
		}
	}
	m.kept = append(m.kept, Entry{id, data})
	return nil
}

func (m *replayModel) since(id EventID) (string, error) {
	rec := m.streams[id.Stream]
	if rec == nil || id.Seq > rec.last {
		return "", ErrUnknownID
	}
	m.touch(id.Stream)
	if id.Seq < rec.dropped {
		return "", ErrTooOld
	}
	var out []Entry
	for _, e := range m.kept {
		if e.ID.Stream == id.Stream && e.ID.Seq > id.Seq {
			out = append(out, e)
		}
	}
	return ids(out), nil
}

func TestReplayLogAgreesWithASimpleModel(t *testing.T) {
	t.Parallel()
	rnd := rand.New(rand.NewPCG(1, 2))
	for round := range 50 {
		lim := ReplayLimits{MaxBytes: EntryOverhead*4 + rnd.IntN(2000), MaxEvents: 1 + rnd.IntN(40), MaxStreams: 1 + rnd.IntN(6)}
		l := NewReplayLog(lim)
		m := &replayModel{lim: lim, streams: map[uint64]*streamRecord{}}
		next := map[uint64]uint64{}
		for step := range 2000 {
			stream := uint64(rnd.IntN(8))
			switch op := rnd.IntN(10); {
			case op < 6:
				seq := next[stream] + 1
				if rnd.IntN(10) == 0 {
					seq += uint64(rnd.IntN(3)) // a gap, or a repeat
					if rnd.IntN(2) == 0 && seq > 1 {
						seq -= 2
					}
				}
				data := make([]byte, rnd.IntN(300))
				err1, err2 := l.Append(EventID{stream, seq}, data), m.append(EventID{stream, seq}, data)
				if err1 != err2 {
					t.Fatalf("round %d step %d: Append %d-%d: %v, model %v", round, step, stream, seq, err1, err2)
				}
				if err1 == nil {
					next[stream] = seq
				}
			case op < 8:
				seq := uint64(rnd.IntN(int(next[stream]) + 2))
				got, err1 := since(t, l, stream, seq)
				want, err2 := m.since(EventID{stream, seq})
				if got != want || err1 != err2 {
					t.Fatalf("round %d step %d: Since %d-%d: %q %v, model %q %v", round, step, stream, seq, got, err1, want, err2)
				}
			case op < 9:
				l.Open(stream)
				m.touch(stream)
			default:
				l.Forget(stream)
				m.forget(stream)
				delete(next, stream)
			}
			if l.Len() != len(m.kept) || l.Size() != m.size() || l.Streams() != len(m.streams) {
				t.Fatalf("round %d step %d: %d events %d bytes %d streams, model %d %d %d", round, step,
					l.Len(), l.Size(), l.Streams(), len(m.kept), m.size(), len(m.streams))
			}
			if l.Size() > lim.MaxBytes || l.Len() > lim.MaxEvents || l.Streams() > lim.MaxStreams {
				t.Fatalf("round %d step %d: past the bounds", round, step)
			}
		}
	}
}
