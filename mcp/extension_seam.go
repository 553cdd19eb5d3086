package mcp

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
)

// The public seams an extension package is built on, beyond custom
// methods (extension.go): wrapping a tool's handler, answering a call
// with a result type the extension defines, going on in the background
// after the request is answered with questions routed to the extension,
// the request's negotiation of an extension, the server's principal,
// logger, observer and shutdown. mcp/tasks is built on them; see
// docs/design/extensions.md.

// ToolOption adjusts how a tool is served (see AddTool).
type ToolOption func(*serverTool)

// WrapTool returns a ToolOption that wraps the tool's handler: w gets
// the handler the server would call (for a typed tool, the one that
// decodes and validates the arguments and encodes Out, after any other
// option such as WithOutputValidation) and returns the one to call
// instead. Wrappers apply after every other option, in the order given.
// A wrapper may answer with an *ExtensionResult whose ResultType its
// extension defines (mcp/tasks answers "task" this way).
func WrapTool(w func(ToolHandler) ToolHandler) ToolOption {
	return func(t *serverTool) { t.wraps = append(t.wraps, w) }
}

// An *ExtensionResult answers a tools/call with a result type an
// extension defines (from a WrapTool wrapper).
func (*ExtensionResult) isToolResponse() {}

// applyWraps applies the WrapTool wrappers (AddTool, after the options).
func (t *serverTool) applyWraps() {
	for _, w := range t.wraps {
		t.handler = w(t.handler)
	}
	t.wraps = nil
}

// ExtensionDeclared reports whether the request ctx belongs to declared
// the extension: a 2026-07-28 request naming it in
// clientCapabilities.extensions. It is false outside a request and on
// sessions of earlier revisions, which have no extensions.
func ExtensionDeclared(ctx context.Context, extension string) bool {
	sc := scopeFrom(ctx)
	if sc == nil || sc.meta == nil || sc.era == nil || !sc.era.extensions() {
		return false
	}
	_, ok := sc.meta.ClientCapabilities.Extensions[extension]
	return ok
}

// Asker answers the questions of the asking API (Elicit, Sample,
// ListRoots, ...) asked with a context of Detach. Its Ask is called
// once the server has checked that the request declared the capability
// the question needs; the answer it returns is checked as any answer
// (a failed check is an *InvalidAnswerError naming Question.Key).
type Asker interface {
	Ask(ctx context.Context, q *Question) (json.RawMessage, error)
}

// Question is a question of the asking API as an Asker receives it.
type Question struct {
	// Key is the question's key (derived, or WithKey). An Asker that
	// keeps keys unique may change it to the key it asked under.
	Key string
	// Request is the bare input request: {"method","params"}.
	Request json.RawMessage
}

// Detach returns a context for work that goes on after the request ctx
// belongs to is answered (a tool handing its work to the background): it
// keeps ctx's values, not its cancellation. From then on the request
// can no longer send (Notify, progress and log records of either
// context are dropped), and questions asked with the returned context
// go to a. Outside a request it is context.WithoutCancel(ctx).
func Detach(ctx context.Context, a Asker) context.Context {
	sc := scopeFrom(ctx)
	if sc == nil {
		return context.WithoutCancel(ctx)
	}
	d := &requestScope{Context: context.WithoutCancel(ctx), s: sc.s, id: sc.id, method: sc.method, meta: sc.meta, era: sc.era}
	// The request's response is being written: nothing more goes to
	// its stream, and its own asker is done.
	sc.out, sc.asker = nil, nil
	if a != nil {
		caps := &ClientCapabilities{}
		if sc.meta != nil {
			caps = &sc.meta.ClientCapabilities
		}
		d.asker = &detachedAsker{a: a, caps: caps}
	}
	return d
}

// detachedAsker puts the server's checks around an extension's Asker.
type detachedAsker struct {
	a    Asker
	caps *ClientCapabilities
}

func (d *detachedAsker) refuses(q *question) error {
	if e := missingCapability(d.caps, q); e != nil {
		return e
	}
	return nil
}

func (d *detachedAsker) ask(ctx context.Context, q *question) (json.RawMessage, error) {
	if e := missingCapability(d.caps, q); e != nil {
		return nil, e
	}
	raw, err := marshalInputRequest(q.req)
	if err != nil {
		return nil, err
	}
	pq := &Question{Key: q.key, Request: raw}
	ans, err := d.a.Ask(ctx, pq)
	if err != nil {
		return nil, err
	}
	if err := q.validate(ans); err != nil {
		return nil, q.invalidAnswer(pq.Key, err)
	}
	return ans, nil
}

// MarshalResult encodes r as the server sends it in answer to a
// 2026-07-28 request: resultType and, unless r has its own _meta, the
// server's identity first. An extension that keeps a result to send
// later (a task's) stores these bytes.
func (s *Server) MarshalResult(r Result) (json.RawMessage, error) {
	b, err := s.appendResultBody(nil, r)
	if err != nil {
		return nil, err
	}
	return b, nil
}

// Principal returns the principal of the request ctx belongs to, the
// identity sealed request state is bound to: RequestStateOptions.
// Principal when set, else the verified token's client, issuer and
// subject ("" without authentication).
func (s *Server) Principal(ctx context.Context) (string, error) {
	if f := s.opts.RequestState.Principal; f != nil {
		return f(ctx)
	}
	return defaultPrincipal(ctx)
}

// Logger returns the logger of the server's own logs
// (ServerOptions.Logger, or slog.Default()).
func (s *Server) Logger() *slog.Logger { return s.log }

