package mcp

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
	"github.com/roundtrip-mcp/roundtrip/mcp/internal/sse"
)

// A Server's part of a fleet sharing 2025-era sessions
// (ServerOptions.SessionStore, session_store.go). The instance has a
// random 20-bit tag: its name on the store's bus is derived from it, and
// it is the high bits of the JSON-RPC ids of the server-to-client
// requests its handlers send (tag<<32 | counter, below 2^53) and of its
// stream numbers, so that a client's answer POSTed to any instance names
// the instance waiting for it, and event ids of different instances never
// collide. The bus carries small JSON messages (fleetMessage); what does
// not decode, or is larger than maxFleetMessage, is ignored.

const (
	fleetTagBits = 20
	// fleetBroadcast is the bus name every instance also receives on:
	// what concerns instances not known by name (a session ended, a
	// cancellation of a request running somewhere).
	fleetBroadcast  = "mcp-fleet"
	maxFleetMessage = 4 << 20
	// fleetStoreTimeout bounds one store round trip of a request.
	fleetStoreTimeout = 5 * time.Second
)

// Kinds of fleet messages.
const (
	fleetReply   = "reply"   // a client's answer (Msg) to a request the instance sent
	fleetClose   = "close"   // the session ended: drop the replica
	fleetChanged = "changed" // the session's record changed: reload it
	fleetCancel  = "cancel"  // notifications/cancelled (Msg: its params)
	fleetPost    = "post"    // a message POSTed to an HTTP+SSE session held here (Msg)
	fleetAck     = "ack"     // the answer to a post or a release (Nonce, OK)
	fleetRelease = "release" // give the GET stream up and flush its events, then ack
	// fleetNotify is a notification related to no request (Msg) for the
	// session's holder to write.
	fleetNotify = "notify"
	// fleetComplete is CompleteElicitation (Msg: the id as a JSON
	// string) for the instance that asked it, which acks.
	fleetComplete = "complete"
)

// maxElicitationID bounds the id CompleteElicitation asks the fleet for.
const maxElicitationID = 1024

// fleetAckWait bounds how long a forwarded HTTP+SSE POST waits for the
// holder's acknowledgement: none by then, and the holder is gone.
const fleetAckWait = time.Second

type fleetMessage struct {
	Kind    string          `json:"k"`
	Session string          `json:"s"`
	Msg     json.RawMessage `json:"m,omitempty"`
	// Header is what a forwarded HTTP+SSE POST carried (fleetPost).
	Header map[string]string `json:"h,omitempty"`
	// Token is the verified token of a forwarded POST (fleetPost).
	Token *fleetToken `json:"t,omitempty"`
	// AckTo names the instance waiting for the holder's fleetAck of a
	// post, and Nonce the wait; OK is the holder's answer (it runs
	// the message).
	AckTo string `json:"a,omitempty"`
	Nonce string `json:"n,omitempty"`
	OK    bool   `json:"ok,omitempty"`
}

// fleetToken is a TokenInfo on the bus, bounded (maxFleetToken): what
// WithTokenInfo put in the context of the POST the holder runs.
type fleetToken struct {
	ClientID string    `json:"c,omitempty"`
	Issuer   string    `json:"i,omitempty"`
	Subject  string    `json:"s,omitempty"`
	Scopes   []string  `json:"sc,omitempty"`
	Expiry   time.Time `json:"e,omitzero"`
}

// maxFleetToken bounds a token carried on the bus (its JSON); a larger
// one is not forwarded (the POST is refused, 413).
const maxFleetToken = 16 << 10

func tokenToFleet(ti *TokenInfo) *fleetToken {
	if ti == nil {
		return nil
	}
	return &fleetToken{ClientID: ti.ClientID, Issuer: ti.Issuer, Subject: ti.Subject, Scopes: slices.Clone(ti.Scopes), Expiry: ti.Expiry}
}

func (t *fleetToken) info() *TokenInfo {
	return &TokenInfo{ClientID: t.ClientID, Issuer: t.Issuer, Subject: t.Subject, Scopes: t.Scopes, Expiry: t.Expiry}
}

// sessionFleet is a Server's membership of a fleet.
type sessionFleet struct {
	s     *Server
	store SessionStore
	tag   uint64
	name  string
	stop  context.CancelFunc

	// acks are the forwarded POSTs waiting for their holder's
	// fleetAck, by nonce (at most one entry per POST in flight here).
	amu  sync.Mutex
	acks map[string]chan bool
}

func fleetInstanceName(tag uint64) string { return fmt.Sprintf("mcp-%05x", tag) }

// startFleet makes the server an instance of the fleet of store and
// receives on the bus until Close.
func (s *Server) startFleet(store SessionStore) {
	var b [8]byte
	_, _ = rand.Read(b[:])
	tag := binary.LittleEndian.Uint64(b[:])&(1<<fleetTagBits-1) | 1 // never 0
	ctx, cancel := context.WithCancel(context.Background())
	f := &sessionFleet{s: s, store: store, tag: tag, name: fleetInstanceName(tag), stop: cancel}
	s.fleet = f
	ready := make(chan struct{}, 2)
	for _, name := range []string{f.name, fleetBroadcast} {
		go func() {
			wait := 100 * time.Millisecond
			for {
				err := store.Receive(ctx, name, func() { ready <- struct{}{} }, f.receive)
				if ctx.Err() != nil {
					return
				}
				s.log.Warn("mcp: session bus receive ended; receiving again", "err", err, "in", wait)
				select {
				case <-ctx.Done():
					return
				case <-time.After(wait):
				}
				wait = min(2*wait, 30*time.Second)
			}
		}()
	}
	// Messages published once NewServer returns reach this instance
	// (bounded: a store that does not answer does not hold it up).
	t := time.NewTimer(2 * time.Second)
	defer t.Stop()
	for range 2 {
		select {
		case <-ready:
		case <-t.C:
			return
		}
	}
}

