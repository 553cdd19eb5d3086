package mcp

import (
	"context"
	"encoding/json"
	"slices"
	"sync"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
)

// subscriptions/listen: a long-lived request whose response stream
// carries list-changed and resource-updated notifications. The hub fans
// a change out to every open stream whose filter wants it. Delivery is
// best effort and coalescing: a stream that falls behind drops
// notifications it already has pending, which loses nothing because
// list-changed and updated notifications only say "look again".

type changeKind uint8

const (
	changeTools changeKind = iota + 1
	changePrompts
	changeResources
	changeResource
	changeExtension // an extension's notification (NotifyListeners)
)

type change struct {
	kind changeKind
	uri  string
	// feature and names say what changed (the keys added or removed, the
	// URI updated), for listeners that see only part of the server
	// (ServerOptions.Visible); names is empty for a change of another
	// instance, which says only its kind.
	feature FeatureKind
	names   []string
	// ext is the extension of a changeExtension; note its notification.
	ext  string
	note *extensionNote
}

type listener struct {
	filter SubscriptionFilter
	// ready has a token when pending holds changes (take them with
	// take). A listener keeps only what it was not yet told, not a
	// buffer: an idle one costs a channel and a mutex.
	ready   chan struct{}
	mu      sync.Mutex
	pending []change
	// ctx is the context of the request that opened a listen stream, or
	// a legacy session (its initialize, see newLegacySession), which
	// decides what it may see (ServerOptions.Visible); nil without
	// Visible, told of every change.
	ctx context.Context
	// exts are the extensions the listen request declared
	// (NotifyListeners); nil for a session's.
	exts map[string]json.RawMessage
	// kick, when set (under the hub's lock), is called after each
	// offer; it must not block (a fleet's session holder uses it to
	// keep notifications that no open stream drains).
	kick func()
}

type hub struct {
	mu        sync.Mutex
	listeners map[*listener]struct{}
	closed    chan struct{}
	closeOnce sync.Once
}

func (h *hub) init() {
	h.listeners = make(map[*listener]struct{})
	h.closed = make(chan struct{})
}

func (h *hub) add(f SubscriptionFilter) *listener {
	return h.addListener(&listener{filter: f})
}

func (h *hub) addListener(l *listener) *listener {
	l.ready = make(chan struct{}, 1)
	h.mu.Lock()
	h.listeners[l] = struct{}{}
	h.mu.Unlock()
	return l
}

func (h *hub) remove(l *listener) {
	h.mu.Lock()
	delete(h.listeners, l)
	h.mu.Unlock()
}

func (l *listener) wants(c change) bool {
	if c.kind == changeExtension {
		_, ok := l.exts[c.ext]
		return ok
	}
	return l.filter.wants(c)
}

func (f *SubscriptionFilter) wants(c change) bool {
	switch c.kind {
	case changeTools:
		return f.ToolsListChanged
	case changePrompts:
		return f.PromptsListChanged
	case changeResources:
		return f.ResourcesListChanged
	case changeResource:
		return slices.Contains(f.ResourceSubscriptions, c.uri)
	}
	return false
}

// publish hands c to every listener that wants it. A listener that sees
// only part of the server (ctx set) is asked visible first, after the
// hub's lock is released, since visible runs user code (nil: no
// filtering; a change that names nothing is not filtered).
func (h *hub) publish(c change, visible func(ctx context.Context, c change) bool) {
	var filtered []*listener
	h.mu.Lock()
	for l := range h.listeners {
		if !l.wants(c) {
			continue
		}
		if l.ctx != nil && visible != nil && len(c.names) > 0 {
			filtered = append(filtered, l)
			continue
		}
		l.offer(c)
	}
	h.mu.Unlock()
	for _, l := range filtered {
		if visible(l.ctx, c) {
			l.offer(c) // a listener removed meanwhile just never reads it
		}
	}
}

// maxPendingChanges bounds what a listener that does not keep up holds.
const maxPendingChanges = 32

// offer adds c to what the listener is to be told, unless the same
// change is already pending (it would say nothing new) or it holds
// maxPendingChanges already.
func (l *listener) offer(c change) {
	l.mu.Lock()
	if len(l.pending) >= maxPendingChanges || slices.ContainsFunc(l.pending, c.same) {
		l.mu.Unlock()
		return
	}
	l.pending = append(l.pending, c)
	l.mu.Unlock()
	select {
	case l.ready <- struct{}{}:
	default:
	}
	if l.kick != nil {
		l.kick()
	}
}

// take returns the pending changes, oldest first, and forgets them.
func (l *listener) take() []change {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.pending
	l.pending = nil
	return p
}

// same reports whether c and d tell a listener the same thing.
func (c change) same(d change) bool {
	return c.kind == d.kind && c.uri == d.uri && c.ext == d.ext && c.note == d.note &&
		c.feature == d.feature && slices.Equal(c.names, d.names)
}

func (h *hub) close() { h.closeOnce.Do(func() { close(h.closed) }) }

