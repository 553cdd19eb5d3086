package mcp

import (
	"container/list"
	"context"
	"slices"
	"sync"
	"time"
)

// The in-process SessionStore: every record, event log and bus of a fleet
// whose instances are the Servers of one process (tests, or several
// handlers of one binary). It follows the SessionStore docs to the
// letter, so that it is also the reference the contract tests hold other
// stores to.

// Bounds of the memory store.
const (
	memMaxEventsPerSession = 1024
	memMaxEventBytes       = 1 << 20 // per session, data of every stream together
	memBusQueue            = 256     // messages waiting for one receiver; more are lost
)

// NewMemorySessionStore returns a SessionStore that keeps everything in
// this process's memory: the Servers of one process that share it form a
// fleet (ServerOptions.SessionStore).
func NewMemorySessionStore() SessionStore {
	return &memorySessionStore{
		recs:      make(map[string]*memSession),
		parties:   make(map[string]*list.List),
		receivers: make(map[string]map[*memReceiver]struct{}),
	}
}

type memorySessionStore struct {
	mu        sync.Mutex
	recs      map[string]*memSession
	parties   map[string]*list.List // each party's sessions, least recently used first
	version   uint64
	receivers map[string]map[*memReceiver]struct{}
}

type memSession struct {
	rec     SessionRecord
	last    time.Time
	elem    *list.Element // in parties[rec.Party]
	events  []SessionEvent
	bytes   int
	known   map[uint64]uint64 // stream → the highest seq appended
	dropped map[uint64]uint64 // stream → the highest seq dropped from the log
	wake    chan struct{}     // closed (and replaced) on every append and on removal
}

type memReceiver struct {
	ch chan []byte
}

func (m *memorySessionStore) expiredLocked(s *memSession, now time.Time) bool {
	return s.rec.IdleTimeout > 0 && now.Sub(s.last) >= s.rec.IdleTimeout
}

// removeLocked forgets s; it wakes whoever waits on its events.
func (m *memorySessionStore) removeLocked(s *memSession) {
	delete(m.recs, s.rec.ID)
	if l := m.parties[s.rec.Party]; l != nil {
		l.Remove(s.elem)
		if l.Len() == 0 {
			delete(m.parties, s.rec.Party)
		}
	}
	close(s.wake)
	s.wake = nil
}

// getLocked returns the live session id, removing it when it expired.
func (m *memorySessionStore) getLocked(id string, now time.Time) *memSession {
	s := m.recs[id]
	if s == nil {
		return nil
	}
	if m.expiredLocked(s, now) {
		m.removeLocked(s)
		return nil
	}
	return s
}

func copyRecord(r *SessionRecord) *SessionRecord {
	c := *r
	c.Subscriptions = slices.Clone(r.Subscriptions)
	return &c
}

func (m *memorySessionStore) Create(ctx context.Context, rec *SessionRecord, maxPerParty, maxSessions int) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	maxPerParty = max(maxPerParty, 1)
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.recs[rec.ID] != nil {
		return nil, ErrTemporarilyUnavailable
	}
	l := m.parties[rec.Party]
	// The party's expired sessions are gone, not evicted.
	if l != nil {
		for e := l.Front(); e != nil; {
			next := e.Next()
			if s := e.Value.(*memSession); m.expiredLocked(s, now) {
				m.removeLocked(s)
			}
			e = next
		}
		l = m.parties[rec.Party]
	}
	var evicted []string
	evict := func() {
		s := l.Front().Value.(*memSession)
		evicted = append(evicted, s.rec.ID)
		m.removeLocked(s)
		l = m.parties[rec.Party]
	}
	for l != nil && l.Len() >= maxPerParty {
		evict()
	}
	if maxSessions > 0 && len(m.recs) >= maxSessions {
		for id, s := range m.recs {
			if m.expiredLocked(s, now) {
				m.removeLocked(m.recs[id])
			}
		}
		if len(m.recs) >= maxSessions {
			if l == nil || l.Len() == 0 {
				return evicted, ErrTemporarilyUnavailable
			}
			evict()
		}
	}
	m.version++
	rec.Version = m.version
	s := &memSession{rec: *copyRecord(rec), last: now, wake: make(chan struct{})}
	if l == nil {
		l = list.New()
		m.parties[rec.Party] = l
	}
	s.elem = l.PushBack(s)
	m.recs[rec.ID] = s
	return evicted, nil
}

func (m *memorySessionStore) Touch(ctx context.Context, id string) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.getLocked(id, now)
	if s == nil {
		return 0, ErrSessionNotFound
	}
	s.last = now
	m.parties[s.rec.Party].MoveToBack(s.elem)
	return s.rec.Version, nil
}

func (m *memorySessionStore) Load(ctx context.Context, id string) (*SessionRecord, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.getLocked(id, time.Now())
	if s == nil {
		return nil, ErrSessionNotFound
	}
	return copyRecord(&s.rec), nil
}