func (f *sessionFleet) close() { f.stop() }

func (f *sessionFleet) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), fleetStoreTimeout)
}

// publish sends a message on the bus (best effort, off the caller's path).
func (f *sessionFleet) publish(to, kind, session string, msg []byte) {
	b, err := json.Marshal(&fleetMessage{Kind: kind, Session: session, Msg: msg})
	if err != nil || len(b) > maxFleetMessage {
		return
	}
	go func() {
		ctx, cancel := f.ctx()
		defer cancel()
		if err := f.store.Publish(ctx, to, b); err != nil {
			f.s.log.Warn("mcp: session bus publish", "err", err, "to", to)
		}
	}()
}

// ack answers a forwarded POST's wait (when it has one).
func (f *sessionFleet) ack(m *fleetMessage, ok bool) {
	if m.AckTo == "" || m.Nonce == "" || len(m.AckTo) > 64 || len(m.Nonce) > 64 {
		return
	}
	b, err := json.Marshal(&fleetMessage{Kind: fleetAck, Session: m.Session, Nonce: m.Nonce, OK: ok})
	if err != nil {
		return
	}
	go func() {
		ctx, cancel := f.ctx()
		defer cancel()
		_ = f.store.Publish(ctx, m.AckTo, b)
	}()
}

// ask publishes m to the instance named to and waits up to wait for its
// fleetAck: answered is false when none came (the instance is gone, or
// too slow), ok the instance's answer.
func (f *sessionFleet) ask(ctx context.Context, to string, m *fleetMessage, wait time.Duration) (ok, answered bool, err error) {
	m.AckTo, m.Nonce = f.name, newSessionID()
	b, err := json.Marshal(m)
	if err != nil {
		return false, false, err
	}
	if len(b) > maxFleetMessage {
		return false, false, errFleetTooLarge
	}
	acked := make(chan bool, 1)
	f.amu.Lock()
	if f.acks == nil {
		f.acks = make(map[string]chan bool)
	}
	f.acks[m.Nonce] = acked
	f.amu.Unlock()
	defer func() {
		f.amu.Lock()
		delete(f.acks, m.Nonce)
		f.amu.Unlock()
	}()
	pctx, cancel := f.ctx()
	err = f.store.Publish(pctx, to, b)
	cancel()
	if err != nil {
		return false, false, err
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case ok := <-acked:
		return ok, true, nil
	case <-t.C:
		return false, false, nil
	case <-ctx.Done():
		return false, false, ctx.Err()
	}
}

var errFleetTooLarge = errors.New("mcp: fleet message too large")

// receive handles one message of the bus.
func (f *sessionFleet) receive(b []byte) {
	if len(b) > maxFleetMessage {
		return
	}
	var m fleetMessage
	if json.Unmarshal(b, &m) != nil || m.Session == "" {
		return
	}
	switch m.Kind {
	case fleetAck:
		f.amu.Lock()
		ch := f.acks[m.Nonce]
		delete(f.acks, m.Nonce)
		f.amu.Unlock()
		if ch != nil {
			ch <- m.OK // buffered: never blocks
		}
		return
	case fleetPost, fleetClose:
		acked := false
		for _, sh := range f.s.legacy.liveSSEHandlers() {
			if sh.fromFleet(&m) {
				acked = true
			}
		}
		if m.Kind == fleetPost && !acked {
			f.ack(&m, false) // not held here (any more): the POST is 404
		}
	case fleetComplete:
		var id string
		if json.Unmarshal(m.Msg, &id) == nil && id != "" && len(id) <= maxElicitationID && f.s.completeElicitationHere(id) {
			f.ack(&m, true)
		}
		return
	case fleetRelease:
		released := false
		for _, lh := range f.s.legacy.liveHandlers() {
			if hs := lh.lookup(m.Session); hs != nil {
				released = true
				go func() { hs.release(); f.ack(&m, true) }()
			}
		}
		if !released {
			f.ack(&m, true) // nothing of the session here, nothing queued
		}
		return
	}
	for _, lh := range f.s.legacy.liveHandlers() {
		hs := lh.lookup(m.Session)
		if hs == nil {
			continue
		}
		switch m.Kind {
		case fleetReply:
			var msg jsonrpc.Message
			if json.Unmarshal(m.Msg, &msg) == nil && msg.IsResponse() {
				hs.deliver(msg)
			}
		case fleetClose:
			lh.closeSession(hs)
		case fleetChanged:
			if _, err := lh.reload(hs); errors.Is(err, ErrSessionNotFound) {
				// Changed, then gone: ended by a DELETE or an eviction
				// elsewhere, which that instance observes (its close
				// message may come after this one), not an expiry.
				lh.closeSession(hs)
			}
			f.ack(&m, true) // a subscription changed elsewhere waits for it (storeUpdate)
		case fleetCancel:
			hs.cancelled(m.Msg)
		case fleetNotify:
			if msg, e := jsonrpc.Decode(m.Msg); !hs.holder.Load() || e != nil || !msg.IsNotification() {
				continue // the holder moved on meanwhile: it is lost, as any best-effort message
			}
			if st := hs.standalone(); st != nil {
				_ = st.emit(m.Msg, false)
			}
		}
	}
}

