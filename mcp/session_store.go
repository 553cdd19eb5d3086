package mcp

import (
	"context"
	"errors"
	"time"
)

// The 2025-era sessions of a fleet. A session of 2025-11-25, 2025-06-18,
// 2025-03-26 or 2024-11-05 (Streamable HTTP or HTTP+SSE) is state that
// outlives its requests: the negotiated revision, what the client said of
// itself, its log level and resource subscriptions, the principal it is
// bound to. With ServerOptions.SessionStore set, that record lives in the
// store, so that any instance of a fleet serves any request of any
// session, and a session outlives the instance that opened it. What is
// bound to one connection (a GET stream, the stream of an HTTP+SSE
// session, a handler waiting for the client's answer to a live question)
// stays on the instance holding it; the store's bus carries to that
// instance what another one received for it, and its event log lets a
// stream resume with Last-Event-ID anywhere.
//
// An instance keeps what it read of a session and asks the store, once
// per request (SessionStore.Touch, one round trip), whether the session
// still exists and whether its record changed since.
//
// Without a store a Server keeps its sessions in its own memory, as it
// always did. NewMemorySessionStore shares one store between the Servers
// of one process (tests, or several handlers of one binary);
// the redis module's redissessions package is the store of a fleet.

// SessionStore keeps the 2025-era sessions of a fleet: their records,
// the events of their streams, and a bus between the instances. One
// implementation serves every instance; each instance names itself with
// the instance name it receives on (Receive). Every method is safe for
// concurrent use and bounded in time by ctx.
type SessionStore interface {
	// Create records a new session. It holds the fleet's bounds: at
	// the party's bound (maxPerParty, at least 1) it removes that
	// party's least recently used sessions to make room and returns
	// their ids (the caller ends them where they are held); at the
	// fleet's bound (maxSessions; zero means none) with nothing of the
	// party's to remove it fails with ErrTemporarilyUnavailable. It sets
	// the record's Version.
	Create(ctx context.Context, rec *SessionRecord, maxPerParty, maxSessions int) (evicted []string, err error)
	// Touch marks the session used now (its idle timeout starts again)
	// and returns its record's Version: the hot path, one round trip.
	// An ended, expired or unknown session is ErrSessionNotFound.
	Touch(ctx context.Context, id string) (version uint64, err error)
	// Load returns the session's record, or ErrSessionNotFound.
	Load(ctx context.Context, id string) (*SessionRecord, error)
	// Update changes the session's record and returns it as changed, or
	// fails with ErrSessionNotFound. A Subscribe past MaxSubscriptions
	// is left out (the URI is not in the record returned).
	Update(ctx context.Context, id string, u SessionUpdate) (*SessionRecord, error)
	// Delete removes the session, its events and its party's count of
	// it; it reports whether the session existed.
	Delete(ctx context.Context, id string) (bool, error)

	// AppendEvent adds an event of one of the session's SSE streams to
	// its log, which the store bounds in length and keeps no longer
	// than the session's idle timeout. An event of Seq 0 opens its
	// stream (its priming event): never returned, it makes the stream
	// known, so that a client resuming from the priming id waits for
	// what comes.
	AppendEvent(ctx context.Context, id string, ev SessionEvent) error
	// EventsAfter returns the events of stream after seq, oldest
	// first; when there are none yet it waits up to wait for the first
	// one (an unknown stream too: its first event may be on its way).
	// kept is false when events after seq were dropped (the stream
	// cannot be resumed without a gap) or the stream is still unknown
	// after the wait; a session that does not exist is
	// ErrSessionNotFound.
	EventsAfter(ctx context.Context, id string, stream, seq uint64, wait time.Duration) (evs []SessionEvent, kept bool, err error)

	// Publish sends msg to the instance named to (best effort: an
	// instance that is gone or reconnecting loses it).
	Publish(ctx context.Context, to string, msg []byte) error
	// Receive delivers what is published to instance until ctx ends;
	// it returns once it receives, having called ready (nil allowed)
	// when messages published after that call are sure to arrive.
	// Several receivers of one name each get every message published
	// to it: every instance also receives on the fleet's broadcast
	// name, "mcp-fleet".
	Receive(ctx context.Context, instance string, ready func(), deliver func(msg []byte)) error
}

// SessionRecord is what a SessionStore keeps of one session.
type SessionRecord struct {
	ID string `json:"id"`
	// ProtocolVersion is the revision initialize negotiated.
	ProtocolVersion    string             `json:"protocolVersion"`
	ClientInfo         Implementation     `json:"clientInfo"`
	ClientCapabilities ClientCapabilities `json:"capabilities"`
	// Principal is who opened the session: another caller presenting
	// its id is told the session does not exist.
	Principal string `json:"principal,omitempty"`
	// Party is the key the session counts against (sessions per party).
	Party string `json:"party"`
	// Transport is TransportHTTP or TransportHTTPSSE.
	Transport TransportKind `json:"transport"`
	// Instance is the instance holding what the session's notifications
	// are written to: its GET stream (Streamable HTTP), its stream
	// (HTTP+SSE). Empty while nothing holds one.
	Instance    string       `json:"instance,omitempty"`
	LogLevel    LoggingLevel `json:"logLevel,omitempty"`
	Initialized bool         `json:"initialized,omitempty"`
	// Subscriptions are the resource URIs subscribed to, sorted.
	Subscriptions []string `json:"subscriptions,omitempty"`
	// IdleTimeout ends the session when no Touch came for this long.
	IdleTimeout time.Duration `json:"idleTimeout"`
	// Version grows with every change of the record (Create, Update).
	Version uint64 `json:"version"`
}

// SessionUpdate is a change of a SessionRecord; the zero value changes
// nothing. Several fields may be set at once.
type SessionUpdate struct {
	LogLevel         LoggingLevel // set when not empty
	Initialized      bool         // set when true
	Subscribe        string       // a URI to add
	Unsubscribe      string       // a URI to remove
	MaxSubscriptions int          // bounds Subscribe; zero means no bound
	// SetInstance sets Instance to Instance (empty clears it).
	SetInstance bool
	Instance    string
}

// SessionEvent is one event of a session's SSE stream: Data is the
// event's JSON-RPC message, Seq its place in the stream (from 1). End
// marks the stream's last event (a response stream's result).
type SessionEvent struct {
	Stream uint64 `json:"stream"`
	Seq    uint64 `json:"seq"`
	Data   []byte `json:"data,omitempty"`
	End    bool   `json:"end,omitempty"`
}

// ErrSessionNotFound is a SessionStore's answer for a session that
// ended, expired or never existed.
var ErrSessionNotFound = errors.New("mcp: session not found")
