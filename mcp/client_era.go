package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
)

// The era of a Client: the probe of ModeAuto, the 2025-11-25 handshake
// and session, and the server's live requests of a legacy session.
//
// The probe follows the dual-era client rules of 2026-07-28. A modern
// answer keeps the client modern: a result, or an error only a modern
// server sends (-32020, -32021, -32022 listing a version the client
// speaks; over HTTP also an in-band error at 200 and -32601 at 404).
// Anything else a server that does not speak 2026-07-28 would answer
// (another JSON-RPC error on a byte stream, an HTTP 400, 404 or 405
// without a modern error, no answer to server/discover in time) makes
// the client open a legacy session. Network failures decide nothing: the
// call fails and the next one probes again. The era is kept for the
// Client's life.

// serverHello is the result of initialize.
type serverHello struct {
	ProtocolVersion string             `json:"protocolVersion"`
	Capabilities    ServerCapabilities `json:"capabilities"`
	ServerInfo      Implementation     `json:"serverInfo"`
	Instructions    string             `json:"instructions,omitempty"`
}

// eraGuess is what a probe's outcome says about the server.
type eraGuess uint8

const (
	eraUnknown eraGuess = iota // nothing: fail the call, probe again later
	eraModern
	eraLegacy
)

// probeOutcome classifies the answer to a modern request sent to a
// server whose era is not known. status is the HTTP status (overHTTP).
func probeOutcome(err error, status int, overHTTP bool) eraGuess {
	if err == nil {
		return eraModern
	}
	var uv *UnsupportedVersionError
	if errors.As(err, &uv) {
		// -32022 listing no modern version the client speaks.
		if uv.Err != nil && slices.ContainsFunc(uv.Supported, isLegacyClientVersion) {
			return eraLegacy
		}
		return eraUnknown
	}
	var e *Error
	if errors.As(err, &e) {
		switch e.Code {
		case CodeHeaderMismatch, CodeMissingRequiredCapability, CodeUnsupportedProtocolVersion:
			return eraModern
		}
		if !overHTTP {
			return eraLegacy
		}
		switch status {
		case http.StatusOK:
			return eraModern
		case http.StatusNotFound:
			if e.Code == CodeMethodNotFound {
				return eraModern
			}
			return eraLegacy
		case http.StatusBadRequest, http.StatusMethodNotAllowed:
			return eraLegacy
		}
		return eraUnknown
	}
	var hs *HTTPStatusError
	if errors.As(err, &hs) {
		switch hs.StatusCode {
		case http.StatusBadRequest, http.StatusNotFound, http.StatusMethodNotAllowed:
			return eraLegacy
		}
	}
	return eraUnknown
}

func isLegacyClientVersion(v string) bool { return slices.Contains(legacyClientVersions, v) }

// connect settles the era (holding c.connecting, so that one probe or
// handshake runs at a time). probe, when not nil, is the caller's
// request: over HTTP, ModeAuto sends it as the modern probe, and done
// reports that its outcome (res, err) is final. Otherwise era is where
// to send the caller's request, or err why there is none (done).
func (c *Client) connect(ctx context.Context, probe *wireRequest) (era *clientEra, res []byte, done bool, err error) {
	select {
	case c.connecting <- struct{}{}:
	case <-ctx.Done():
		return nil, nil, true, ctx.Err()
	}
	release := sync.OnceFunc(func() { <-c.connecting })
	defer release()
	if era := c.era.Load(); era != nil {
		return era, nil, false, nil
	}
	if c.opts.Mode != ModeAuto {
		era, err := c.handshake(ctx)
		return era, nil, err != nil, err
	}
	if probe != nil && c.headers {
		modern := c.newEra(LatestProtocolVersion)
		// A 200 settles it: the era is modern from the response headers
		// on, and other calls need not wait for the end of this one (a
		// long tool call, a Listen stream).
		probe.hook = &wireHook{onStatus: func(status int) {
			if status == http.StatusOK {
				c.era.CompareAndSwap(nil, modern)
				release()
			}
		}}
		res, err := c.doModern(ctx, modern, probe)
		probe.hook = nil
		switch probeOutcome(err, int(probe.status), true) {
		case eraModern:
			c.era.CompareAndSwap(nil, modern)
			return c.era.Load(), res, true, err
		case eraUnknown:
			return nil, res, true, err
		}
		c.log.Debug("mcp: client: the server does not speak 2026-07-28; opening a 2025-11-25 session", "probe", err)
		era, herr := c.handshake(ctx)
		if herr != nil {
			return nil, nil, true, herr
		}
		return era, nil, false, nil
	}
	era, err = c.probeDiscover(ctx)
	return era, nil, err != nil, err
}