// toHolder hands a notification related to no request of a session
// this instance does not hold to the instance that does.
func (f *sessionFleet) toHolder(hs *httpSession, msg []byte) {
	hs.fmu.Lock()
	to := hs.instance
	hs.fmu.Unlock()
	if to != "" && to != f.name {
		f.publish(to, fleetNotify, hs.id, msg)
	}
}

// completeElsewhere asks the fleet for the instance that asked the URL
// elicitation id, which notifies the session (CompleteElicitation).
func (f *sessionFleet) completeElsewhere(id string) bool {
	if id == "" || len(id) > maxElicitationID {
		return false
	}
	raw, err := json.Marshal(id)
	if err != nil {
		return false
	}
	ok, _, _ := f.ask(context.Background(), fleetBroadcast, &fleetMessage{Kind: fleetComplete, Session: "-", Msg: raw}, fleetAckWait)
	return ok
}

// requestID is the JSON-RPC id of the n-th server-to-client request of a
// session on this instance.
func (f *sessionFleet) requestID(n int64) int64 {
	if f == nil {
		return n
	}
	return int64(f.tag)<<32 | n&(1<<32-1)
}

// forwardReply sends a client's answer that no local question waits for
// to the instance whose tag its id carries.
func (f *sessionFleet) forwardReply(session string, msg jsonrpc.Message) {
	id, ok := msg.ID.Int()
	if !ok || id < 0 || uint64(id)>>32 == f.tag || uint64(id)>>32 >= 1<<fleetTagBits {
		return
	}
	raw, err := json.Marshal(msg)
	if err != nil {
		return
	}
	f.publish(fleetInstanceName(uint64(id)>>32), fleetReply, session, raw)
}

// ---- the Streamable HTTP side ----

// storeUnavailable answers a request the store could not serve: 503,
// retryable, never "session not found" (the session may well exist).
func storeUnavailable(w http.ResponseWriter, id jsonrpc.ID) {
	w.Header().Set("Retry-After", retryAfterBusy)
	writeHTTPError(w, http.StatusServiceUnavailable, id, ErrTemporarilyUnavailable)
}

// fleetSession returns the session id names for the caller of r on a
// server with a store: the local replica after one Touch (reloaded when
// its record changed), or a replica made from the store's record. It
// answers w itself (404 or 503) when it returns nil.
func (lh *legacyHTTP) fleetSession(w http.ResponseWriter, r *http.Request, id string, msgID jsonrpc.ID) *httpSession {
	f := lh.s.fleet
	principal, err := lh.principal(r)
	if err != nil {
		sessionNotFound(w, msgID)
		return nil
	}
	hs := lh.lookup(id)
	if hs != nil {
		if principal != hs.principal {
			lh.s.log.Warn("mcp: legacy session presented by another principal", "session", id)
			sessionNotFound(w, msgID)
			return nil
		}
		ctx, cancel := f.ctx()
		v, err := f.store.Touch(ctx, id)
		cancel()
		switch {
		case errors.Is(err, ErrSessionNotFound):
			lh.goneFromStore(hs)
			sessionNotFound(w, msgID)
			return nil
		case err != nil:
			lh.s.log.Warn("mcp: session store touch", "err", err, "session", id)
			storeUnavailable(w, msgID)
			return nil
		case v != hs.version.Load():
			if _, err := lh.reload(hs); err != nil {
				if errors.Is(err, ErrSessionNotFound) {
					lh.goneFromStore(hs)
					sessionNotFound(w, msgID)
				} else {
					storeUnavailable(w, msgID)
				}
				return nil
			}
		}
		return hs
	}
	ctx, cancel := f.ctx()
	rec, err := f.store.Load(ctx, id)
	if err == nil {
		_, err = f.store.Touch(ctx, id)
	}
	cancel()
	switch {
	case errors.Is(err, ErrSessionNotFound):
		sessionNotFound(w, msgID)
		return nil
	case err != nil:
		lh.s.log.Warn("mcp: session store load", "err", err, "session", id)
		storeUnavailable(w, msgID)
		return nil
	case rec.Principal != principal || rec.Transport != TransportHTTP:
		lh.s.log.Warn("mcp: legacy session presented by another principal", "session", id)
		sessionNotFound(w, msgID)
		return nil
	}
	p := &legacyInitParams{ProtocolVersion: rec.ProtocolVersion, Capabilities: rec.ClientCapabilities, ClientInfo: rec.ClientInfo}
	hs = lh.newHTTPSession(id, p, sessionOrigin{ctx: r.Context(), transport: TransportHTTP, req: r}, principal)
	hs.apply(rec)
	switch lh.register(hs, lh.quotaKey(r, principal), false) {
	case registered:
	case raced:
		hs.legacySession.close()
		if hs = lh.lookup(id); hs == nil || hs.principal != principal {
			sessionNotFound(w, msgID)
			return nil
		}
		return hs
	default:
		hs.legacySession.close()
		w.Header().Set("Retry-After", retryAfterBusy)
		writeHTTPError(w, http.StatusServiceUnavailable, msgID, jsonrpcError(-32000, "Too many sessions: try again later"))
		return nil
	}
	hs.startTimer()
	return hs
}