func (m *memorySessionStore) Update(ctx context.Context, id string, u SessionUpdate) (*SessionRecord, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.getLocked(id, time.Now())
	if s == nil {
		return nil, ErrSessionNotFound
	}
	r := &s.rec
	if u.LogLevel != "" {
		r.LogLevel = u.LogLevel
	}
	if u.Initialized {
		r.Initialized = true
	}
	if u.Unsubscribe != "" {
		if i, ok := slices.BinarySearch(r.Subscriptions, u.Unsubscribe); ok {
			r.Subscriptions = slices.Delete(r.Subscriptions, i, i+1)
		}
	}
	if u.Subscribe != "" {
		i, ok := slices.BinarySearch(r.Subscriptions, u.Subscribe)
		if !ok && (u.MaxSubscriptions <= 0 || len(r.Subscriptions) < u.MaxSubscriptions) {
			r.Subscriptions = slices.Insert(r.Subscriptions, i, u.Subscribe)
		}
	}
	if u.SetInstance {
		r.Instance = u.Instance
	}
	m.version++
	r.Version = m.version
	return copyRecord(r), nil
}

func (m *memorySessionStore) Delete(ctx context.Context, id string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.getLocked(id, time.Now())
	if s == nil {
		return false, nil
	}
	m.removeLocked(s)
	return true, nil
}

func (m *memorySessionStore) AppendEvent(ctx context.Context, id string, ev SessionEvent) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.getLocked(id, time.Now())
	if s == nil {
		return ErrSessionNotFound
	}
	ev.Data = slices.Clone(ev.Data)
	if s.known == nil {
		s.known = make(map[uint64]uint64)
		s.dropped = make(map[uint64]uint64)
	}
	s.known[ev.Stream] = max(s.known[ev.Stream], ev.Seq)
	if ev.Seq == 0 {
		// The stream's opening: known from now on, nothing to keep.
		close(s.wake)
		s.wake = make(chan struct{})
		return nil
	}
	s.events = append(s.events, ev)
	s.bytes += len(ev.Data)
	for len(s.events) > memMaxEventsPerSession || s.bytes > memMaxEventBytes && len(s.events) > 1 {
		old := s.events[0]
		s.events[0] = SessionEvent{}
		s.events = s.events[1:]
		s.bytes -= len(old.Data)
		s.dropped[old.Stream] = max(s.dropped[old.Stream], old.Seq)
	}
	close(s.wake)
	s.wake = make(chan struct{})
	return nil
}

func (m *memorySessionStore) EventsAfter(ctx context.Context, id string, stream, seq uint64, wait time.Duration) ([]SessionEvent, bool, error) {
	var timeout <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		timeout = t.C
	}
	for {
		if err := ctx.Err(); err != nil {
			return nil, false, err
		}
		m.mu.Lock()
		s := m.getLocked(id, time.Now())
		if s == nil {
			m.mu.Unlock()
			return nil, false, ErrSessionNotFound
		}
		if _, ok := s.known[stream]; !ok && wait <= 0 {
			m.mu.Unlock()
			return nil, false, nil
		}
		if s.dropped[stream] > seq {
			m.mu.Unlock()
			return nil, false, nil
		}
		var evs []SessionEvent
		for _, ev := range s.events {
			if ev.Stream == stream && ev.Seq > seq {
				ev.Data = slices.Clone(ev.Data)
				evs = append(evs, ev)
			}
		}
		_, known := s.known[stream]
		wake := s.wake
		m.mu.Unlock()
		if len(evs) > 0 {
			return evs, true, nil
		}
		if timeout == nil {
			return nil, known, nil
		}
		select {
		case <-wake:
		case <-timeout:
			timeout = nil // one last look
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
	}
}

func (m *memorySessionStore) Publish(ctx context.Context, to string, msg []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	msg = slices.Clone(msg)
	m.mu.Lock()
	defer m.mu.Unlock()
	for r := range m.receivers[to] {
		select {
		case r.ch <- msg:
		default: // a receiver this far behind loses it
		}
	}
	return nil
}

func (m *memorySessionStore) Receive(ctx context.Context, instance string, ready func(), deliver func(msg []byte)) error {
	r := &memReceiver{ch: make(chan []byte, memBusQueue)}
	m.mu.Lock()
	rs := m.receivers[instance]
	if rs == nil {
		rs = make(map[*memReceiver]struct{})
		m.receivers[instance] = rs
	}
	rs[r] = struct{}{}
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		delete(rs, r)
		if len(rs) == 0 && m.receivers[instance] != nil && len(m.receivers[instance]) == 0 {
			delete(m.receivers, instance)
		}
		m.mu.Unlock()
	}()
	if ready != nil {
		ready()
	}
	for {
		select {
		case msg := <-r.ch:
			deliver(msg)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