// Report sends an extension's event (Kind EventExtension) to
// ServerOptions.Observer, synchronously, as the server's own events.
func (s *Server) Report(e Event) { s.observe(e) }

// OnClose registers f to run on every Close, after the server's own
// shutdown steps: an extension stops its background work there.
func (s *Server) OnClose(f func()) {
	s.extMu.Lock()
	s.onClose = append(s.onClose, f)
	s.extMu.Unlock()
}

func (s *Server) runOnClose() {
	s.extMu.Lock()
	fs := append([]func(){}, s.onClose...)
	s.extMu.Unlock()
	for _, f := range fs {
		f()
	}
}

// modernOnly reports whether an extension serves 2026-07-28 requests
// only: it has custom methods and none is opened to sessions
// (MethodSpec.Legacy) but as a method of a revision (MethodSpec.Core).
// Sessions of earlier revisions are not told of it.
func (t *extensionTable) modernOnly(ext string) bool {
	has := false
	for _, m := range t.methods {
		if m.spec.Extension == ext {
			if m.spec.Legacy && m.spec.Core == "" {
				return false
			}
			has = true
		}
	}
	return has
}

// sessionCapabilities are the server's capabilities for a session of an
// earlier revision: without the extensions that serve 2026-07-28 only.
func (s *Server) sessionCapabilities() ServerCapabilities {
	c := s.capabilities()
	t := s.ext.Load()
	if t == nil || len(c.Extensions) == 0 {
		return c
	}
	ext := make(map[string]json.RawMessage, len(c.Extensions))
	for k, v := range c.Extensions {
		if !t.modernOnly(k) {
			ext[k] = v
		}
	}
	c.Extensions = ext
	return c
}

// WithListing returns the option o that also adds members (the members
// of a JSON object) to the tool's tools/list entry on sessions that
// negotiated version: a member an earlier revision defines that the
// server's Tool does not carry (2025-11-25's execution). A member the
// entry has already is not repeated.
func (o ToolOption) WithListing(version string, members json.RawMessage) ToolOption {
	return func(t *serverTool) {
		if o != nil {
			o(t)
		}
		if jsonrpc.KindOf(members) != jsonrpc.KindObject {
			return
		}
		if t.tool.listing == nil {
			t.tool.listing = map[string]json.RawMessage{}
		}
		t.tool.listing[version] = append(json.RawMessage(nil), members...)
	}
}

// initializeCapabilities are the capabilities of a session's initialize
// result: the revision's, with the MethodSpec.Capabilities of its Core
// methods.
func (s *Server) initializeCapabilities(rev *revision) any {
	c := rev.capabilities(s.sessionCapabilities())
	t := s.ext.Load()
	if t == nil {
		return c
	}
	var add map[string]json.RawMessage
	for _, m := range t.methods {
		if m.spec.Core != rev.version || len(m.spec.Capabilities) == 0 {
			continue
		}
		_ = jsonrpc.Fields(m.spec.Capabilities, func(k, v []byte) error {
			if add == nil {
				add = map[string]json.RawMessage{}
			}
			add[string(k)] = json.RawMessage(v)
			return nil
		})
	}
	if len(add) == 0 {
		return c
	}
	b, err := json.Marshal(c)
	if err != nil {
		return c
	}
	return json.RawMessage(addMembers(b, add))
}

// coreOf returns the MethodSpec.Core of the custom method ("" when none).
func (s *Server) coreOf(method string) string {
	if t := s.ext.Load(); t != nil {
		if m := t.methods[method]; m != nil {
			return m.spec.Core
		}
	}
	return ""
}

// addMembers appends to the JSON object obj the members of add (keyed by
// their names as written in JSON, between the quotes) it does not have,
// in name order.
func addMembers(obj []byte, add map[string]json.RawMessage) []byte {
	has := map[string]bool{}
	_ = jsonrpc.Fields(obj, func(k, _ []byte) error {
		has[string(k)] = true
		return nil
	})
	names := make([]string, 0, len(add))
	for k := range add {
		if !has[k] {
			names = append(names, k)
		}
	}
	if len(names) == 0 {
		return obj
	}
	slices.Sort(names)
	out := append([]byte(nil), obj[:len(obj)-1]...)
	first := len(has) == 0
	for _, k := range names {
		if !first {
			out = append(out, ',')
		}
		first = false
		out = append(out, '"')
		out = append(out, k...)
		out = append(out, `":`...)
		out = append(out, add[k]...)
	}
	return append(out, '}')
}

// listedTools returns res with each tool's WithListing members for the
// revision, or res when no tool has any.
func (r *revision) listedTools(res *ListToolsResult) Result {
	found := false
	for _, t := range res.Tools {
		if t != nil && t.listing[r.version] != nil {
			found = true
			break
		}
	}
	if !found {
		return res
	}
	tools := make([]json.RawMessage, 0, len(res.Tools))
	for _, t := range res.Tools {
		b, err := json.Marshal(t)
		if err != nil {
			return res
		}
		if t != nil {
			if m := t.listing[r.version]; m != nil {
				add := map[string]json.RawMessage{}
				_ = jsonrpc.Fields(m, func(k, v []byte) error {
					add[string(k)] = json.RawMessage(v)
					return nil
				})
				b = addMembers(b, add)
			}
		}
		tools = append(tools, b)
	}
	return &ExtensionResult{Value: &struct {
		Tools      []json.RawMessage `json:"tools"`
		NextCursor *string           `json:"nextCursor,omitempty"`
		Meta       Meta              `json:"_meta,omitempty"`
	}{tools, res.NextCursor, res.Meta}}
}