// observeFleet tells the observer of the opening or end of a session of
// the fleet, once for the fleet: opened where Create succeeded, closed
// where Delete removed it, where Create evicted it, or, for an idle
// expiry (the store's, which tells nobody), on the instance holding the
// session when it finds the record gone. Duration is the session's age
// as this instance knows it (its replica's).
func (hs *httpSession) observeFleet(kind EventKind) {
	ev := Event{Kind: kind, Revision: hs.rev.version, SessionID: hs.id}
	if kind == EventSessionClosed {
		ev.Duration = time.Since(hs.opened)
	}
	hs.lh.s.observe(ev)
}

// fleetExpired decides, when the replica hs has been idle for
// IdleTimeout, whether it goes: a non-holder's replica always goes (the
// session lives on in the store); the holder's goes only once the record
// is gone (the store expired it), and then the holder observes the end
// of the session. The holder keeps its replica while the record lives:
// it writes the session's notifications related to no request.
func (lh *legacyHTTP) fleetExpired(hs *httpSession) bool {
	if !hs.holder.Load() {
		return true
	}
	ctx, cancel := lh.s.fleet.ctx()
	_, err := lh.s.fleet.store.Load(ctx, hs.id)
	cancel()
	switch {
	case errors.Is(err, ErrSessionNotFound):
		hs.observeFleet(EventSessionClosed)
		return true
	case err != nil:
		return false // the store cannot tell now: ask again later
	}
	return false
}

// goneFromStore ends the replica of a session whose record the store
// no longer has; the holder observes the session's end (an expiry: a
// DELETE or an eviction is observed where it happened, and their close
// message ends the replicas without a word).
func (lh *legacyHTTP) goneFromStore(hs *httpSession) {
	if hs.holder.Load() && hs.ctx.Err() == nil {
		hs.observeFleet(EventSessionClosed)
	}
	lh.closeSession(hs)
}

// reload reads the session's record again and applies it.
func (lh *legacyHTTP) reload(hs *httpSession) (*SessionRecord, error) {
	ctx, cancel := lh.s.fleet.ctx()
	defer cancel()
	rec, err := lh.s.fleet.store.Load(ctx, hs.id)
	if err != nil {
		return nil, err
	}
	hs.apply(rec)
	return rec, nil
}

// apply makes the replica say what rec says.
func (hs *httpSession) apply(rec *SessionRecord) {
	ls := hs.legacySession
	ls.mu.Lock()
	if ls.closed {
		ls.mu.Unlock()
		return
	}
	if rec.LogLevel != "" {
		ls.level = rec.LogLevel
	}
	if rec.Initialized {
		ls.initialized = true
	}
	ls.subs = make(map[string]struct{}, len(rec.Subscriptions))
	for _, u := range rec.Subscriptions {
		ls.subs[u] = struct{}{}
	}
	ls.mu.Unlock()
	uris := slices.Clone(rec.Subscriptions)
	slices.Sort(uris)
	hs.fmu.Lock()
	hs.instance = rec.Instance
	hs.fmu.Unlock()
	hs.setHolder(rec.Instance == hs.lh.s.fleet.name, uris)
	hs.version.Store(rec.Version)
}

// setHolder says whether this instance writes the session's
// notifications related to no request. Only the holder's hub listener
// is told of changes: a replica elsewhere has an empty filter, so that
// nothing accumulates in it (its GET stream, the only reader, is on the
// holder); uris are the session's subscriptions.
func (hs *httpSession) setHolder(holder bool, uris []string) {
	ls := hs.legacySession
	hs.holder.Store(holder)
	ls.s.hub.mu.Lock()
	if holder {
		ls.listener.filter = SubscriptionFilter{ToolsListChanged: true, PromptsListChanged: true, ResourcesListChanged: true, ResourceSubscriptions: uris}
	} else {
		ls.listener.filter = SubscriptionFilter{}
	}
	ls.s.hub.mu.Unlock()
	if !holder {
		ls.listener.take() // what came before was the holder's to write
	}
}

// storeUpdate is the legacySession's update hook on a server with a
// store: the change goes to the record, the replica takes the record as
// returned, and the instance holding the session's GET stream is told.
func (hs *httpSession) storeUpdate(u SessionUpdate) (*SessionRecord, error) {
	f := hs.lh.s.fleet
	hs.fmu.Lock()
	prev := hs.instance
	hs.fmu.Unlock()
	ctx, cancel := f.ctx()
	rec, err := f.store.Update(ctx, hs.id, u)
	cancel()
	if err != nil {
		return nil, err
	}
	hs.apply(rec)
	if rec.Instance != "" && rec.Instance != f.name {
		if u.Subscribe != "" || u.Unsubscribe != "" {
			// The holder writes the resource updates: the subscription
			// is answered once it has read it (bounded: a holder that is
			// gone does not hold the answer up), so that an update sent
			// right after the answer reaches the client.
			_, _, _ = f.ask(context.Background(), rec.Instance, &fleetMessage{Kind: fleetChanged, Session: hs.id}, fleetAckWait)
		} else {
			f.publish(rec.Instance, fleetChanged, hs.id, nil)
		}
	}
	if prev != "" && prev != rec.Instance && prev != f.name {
		// The former holder stops writing the session's notifications.
		f.publish(prev, fleetChanged, hs.id, nil)
	}
	return rec, nil
}