// Close ends every open subscriptions/listen stream gracefully (each gets
// its listen result) and every 2025-11-25 session of its HTTP handlers
// (their requests are cancelled, their streams end, their ids get 404), so
// that http.Server.Shutdown is not held up by long-lived streams, runs
// the extensions' OnClose hooks (mcp/tasks cancels its running tasks
// there), and stops exchanging changes with
// the fleet (ServerOptions.Fanout). No client can hold the shutdown up
// either: from now on a request body still arriving and every SSE write
// get 500 ms at most (one that does not read, or sends half a body, is
// cut off), so Shutdown finishes shortly after the last handler returns.
// The server keeps serving other requests, within those bounds; a legacy
// client may initialize again.
func (s *Server) Close() error {
	s.exch.Shutdown()
	s.hub.close()
	s.legacy.closeAll()
	if s.fanout != nil {
		s.fanout.stop()
	}
	if s.fleet != nil {
		s.fleet.close() // stops receiving on the session bus
	}
	s.runOnClose() // extensions' background work (Server.OnClose)
	return nil
}

// listenResult is the result that closes a listen stream.
type listenResult struct {
	Meta struct {
		ServerInfo     *Implementation `json:"io.modelcontextprotocol/serverInfo,omitempty"`
		SubscriptionID json.RawMessage `json:"io.modelcontextprotocol/subscriptionId"`
	} `json:"_meta"`
}

type subscriptionMeta struct {
	SubscriptionID json.RawMessage `json:"io.modelcontextprotocol/subscriptionId"`
}

type ackParams struct {
	Notifications SubscriptionFilter `json:"notifications"`
	Meta          subscriptionMeta   `json:"_meta"`
}

type listChangedParams struct {
	Meta subscriptionMeta `json:"_meta"`
}

type resourceUpdatedParams struct {
	URI  string           `json:"uri"`
	Meta subscriptionMeta `json:"_meta"`
}

func (s *Server) listen(ctx context.Context, p *ListenRequest) (Result, error) {
	sc := scopeFrom(ctx)
	if sc == nil || sc.out == nil {
		return nil, jsonrpc.NewError(CodeInternalError, "subscriptions/listen needs a streaming transport")
	}
	l, err := s.openListen(ctx, sc, p)
	if err != nil {
		return nil, err
	}
	defer s.closeListen(l)
	// The wait is kept on a small frame: a held stream's goroutine waits
	// here for its whole life, and the stack it keeps is what the frames
	// below this one need (openListen and tell do the work).
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-s.hub.closed:
			return s.listenEnd(sc), nil
		case <-l.ready:
			if err := s.tell(sc, l); err != nil {
				return nil, err
			}
		}
	}
}

// openListen registers the listen stream's listener and acknowledges
// the subscription.
func (s *Server) openListen(ctx context.Context, sc *requestScope, p *ListenRequest) (*listener, error) {
	// Honour only what this server can deliver: every filter member is
	// supported, so the honoured subset is the request itself.
	honoured := p.Notifications
	l := &listener{filter: honoured, exts: p.Meta.ClientCapabilities.Extensions}
	if s.opts.Visible != nil {
		l.ctx = ctx // what the stream may be told of (visible.go)
	}
	s.hub.addListener(l)
	s.observe(Event{Kind: EventStreamOpened, Stream: "listen"})
	meta := subscriptionMeta{SubscriptionID: json.RawMessage(sc.id.Raw())}
	if err := sc.out.notify(NotificationSubscriptionsAck, &ackParams{Notifications: honoured, Meta: meta}); err != nil {
		s.closeListen(l)
		return nil, err
	}
	return l, nil
}

func (s *Server) closeListen(l *listener) {
	s.hub.remove(l)
	s.observe(Event{Kind: EventStreamClosed, Stream: "listen"})
}

// tell writes the listener's pending changes to its stream.
func (s *Server) tell(sc *requestScope, l *listener) error {
	subID := json.RawMessage(sc.id.Raw())
	meta := subscriptionMeta{SubscriptionID: subID}
	for _, c := range l.take() {
		var err error
		switch c.kind {
		case changeTools:
			err = sc.out.notify(NotificationToolListChanged, &listChangedParams{Meta: meta})
		case changePrompts:
			err = sc.out.notify(notificationPromptListChanged, &listChangedParams{Meta: meta})
		case changeResources:
			err = sc.out.notify(notificationResourceListChanged, &listChangedParams{Meta: meta})
		case changeResource:
			err = sc.out.notify(NotificationResourceUpdated, &resourceUpdatedParams{URI: c.uri, Meta: meta})
		case changeExtension:
			err = sc.out.notify(c.note.method, c.note.params(subID))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// listenEnd is the listen's result once the server closes.
func (s *Server) listenEnd(sc *requestScope) Result {
	res := &listenResult{}
	info := s.impl
	res.Meta.ServerInfo = &info
	res.Meta.SubscriptionID = json.RawMessage(sc.id.Raw())
	return res
}