// probeDiscover probes with server/discover (a byte stream, or Connect).
func (c *Client) probeDiscover(ctx context.Context) (*clientEra, error) {
	modern := c.newEra(LatestProtocolVersion)
	timeout := c.opts.ProbeTimeout
	if timeout <= 0 {
		timeout = defaultProbeTimeout
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	l := &wireRequest{method: MethodDiscover}
	raw, err := c.doModern(pctx, modern, l)
	timedOut := err != nil && ctx.Err() == nil && pctx.Err() != nil
	cancel()
	if !timedOut {
		guess := probeOutcome(err, int(l.status), c.headers)
		if err == nil && !discoverSpeaksModern(raw) {
			guess = eraLegacy
		}
		switch guess {
		case eraModern:
			c.era.CompareAndSwap(nil, modern)
			return c.era.Load(), nil
		case eraUnknown:
			return nil, err
		}
	}
	c.log.Debug("mcp: client: no 2026-07-28 answer to server/discover; opening a 2025-11-25 session", "err", err)
	era, herr := c.handshake(ctx)
	if herr == nil {
		return era, nil
	}
	var e *Error
	if timedOut && errors.As(herr, &e) {
		// The server is there and refuses initialize: a modern server
		// that was slower than ProbeTimeout. Ask it again, unbounded.
		if _, err := c.doModern(ctx, modern, &wireRequest{method: MethodDiscover}); err == nil {
			c.era.CompareAndSwap(nil, modern)
			return c.era.Load(), nil
		}
	}
	return nil, herr
}

// discoverSpeaksModern reports whether a DiscoverResult lists a modern
// version the client speaks, or at least no legacy one instead.
func discoverSpeaksModern(raw []byte) bool {
	var d struct {
		SupportedVersions []string `json:"supportedVersions"`
	}
	if json.Unmarshal(raw, &d) != nil || len(d.SupportedVersions) == 0 {
		return true
	}
	for _, v := range d.SupportedVersions {
		if slices.Contains(modernVersions, v) {
			return true
		}
	}
	return !slices.ContainsFunc(d.SupportedVersions, isLegacyClientVersion)
}

// legacyCapabilities are the capabilities declared in initialize.
func (c *Client) legacyCapabilities() ClientCapabilities {
	caps := c.Capabilities()
	if caps.Roots != nil {
		caps.Roots = &RootsCapabilities{ListChanged: true}
	}
	return caps
}

// handshake opens a 2025-11-25 session: initialize, then
// notifications/initialized, then logging/setLevel when LogLevel is set
// (and the server logs), and over HTTP the session's GET stream. The caller
// holds c.connecting.
func (c *Client) handshake(ctx context.Context) (*clientEra, error) {
	offer := LegacyProtocolVersion
	if c.opts.Mode == ModePinned {
		offer = c.opts.ProtocolVersion
	}
	p := make([]byte, 0, 256)
	p = append(p, `,"protocolVersion":`...)
	p = jsonrpc.AppendString(p, offer)
	caps, err := json.Marshal(c.legacyCapabilities())
	if err != nil {
		return nil, err
	}
	p = append(p, `,"capabilities":`...)
	p = append(p, c.appendLegacyCapabilities(caps)...)
	info, err := json.Marshal(c.opts.Info)
	if err != nil {
		return nil, err
	}
	p = append(p, `,"clientInfo":`...)
	p = append(p, info...)
	l := &wireRequest{method: methodInitialize, params: p, hook: &wireHook{}}
	raw, err := c.send(ctx, &clientEra{clientProtocol: legacyProtocol{}}, l)
	if err != nil {
		return nil, err
	}
	hello := new(serverHello)
	if err := json.Unmarshal(raw, hello); err != nil {
		return nil, &InvalidResponseError{Method: methodInitialize, Err: err}
	}
	if hello.ProtocolVersion == "" {
		return nil, invalidResponse(methodInitialize, "no protocolVersion")
	}
	accepted := hello.ProtocolVersion == offer || c.opts.Mode != ModePinned && isLegacyClientVersion(hello.ProtocolVersion)
	if !accepted {
		// The server wants a version the client does not speak: leave.
		c.t.endSession(ctx, hello.ProtocolVersion, l.hook.sessionID)
		return nil, &UnsupportedVersionError{Requested: offer, Supported: []string{hello.ProtocolVersion}}
	}
	era := &clientEra{clientProtocol: legacyProtocol{}, version: hello.ProtocolVersion, session: l.hook.sessionID, hello: hello, helloRaw: bytes.Clone(raw)}
	// Stored before initialized goes out: from then on the server may
	// send requests, which are answered only on a legacy session.
	c.era.Store(era)
	if _, err := era.notify(ctx, c.t, era, notificationInitialized); err != nil {
		c.era.CompareAndSwap(era, nil)
		c.t.endSession(context.WithoutCancel(ctx), era.version, era.session)
		return nil, err
	}
	if c.opts.LogLevel != "" && hello.Capabilities.Logging != nil {
		sl := &wireRequest{method: methodSetLevel, params: jsonrpc.AppendString([]byte(`,"level":`), string(c.opts.LogLevel))}
		if _, err := c.send(ctx, era, sl); err != nil {
			c.log.Warn("mcp: client: logging/setLevel failed", "err", err)
		}
	}
	if ht, ok := c.t.(*httpClientTransport); ok && ht.getStream {
		ht.listen(ctx, era)
	}
	return era, nil
}

// doLegacy sends a request of a legacy session. A 404 to a request with
// a session id means the session is gone: a new one is opened (as
// 2025-11-25 prescribes) and the request sent again, once.
func (c *Client) doLegacy(ctx context.Context, era *clientEra, l *wireRequest) ([]byte, error) {
	switch l.method {
	case MethodDiscover:
		return legacyDiscover(era), nil
	case methodSubscriptionsListen:
		return nil, fmt.Errorf("%w: %s", ErrLegacyUnsupported, l.method)
	}
	res, err := c.send(ctx, era, l)
	if err == nil || l.status != http.StatusNotFound || era.session == "" || ctx.Err() != nil || ErrorCode(err) == CodeMethodNotFound {
		return res, err
	}
	next, rerr := c.renew(ctx, era)
	if rerr != nil {
		return nil, fmt.Errorf("%w (and a new session failed: %v)", err, rerr)
	}
	return c.send(ctx, next, l)
}

// renew replaces the legacy session old with a new one, unless another
// call did already.
func (c *Client) renew(ctx context.Context, old *clientEra) (*clientEra, error) {
	select {
	case c.connecting <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-c.connecting }()
	if cur := c.era.Load(); cur != old && cur != nil {
		return cur, nil
	}
	return c.handshake(ctx)
}

// legacyDiscover answers Discover on a legacy session from what
// initialize returned.
func legacyDiscover(era *clientEra) []byte {
	h := era.hello
	d := &DiscoverResult{SupportedVersions: []string{era.version}, Capabilities: h.Capabilities, Instructions: h.Instructions,
		Meta: Meta{MetaServerInfo: h.ServerInfo}}
	b, _ := json.Marshal(d)
	return b
}

// NotifyRootsChanged tells the server that the client's roots changed
// (notifications/roots/list_changed) on a legacy session. The modern
// era has no such notification (a server asks for roots when it needs
// them); there it does nothing.
//
// Deprecated: roots are deprecated in 2026-07-28 (SEP-2577); see
// ClientOptions.Roots.
func (c *Client) NotifyRootsChanged(ctx context.Context) error {
	era := c.era.Load()
	if era == nil {
		return nil
	}
	_, err := era.notify(ctx, c.t, era, notificationRootsListChanged)
	return err
}

// errCancelledByServer is the cause of a live request's context when the
// server cancels it (no response is sent then).
var errCancelledByServer = errors.New("mcp: the server cancelled its request")

type servingCall struct{ cancel context.CancelCauseFunc }

// serveRequest answers a request the server sent on a legacy session
// (elicitation/create, sampling/createMessage, roots/list, ping) with the
// same handlers as input requests, and returns the response message (nil
// when none must be sent). A modern server sends no requests; they are
// ignored (but a ping before the era is known is answered).
func (c *Client) serveRequest(ctx context.Context, id jsonrpc.ID, method string, params []byte) []byte {
	if id.IsZero() {
		return nil
	}
	if !c.servesRequests() {
		if method == methodPing && c.era.Load() == nil {
			// A server may ping during the handshake.
			return jsonrpc.AppendResponse(nil, id, []byte(`{}`))
		}
		return nil
	}
	ctx, cancel := context.WithCancelCause(ctx)
	sc := &servingCall{cancel: cancel}
	key := id.Raw()
	c.serving.Store(key, sc)
	defer func() {
		c.serving.CompareAndDelete(key, sc)
		cancel(nil)
	}()
	result, err := c.answerLive(ctx, id, method, params)
	if context.Cause(ctx) == errCancelledByServer {
		return nil
	}
	if err != nil {
		var e *Error
		if !errors.As(err, &e) {
			e = NewError(CodeInternalError, err.Error(), nil)
		}
		return jsonrpc.AppendError(nil, id, e)
	}
	return jsonrpc.AppendResponse(nil, id, result)
}

// answerLive runs the handler for one live request.
func (c *Client) answerLive(ctx context.Context, id jsonrpc.ID, method string, params []byte) ([]byte, error) {
	if jsonrpc.KindOf(params) != jsonrpc.KindObject {
		params = []byte(`{}`)
	}
	var r InputRequest
	switch method {
	case methodPing:
		return []byte(`{}`), nil
	case MethodElicit:
		er, err := decodeElicitRequest(params)
		if err != nil {
			return nil, NewError(CodeInvalidParams, err.Error(), nil)
		}
		r = er
	case MethodCreateMessage, MethodListRoots:
		raw := append(jsonrpc.AppendString([]byte(`{"method":`), method), `,"params":`...)
		raw = append(append(raw, params...), '}')
		ir, err := decodeInputRequest(raw)
		if err != nil {
			return nil, NewError(CodeInvalidParams, err.Error(), nil)
		}
		r = ir
	default:
		return nil, NewError(CodeMethodNotFound, "Method not found", nil)
	}
	if !c.canAnswer(r) {
		return nil, NewError(CodeInvalidRequest, noHandlerMessage(method), nil)
	}
	return c.answerRaw(ctx, liveKey(id), r)
}

// liveKey is the InputRequestKey of a live request: its id (a string id
// without its quotes).
func liveKey(id jsonrpc.ID) string {
	raw := id.Raw()
	if s, ok := jsonString([]byte(raw)); ok && raw != "" && raw[0] == '"' {
		return s
	}
	return raw
}

// noHandlerMessage is the error message for a request of a kind the
// client has no handler for.
func noHandlerMessage(method string) string {
	switch method {
	case MethodElicit:
		return "Elicitation not supported"
	case MethodCreateMessage:
		return "Sampling not supported"
	}
	return "List roots not supported"
}

// cancelServing cancels the live request a notifications/cancelled of
// the server names.
func (c *Client) cancelServing(params []byte) {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(params, &p) != nil || len(p.RequestID) == 0 {
		return
	}
	id, e := jsonrpc.ParseID(p.RequestID)
	if e != nil {
		return
	}
	if v, ok := c.serving.Load(id.Raw()); ok {
		v.(*servingCall).cancel(errCancelledByServer)
	}
}