// createInStore records a new session with the fleet's bounds; the
// sessions it evicted end wherever they are held.
func (lh *legacyHTTP) createInStore(hs *httpSession, party string) error {
	f := lh.s.fleet
	rec := &SessionRecord{
		ID: hs.id, ProtocolVersion: hs.rev.version, ClientInfo: hs.client, ClientCapabilities: hs.caps,
		Principal: hs.principal, Party: party, Transport: TransportHTTP, IdleTimeout: lh.opts.IdleTimeout,
		// Until a GET stream opens somewhere, the notifications related
		// to no request are written here (into the log, for a later GET).
		Instance: f.name,
	}
	ctx, cancel := f.ctx()
	evicted, err := f.store.Create(ctx, rec, lh.opts.MaxSessionsPerPrincipal, lh.opts.MaxSessions)
	cancel()
	for _, id := range evicted {
		lh.s.log.Info("mcp: legacy session evicted to make room", "session", id)
		// Once in the fleet: here, where Create evicted it.
		lh.s.observe(Event{Kind: EventSessionClosed, SessionID: id})
		lh.endEverywhere(id)
	}
	if err != nil {
		return err
	}
	hs.version.Store(rec.Version)
	hs.instance = f.name
	hs.holder.Store(true)
	return nil
}

// endEverywhere ends the session id on this instance and tells the others.
func (lh *legacyHTTP) endEverywhere(id string) {
	if hs := lh.lookup(id); hs != nil {
		lh.closeSession(hs)
	}
	lh.s.fleet.publish(fleetBroadcast, fleetClose, id, nil)
}

// ---- the streams' events in the store's log ----

// maxOutbox bounds the events of a session waiting for the store; past
// it the oldest are dropped (a client resuming elsewhere then gets 404
// for the gap rather than a stream with a hole in it: the store's log
// never had them, and the store reports the stream unknown or the
// events missing).
const maxOutbox = 4096

// replicate queues an event of the session's streams for the store's
// log. The response's bytes do not wait for it: one goroutine per
// session appends, in order, whatever is queued.
func (hs *httpSession) replicate(ev SessionEvent) {
	hs.fmu.Lock()
	defer hs.fmu.Unlock()
	if len(hs.outbox) >= maxOutbox {
		hs.lh.s.log.Warn("mcp: session store behind: event dropped from its log", "session", hs.id)
		hs.outbox = hs.outbox[1:]
	}
	hs.outbox = append(hs.outbox, ev)
	if !hs.flushing {
		hs.flushing = true
		go hs.flush()
	}
}

func (hs *httpSession) flush() {
	f := hs.lh.s.fleet
	for {
		hs.fmu.Lock()
		batch := hs.outbox
		hs.outbox = nil
		if len(batch) == 0 {
			hs.flushing = false
			hs.fmu.Unlock()
			return
		}
		hs.fmu.Unlock()
		for _, ev := range batch {
			ctx, cancel := f.ctx()
			err := f.store.AppendEvent(ctx, hs.id, ev)
			cancel()
			if err != nil && !errors.Is(err, ErrSessionNotFound) {
				f.s.log.Warn("mcp: session store append", "err", err, "session", hs.id)
			}
		}
	}
}

// keepUnread puts the notifications related to no request that the
// session's holder is told of while no GET stream of the session is open
// into the GET stream's log at once (the store's too), so that a client
// opening or resuming its GET stream on any instance finds them; an open
// GET stream drains them itself. It runs off the hub's lock (a goroutine,
// one at a time per session).
func (hs *httpSession) keepUnread() {
	if !hs.holder.Load() || !hs.keeping.CompareAndSwap(false, true) {
		return
	}
	go func() {
		for {
			st := hs.standalone()
			if st == nil {
				hs.keeping.Store(false)
				return
			}
			st.mu.Lock()
			open := st.conn != nil
			st.mu.Unlock()
			hs.fmu.Lock()
			open = open || hs.handing // a GET stream being taken over writes them once attached
			hs.fmu.Unlock()
			if !open && hs.holder.Load() {
				hs.listener.sendPending(func(b []byte) { _ = st.emit(b, false) })
			}
			hs.keeping.Store(false)
			hs.listener.mu.Lock()
			more := len(hs.listener.pending) > 0
			hs.listener.mu.Unlock()
			if open || !more || !hs.keeping.CompareAndSwap(false, true) {
				return
			}
		}
	}()
}

// resumesElsewhere reports whether a Last-Event-ID names a stream whose
// events this instance does not hold: another instance's response
// stream, or the GET stream while another instance holds it.
func (f *sessionFleet) resumesElsewhere(hs *httpSession, id sse.EventID) bool {
	if f == nil {
		return false
	}
	if id.Stream == 0 {
		return !hs.holder.Load()
	}
	return id.Stream>>32 != f.tag
}

// resumeFromStore answers a GET with Last-Event-ID from the store's log:
// the events after it, then, for a response stream, the rest of it as
// the store receives it until its end; the GET stream is taken over
// (this instance becomes its holder) and goes on live from here.
func (lh *legacyHTTP) resumeFromStore(w http.ResponseWriter, hs *httpSession, id sse.EventID, last string, done <-chan struct{}) {
	f := lh.s.fleet
	if id.Stream == 0 {
		lh.takeOverGET(w, hs, id, last, done)
		return
	}
	ctx, cancel := f.ctx()
	evs, kept, err := f.store.EventsAfter(ctx, hs.id, id.Stream, id.Seq, 0)
	cancel()
	switch {
	case errors.Is(err, ErrSessionNotFound):
		sessionNotFound(w, jsonrpc.ID{})
		return
	case err != nil:
		storeUnavailable(w, jsonrpc.ID{})
		return
	case !kept && (id.Stream != 0 || id.Seq != 0):
		unknownEventID(w, last, "Unknown or expired Last-Event-ID ")
		return
	}
	st := &legacyStream{lh: lh, hs: hs, num: id.Stream, streaming: true, ctx: hs.ctx}
	st.mu.Lock()
	c := st.attachLocked(w)
	if c == nil {
		st.mu.Unlock()
		lh.replicaEnded(w, jsonrpc.ID{})
		return
	}
	c.queueLocked(outFrame{kind: frameStart})
	seq, end := queueStored(c, evs, id.Seq)
	if end {
		c.endLocked()
	}
	st.mu.Unlock()
	if !end {
		fctx, stop := context.WithCancel(hs.ctx)
		defer stop()
		go lh.follow(fctx, st, c, seq)
	}
	st.hold(c, done, lh.opts.StreamLifetime)
}

// queueStored queues the store's events after seq on c (under its
// stream's mu); it returns the last sequence number and whether the
// stream's end was among them.
func queueStored(c *sseConn, evs []SessionEvent, seq uint64) (uint64, bool) {
	for _, ev := range evs {
		if ev.Seq <= seq {
			continue
		}
		seq = ev.Seq
		if len(ev.Data) > 0 {
			c.queueLocked(outFrame{kind: frameEvent, id: sse.EventID{Stream: ev.Stream, Seq: ev.Seq}, msg: ev.Data})
		}
		if ev.End {
			return seq, true
		}
	}
	return seq, false
}

// follow queues on c the events of st's stream the store receives after
// seq, until the stream's end, a gap, or ctx's end.
func (lh *legacyHTTP) follow(ctx context.Context, st *legacyStream, c *sseConn, seq uint64) {
	f := lh.s.fleet
	for ctx.Err() == nil {
		evs, kept, err := f.store.EventsAfter(ctx, st.hs.id, st.num, seq, 10*time.Second)
		if ctx.Err() != nil {
			return
		}
		st.mu.Lock()
		if c.gone || c.closed {
			st.mu.Unlock()
			return
		}
		if err != nil || !kept && len(evs) == 0 && seq > 0 {
			// The rest cannot be told without a gap: the client resumes
			// again from the last id it has.
			c.endLocked()
			st.mu.Unlock()
			return
		}
		var end bool
		seq, end = queueStored(c, evs, seq)
		if end {
			c.endLocked()
		}
		st.mu.Unlock()
		if end {
			return
		}
	}
}

// takeOverGET makes this instance the holder of the session's GET
// stream, resumed after id (Last-Event-ID last). The record names this
// instance first, so that the former holder stops writing the session's
// notifications; then the former holder is told to release the stream
// and flush the events it queued for the store's log, and its
// acknowledgement is awaited (fleetAckWait: a holder that is gone does
// not hold the resume up longer); only then are the events the client
// missed read from the store, so that none of the former holder's last
// events is missing. Notifications related to no request meanwhile wait
// in this replica's listener, written once the stream is attached.
func (lh *legacyHTTP) takeOverGET(w http.ResponseWriter, hs *httpSession, id sse.EventID, last string, done <-chan struct{}) {
	f := lh.s.fleet
	st := hs.standalone()
	if st == nil {
		lh.replicaEnded(w, jsonrpc.ID{})
		return
	}
	hs.fmu.Lock()
	prev := hs.instance
	hs.handing = true
	hs.fmu.Unlock()
	handed := sync.OnceFunc(func() { hs.endHandover(st) })
	defer handed()
	if _, err := hs.storeUpdate(SessionUpdate{SetInstance: true, Instance: f.name}); err != nil {
		if errors.Is(err, ErrSessionNotFound) {
			sessionNotFound(w, jsonrpc.ID{})
		} else {
			storeUnavailable(w, jsonrpc.ID{})
		}
		return
	}
	if prev != "" && prev != f.name {
		// The reply's only use is the wait: released or gone, go on.
		_, answered, _ := f.ask(context.Background(), prev, &fleetMessage{Kind: fleetRelease, Session: hs.id}, fleetAckWait)
		if !answered {
			lh.s.log.Info("mcp: the GET stream's former holder did not answer: resuming without its last events", "session", hs.id, "instance", prev)
		}
	}
	ctx, cancel := f.ctx()
	evs, kept, err := f.store.EventsAfter(ctx, hs.id, 0, id.Seq, 0)
	cancel()
	switch {
	case errors.Is(err, ErrSessionNotFound):
		sessionNotFound(w, jsonrpc.ID{})
		return
	case err != nil:
		storeUnavailable(w, jsonrpc.ID{})
		return
	case !kept && id.Seq != 0:
		unknownEventID(w, last, "Unknown or expired Last-Event-ID ")
		return
	}
	st.mu.Lock()
	if st.conn != nil {
		st.mu.Unlock()
		writeHTTPError(w, http.StatusConflict, jsonrpc.ID{}, jsonrpcError(CodeInvalidRequest, "Conflict: the session's GET stream is already open"))
		return
	}
	c := st.attachLocked(w)
	if c == nil {
		st.mu.Unlock()
		lh.replicaEnded(w, jsonrpc.ID{})
		return
	}
	hs.openLog(0)
	c.queueLocked(outFrame{kind: frameStart})
	// The numbering goes on from what the client has, even when nothing
	// is left to replay (a stream the former holder ended on drain).
	st.seq = max(st.seq, id.Seq)
	for _, ev := range evs {
		if len(ev.Data) == 0 || ev.Seq <= id.Seq {
			continue
		}
		eid := sse.EventID{Seq: ev.Seq}
		hs.keep(eid, ev.Data)
		c.queueLocked(outFrame{kind: frameEvent, id: eid, msg: ev.Data})
		st.seq = max(st.seq, ev.Seq) // what is written from here follows on
	}
	st.mu.Unlock()
	handed()
	st.hold(c, done, lh.opts.StreamLifetime)
}

// maxHandover bounds the notifications kept during a hand-over.
const maxHandover = 64

// deferHandover keeps a notification raised while the GET stream is
// being taken over here; false when none is.
func (hs *httpSession) deferHandover(msg []byte) bool {
	hs.fmu.Lock()
	defer hs.fmu.Unlock()
	if !hs.handing {
		return false
	}
	if len(hs.handover) < maxHandover {
		hs.handover = append(hs.handover, msg)
	}
	return true
}

// endHandover ends a hand-over: what was raised meanwhile is written on
// st, numbered after the replayed events.
func (hs *httpSession) endHandover(st *legacyStream) {
	hs.fmu.Lock()
	msgs := hs.handover
	hs.handing, hs.handover = false, nil
	hs.fmu.Unlock()
	for _, m := range msgs {
		if hs.holder.Load() {
			_ = st.emit(m, false)
		} else {
			hs.lh.s.fleet.toHolder(hs, m)
		}
	}
}

// releaseFlushWait bounds how long a former holder waits for its queued
// events to reach the store before acknowledging a release (within the
// new holder's fleetAckWait).
const releaseFlushWait = 800 * time.Millisecond

// release gives the session's GET stream up (another instance took it
// over): this instance writes the session's notifications no more, ends
// a GET exchange still attached here, and returns once the events queued
// for the store's log are appended, or after releaseFlushWait.
func (hs *httpSession) release() {
	hs.setHolder(false, nil)
	hs.smu.Lock()
	st := hs.get
	hs.smu.Unlock()
	if st != nil {
		st.mu.Lock()
		if st.conn != nil {
			st.conn.endLocked()
		}
		st.mu.Unlock()
	}
	for deadline := time.Now().Add(releaseFlushWait); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		hs.fmu.Lock()
		idle := len(hs.outbox) == 0 && !hs.flushing
		hs.fmu.Unlock()
		if idle {
			return
		}
	}
}

// lastGETEvent returns the last sequence number of the session's GET
// stream in the store's log when this instance is not its holder, so that
// the stream's events keep one numbering fleet-wide.
func (f *sessionFleet) lastGETEvent(hs *httpSession) uint64 {
	if hs.holder.Load() {
		return 0
	}
	ctx, cancel := f.ctx()
	evs, _, err := f.store.EventsAfter(ctx, hs.id, 0, 0, 0)
	cancel()
	if err != nil || len(evs) == 0 {
		return 0
	}
	return evs[len(evs)-1].Seq
}

// ---- HTTP+SSE (2024-11-05) ----

// sseRecordTTL is the idle timeout of an HTTP+SSE session's record: the
// instance holding the stream touches it a few times within it, so that
// the record of an instance that died goes within that time.
const sseRecordTTL = 30 * time.Second

// recordInStore records the HTTP+SSE session ss, whose stream this
// instance holds, and keeps it alive while the stream lasts; false when
// the store refused it (the fleet's bounds) or failed.
func (sh *sseHandler) recordInStore(ss *sseSession, party string) bool {
	f := sh.s.fleet
	rec := &SessionRecord{ID: ss.id, Principal: ss.principal, Party: party, Transport: TransportHTTPSSE, Instance: f.name, IdleTimeout: sseRecordTTL}
	ctx, cancel := f.ctx()
	evicted, err := f.store.Create(ctx, rec, sh.opts.Legacy.MaxSessionsPerPrincipal, sh.opts.Legacy.MaxSessions)
	cancel()
	for _, id := range evicted {
		sh.s.observe(Event{Kind: EventSessionClosed, SessionID: id}) // once in the fleet, as for Streamable HTTP
		f.publish(fleetBroadcast, fleetClose, id, nil)
	}
	if err != nil {
		sh.s.log.Warn("mcp: session store create", "err", err)
		return false
	}
	go func() {
		t := time.NewTicker(sseRecordTTL / 3)
		defer t.Stop()
		for {
			select {
			case <-ss.done:
				return
			case <-t.C:
				ctx, cancel := f.ctx()
				_, err := f.store.Touch(ctx, ss.id)
				cancel()
				if errors.Is(err, ErrSessionNotFound) {
					ss.end(true) // evicted elsewhere
					return
				}
			}
		}
	}()
	return true
}

// forgetInStore removes the record of an HTTP+SSE session whose stream
// ended: POSTs naming it get 404 on every instance.
func (sh *sseHandler) forgetInStore(ss *sseSession) {
	f := sh.s.fleet
	ctx, cancel := f.ctx()
	defer cancel()
	if _, err := f.store.Delete(ctx, ss.id); err != nil {
		sh.s.log.Warn("mcp: session store delete", "err", err, "session", ss.id)
	}
}

// maxForwardedHeaders bounds the headers a forwarded POST carries.
const maxForwardedHeaders = 16

// forward hands a POST naming an HTTP+SSE session held by another
// instance to that instance, which runs it and answers on its stream. The
// POST waits (fleetAckWait) for the holder's acknowledgement and gets 202
// as it would there; a holder that does not answer is gone, and its
// stream with it: the session is ended in the store and the POST gets
// 404 (the client opens a new stream). The message carries the verified
// token of the POST (WithTokenInfo), so that the handler sees it on the
// holder as here. It reports whether it answered (false: the session is
// not found anywhere).
func (sh *sseHandler) forward(w http.ResponseWriter, r *http.Request, sid string) bool {
	f := sh.s.fleet
	principal, err := sh.principal(r)
	if err != nil {
		return false
	}
	ctx, cancel := f.ctx()
	rec, err := f.store.Load(ctx, sid)
	cancel()
	switch {
	case errors.Is(err, ErrSessionNotFound):
		return false
	case err != nil:
		storeUnavailable(w, jsonrpc.ID{})
		return true
	case rec.Transport != TransportHTTPSSE || rec.Principal != principal || rec.Instance == "" || rec.Instance == f.name:
		// Another principal, another kind of session, or a stream this
		// instance held and lost.
		return false
	}
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(strings.ToLower(strings.TrimSpace(ct)), "application/json") {
		writeHTTPError(w, http.StatusUnsupportedMediaType, jsonrpc.ID{}, jsonrpcError(CodeInvalidRequest, "Invalid request: Content-Type must be application/json"))
		return true
	}
	body, ok := sh.h.body(w, r)
	if !ok {
		return true
	}
	if msg, e := jsonrpc.Decode(body); e != nil {
		writeHTTPError(w, http.StatusBadRequest, msg.ID, e)
		return true
	}
	hdr := make(map[string]string)
	for k, vs := range r.Header {
		if len(hdr) < maxForwardedHeaders && len(vs) == 1 && (k == "Content-Type" || strings.HasPrefix(k, "Mcp-")) && len(vs[0]) <= 1024 {
			hdr[k] = vs[0]
		}
	}
	tok := tokenToFleet(TokenInfoFromContext(r.Context()))
	if tb, err := json.Marshal(tok); err != nil || len(tb) > maxFleetToken {
		writeHTTPError(w, http.StatusRequestEntityTooLarge, jsonrpc.ID{}, jsonrpcError(CodeInvalidRequest, "Invalid request: the caller's token is too large to forward"))
		return true
	}
	ok, answered, err := f.ask(r.Context(), rec.Instance, &fleetMessage{Kind: fleetPost, Session: sid, Msg: body, Header: hdr, Token: tok}, fleetAckWait)
	switch {
	case errors.Is(err, errFleetTooLarge):
		writeHTTPError(w, http.StatusRequestEntityTooLarge, jsonrpc.ID{}, jsonrpcError(CodeInvalidRequest, "Invalid request: the message is too large to forward"))
		return true
	case r.Context().Err() != nil:
		return true // the client went away: nothing to answer
	case err != nil:
		storeUnavailable(w, jsonrpc.ID{})
		return true
	case ok:
		w.WriteHeader(http.StatusAccepted)
		return true
	case answered:
		// The instance named is there but does not hold the stream
		// (it ended, and the record's Delete failed).
		sh.s.log.Info("mcp: HTTP+SSE session not held by the instance its record names", "session", sid, "instance", rec.Instance)
	default:
		sh.s.log.Warn("mcp: HTTP+SSE session's holder did not answer: its stream is gone", "session", sid, "instance", rec.Instance)
	}
	// The stream is gone with its holder: the session ends everywhere
	// (a holder that was only slow ends its stream on the close).
	ctx, cancel = f.ctx()
	_, _ = f.store.Delete(ctx, sid)
	cancel()
	f.publish(fleetBroadcast, fleetClose, sid, nil)
	return false
}

// fromFleet handles what the bus brings an HTTP+SSE handler: a message
// POSTed to one of its sessions on another instance (acknowledged, then
// run as if POSTed here with the POST's verified token in its context;
// the answers go on the stream), or the end of a session evicted
// elsewhere. It reports whether it acknowledged a post. A post whose
// token does not name the session's principal is not run: the bus never
// gives more than a POST here would have.
func (sh *sseHandler) fromFleet(m *fleetMessage) bool {
	sh.mu.Lock()
	ss := sh.sessions[m.Session]
	sh.mu.Unlock()
	if ss == nil {
		return false
	}
	if m.Kind == fleetClose {
		if ls := ss.ls.Load(); ls != nil {
			ls.mu.Lock()
			ls.quiet = true // the instance that evicted it observed its end
			ls.mu.Unlock()
		}
		sh.remove(ss)
		ss.end(true)
		return false
	}
	ctx := context.Background()
	if m.Token != nil {
		if len(m.Token.Scopes) > 256 {
			return false
		}
		ctx = WithTokenInfo(ctx, m.Token.info())
	}
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, "/", bytes.NewReader(m.Msg))
	if err != nil {
		return false
	}
	for k, v := range m.Header {
		if len(r.Header) < maxForwardedHeaders {
			r.Header.Set(k, v)
		}
	}
	if p, err := sh.principal(r); err != nil || p != ss.principal {
		sh.s.log.Warn("mcp: forwarded HTTP+SSE message of another principal ignored", "session", ss.id)
		return false
	}
	sh.s.fleet.ack(m, true)
	sh.postTo(discardResponse{h: make(http.Header)}, r, ss)
	return true
}

// discardResponse is the ResponseWriter of a forwarded POST: its client
// was answered by the instance that forwarded it.
type discardResponse struct{ h http.Header }

func (d discardResponse) Header() http.Header         { return d.h }
func (d discardResponse) Write(b []byte) (int, error) { return len(b), nil }
func (d discardResponse) WriteHeader(int)             {}
