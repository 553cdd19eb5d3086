package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
)

// Extensions and custom methods. A server advertises an extension in
// capabilities.extensions (AddExtension) and serves methods outside the
// specification under it (AddMethod). A custom method is decoded by the
// era like any other (the exact-key scanner for _meta and the members
// the SDK reads), runs through the same chain (the request-state
// boundary, the asking API for a carrier method, ServerOptions.Middleware)
// and is answered in the request's era. The tasks extension (mcp/tasks)
// is built on this seam and those of extension_seam.go. See
// docs/design/extensions.md.

// extensionHandler handles one request of a custom method (see
// Server.AddMethod).
type extensionHandler = func(ctx context.Context, req *ExtensionRequest) (Result, error)

// MethodSpec describes a custom method.
type MethodSpec struct {
	// Name is the JSON-RPC method: visible ASCII without spaces, at most
	// 256 bytes, not a method of any revision of the specification, not
	// beginning with "notifications/" or "rpc.". A name of the form
	// "<extension>/<verb>" keeps it apart from every other extension's.
	Name string
	// Extension is the identifier the method belongs to (the _meta key
	// form with its mandatory prefix: "com.example/search"). AddMethod
	// advertises it (with {} settings) unless AddExtension did already. A
	// 2026-07-28 request whose clientCapabilities.extensions does not
	// name it is answered -32021 naming the extension, before the handler
	// runs.
	Extension string
	// Carrier lets the method answer with an InputRequiredResult: its
	// handler may ask (Elicit, Sample, ListRoots), and the params members
	// inputResponses and requestState are the client's answers and the
	// sealed state of the previous round, as on tools/call. The state is
	// bound to the method, the Target and the params digest (everything
	// but _meta, inputResponses and requestState).
	Carrier bool
	// TargetMember, when set, names the params member (a string) that
	// says what the request acts on, like a tool's name: it is required,
	// handed to the handler as ExtensionRequest.Target, bound into a
	// sealed state, and on HTTP it is the Mcp-Name header (required on
	// 2026-07-28, checked when present on a session of an earlier
	// revision), so that intermediaries can route on it.
	TargetMember string
	// Legacy serves the method on sessions of earlier revisions too
	// (2025-11-25 and before). Those revisions have no extensions, so
	// there the method is a plain method of the server: no extension is
	// checked, and the result is sent without resultType or the server's
	// identity. Without it a session's request gets -32601.
	Legacy bool
	// Core is the version of an earlier revision that defines the method
	// itself (an extension that took over a feature of it, as 2026-07-28
	// extensions do): the method is served on that revision's sessions,
	// Legacy or not, and on no other session, and it does not make the
	// extension declared in their initialize.
	Core string
	// Capabilities, for a Core method, are members added to the server's
	// capabilities in the initialize result of the Core revision's
	// sessions (a JSON object: {"name": {...}}), for a capability the
	// revision defines that ServerCapabilities does not carry. A member
	// the server declares itself is not replaced.
	Capabilities json.RawMessage
}

// ExtensionRequest holds the params of a custom method.
type ExtensionRequest struct {
	Meta RequestMeta `json:"_meta"`
	// Method is the method requested.
	Method string `json:"-"`
	// Target is the value of the MethodSpec's TargetMember ("" without
	// one).
	Target string `json:"-"`
	// Params is the params object as received without _meta and, for a
	// carrier method, without inputResponses and requestState ({} when
	// the request had none). No object in it repeats a member.
	Params json.RawMessage `json:"-"`
	// The answers and the plaintext state of the previous round (carrier
	// methods only).
	retryParams

	m *customMethod
}

// RequestMeta returns the request's _meta.
func (r *ExtensionRequest) RequestMeta() *RequestMeta { return &r.Meta }

// Extension returns the extension the requested method belongs to.
func (r *ExtensionRequest) Extension() string {
	if r.m == nil {
		return ""
	}
	return r.m.spec.Extension
}

// ExtensionResult is the complete result of a custom method: Value,
// which must encode as a JSON object. On 2026-07-28 the SDK adds
// resultType and, unless the object has its own _meta, the server's
// identity in _meta, as for every result; a session of an earlier
// revision gets the object as it is.
type ExtensionResult struct {
	// Value is encoded with encoding/json (a struct, a map, or a
	// json.RawMessage of an object, written as it is once compacted). Nil
	// means {}. It must not have a resultType member: set ResultType.
	Value any
	// ResultType is resultType on 2026-07-28; empty means "complete".
	// Another value must be one the method's extension defines.
	ResultType ResultType
}

func (*ExtensionResult) ownMeta() bool { return true } // encoded by appendExtensionResult

// MarshalJSON writes the value alone: the result as an earlier revision
// sends it.
func (r *ExtensionResult) MarshalJSON() ([]byte, error) {
	b, _, err := r.encode()
	return b, err
}

// encode returns the value's object, compact, and whether it has _meta.
func (r *ExtensionResult) encode() (body []byte, hasMeta bool, err error) {
	switch v := r.Value.(type) {
	case nil:
		return []byte("{}"), false, nil
	case json.RawMessage:
		var bb bytes.Buffer
		if err := json.Compact(&bb, v); err != nil {
			return nil, false, errors.New("mcp: ExtensionResult value is not valid JSON")
		}
		body = bb.Bytes()
	default:
		if body, err = marshalAppend(nil, v); err != nil {
			return nil, false, err
		}
	}
	if jsonrpc.KindOf(body) != jsonrpc.KindObject {
		return nil, false, errors.New("mcp: ExtensionResult value must encode as a JSON object")
	}
	var bad error
	_ = jsonrpc.Fields(body, func(k, _ []byte) error {
		switch string(jsonrpc.Key(k)) {
		case "resultType":
			bad = errors.New("mcp: ExtensionResult value has a resultType member (set ExtensionResult.ResultType)")
			return errStopScan
		case "_meta":
			hasMeta = true
		}
		return nil
	})
	return body, hasMeta, bad
}

// appendExtensionResult writes an ExtensionResult in the 2026-07-28
// form: resultType and the server's identity first, then the value's
// members.
func (s *Server) appendExtensionResult(dst []byte, r *ExtensionResult) ([]byte, error) {
	body, hasMeta, err := r.encode()
	if err != nil {
		return dst, err
	}
	rt := r.ResultType
	if rt == "" {
		rt = ResultComplete
	}
	dst = append(dst, `{"resultType":`...)
	dst = jsonrpc.AppendString(dst, string(rt))
	if !hasMeta {
		dst = append(dst, ',')
		dst = append(dst, s.serverInfoMeta...)
	}
	if len(body) > 2 {
		dst = append(dst, ',')
		return append(dst, body[1:]...), nil
	}
	return append(dst, '}'), nil
}

// ---- registration ----

// customMethod is one registered custom method.
type customMethod struct {
	spec    MethodSpec
	ms      methodSpec // what the era decodes with
	names   []string   // the params members the decoder reads
	roles   []memberRole
	strip   []string // members left out of ExtensionRequest.Params
	handler extensionHandler
}

type memberRole uint8

const (
	roleMeta memberRole = iota
	roleTarget
	roleResponses
	roleState
)

// extensionTable is what AddExtension and AddMethod registered: never
// modified once published (copy on write), so a lookup takes no lock.
type extensionTable struct {
	methods map[string]*customMethod
	exts    map[string]json.RawMessage
}

var (
	extensionNameRE = regexp.MustCompile(`^[A-Za-z]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z]([A-Za-z0-9-]*[A-Za-z0-9])?)*/[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$`)
)

// validExtensionName reports whether name is an extension identifier: a
// _meta key with its prefix (dot-separated labels, a slash, a name).
func validExtensionName(name string) bool { return extensionNameRE.MatchString(name) }

// AddExtension advertises the extension name in
// capabilities.extensions of server/discover with settings (nil means
// {}; otherwise a value that encodes as a JSON object), replacing what
// an earlier call or ServerOptions.Capabilities set for it. Sessions of
// earlier revisions are not told: their capabilities have no
// extensions. It panics on an invalid name or settings: a programming
// error.
func (s *Server) AddExtension(name string, settings any) {
	if !validExtensionName(name) {
		panic(fmt.Sprintf("mcp: invalid extension identifier %q (want a prefix of dot-separated labels, a slash and a name: com.example/feature)", name))
	}
	raw := json.RawMessage(`{}`)
	if settings != nil {
		b, err := toRawJSON(settings)
		if err != nil || jsonrpc.KindOf(b) != jsonrpc.KindObject {
			panic(fmt.Sprintf("mcp: extension %q: settings must encode as a JSON object", name))
		}
		raw = b
	}
	s.updateExtensions(func(t *extensionTable) { t.exts[name] = raw })
}

// AddMethod registers a custom method with a low-level handler,
// replacing a method of the same name of the same extension. It panics
// when the spec is invalid (see MethodSpec), or when another extension
// already registered a method of that name (the first extension would
// stay advertised with the second one's handler): a programming error.
// h returns an *ExtensionResult (or EmptyResult) for a complete answer;
// the handler of a carrier method (MethodSpec.Carrier) may also ask with
// the asking API (Elicit, Sample, ...) or return its own
// *InputRequiredResult. An *Error is sent as it is; InvalidAnswerError
// and NotAcceptedError become -32602; any other error is -32603 (and
// logged).
func (s *Server) AddMethod(spec *MethodSpec, h func(ctx context.Context, req *ExtensionRequest) (Result, error)) {
	m, err := newCustomMethod(spec, h)
	if err != nil {
		panic(err)
	}
	s.addCustomMethod(m)
}

func (s *Server) addCustomMethod(m *customMethod) {
	var taken string
	s.updateExtensions(func(t *extensionTable) {
		if old := t.methods[m.spec.Name]; old != nil && old.spec.Extension != m.spec.Extension {
			taken = old.spec.Extension
			return
		}
		t.methods[m.spec.Name] = m
		if _, ok := t.exts[m.spec.Extension]; !ok {
			t.exts[m.spec.Extension] = json.RawMessage(`{}`)
		}
	})
	if taken != "" {
		panic(fmt.Sprintf("mcp: method %q of extension %q: extension %q already has a method of that name", m.spec.Name, m.spec.Extension, taken))
	}
}

// AddTypedMethod registers a typed custom method on s. The params (without
// _meta, and for a carrier without inputResponses and requestState) are
// validated against the JSON Schema inferred from In, a struct or a map
// (exported fields, json tags, `jsonschema` tags for descriptions; a
// member that differs from a declared one only in case is invalid, since
// encoding/json would fold it onto the field unvalidated), and decoded
// into In; invalid params are answered -32602 naming the problem. Out is
// sent as the result object: it must encode as a JSON object, or be a
// Result itself (an *ExtensionResult with a ResultType, EmptyResult). A
// carrier method asks with the asking API, as a typed tool does. It
// replaces a method of the same name of the same extension, and panics
// when In's schema cannot be inferred or is not an object, on an invalid
// spec, or when another extension already registered a method of that
// name.
func AddTypedMethod[In, Out any](s *Server, spec *MethodSpec, h func(ctx context.Context, req *ExtensionRequest, in In) (Out, error)) {
	if h == nil {
		panic("mcp: AddMethod needs a handler")
	}
	in, err := schemaFor[In](nil)
	if err != nil {
		panic(fmt.Sprintf("mcp: method %q: params schema: %v", specName(spec), err))
	}
	if in.schema.Type != "object" {
		panic(fmt.Sprintf("mcp: method %q: params type %T must be a struct or a map (schema type object)", specName(spec), *new(In)))
	}
	if k := derefKind(reflect.TypeFor[Out]()); k != reflect.Struct && k != reflect.Map && k != reflect.Interface {
		panic(fmt.Sprintf("mcp: method %q: result type %T must be a struct, a map or a Result (a JSON object)", specName(spec), *new(Out)))
	}
	m, err := newCustomMethod(spec, func(ctx context.Context, req *ExtensionRequest) (Result, error) {
		args := []byte(req.Params)
		if err := in.guard.check(args); err != nil {
			return nil, jsonrpcError(CodeInvalidParams, "Invalid params: "+err.Error())
		}
		if in.fast == nil || !in.fast.Valid(args) {
			var generic any
			if err := json.Unmarshal(args, &generic); err != nil {
				return nil, jsonrpcError(CodeInvalidParams, "Invalid params: "+err.Error())
			}
			if err := in.resolved.Validate(generic); err != nil {
				return nil, jsonrpcError(CodeInvalidParams, "Invalid params: "+err.Error())
			}
		}
		var v In
		if err := json.Unmarshal(args, &v); err != nil {
			return nil, jsonrpcError(CodeInvalidParams, "Invalid params: "+err.Error())
		}
		out, err := h(ctx, req, v)
		if err != nil {
			return nil, err
		}
		if r, ok := any(out).(Result); ok {
			return r, nil
		}
		if rv := reflect.ValueOf(out); !rv.IsValid() || rv.Kind() == reflect.Pointer && rv.IsNil() {
			return nil, fmt.Errorf("method %q returned a nil result", req.Method)
		}
		return &ExtensionResult{Value: out}, nil
	})
	if err != nil {
		panic(err)
	}
	s.addCustomMethod(m)
}

func specName(spec *MethodSpec) string {
	if spec == nil {
		return ""
	}
	return spec.Name
}

func derefKind(t reflect.Type) reflect.Kind {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Kind()
}

func newCustomMethod(spec *MethodSpec, h extensionHandler) (*customMethod, error) {
	if spec == nil || h == nil {
		return nil, errors.New("mcp: AddMethod needs a method spec and a handler")
	}
	sp := *spec
	switch {
	case !methodNameRE.MatchString(sp.Name):
		return nil, fmt.Errorf("mcp: invalid method name %q: 1 to 256 visible ASCII characters", sp.Name)
	case reservedMethod(sp.Name):
		return nil, fmt.Errorf("mcp: method %q is reserved (a method of the specification, a notification, or rpc.*)", sp.Name)
	case !validExtensionName(sp.Extension):
		return nil, fmt.Errorf("mcp: method %q: invalid extension identifier %q", sp.Name, sp.Extension)
	case sp.Core != "" && !slices.Contains(legacyVersions, sp.Core):
		return nil, fmt.Errorf("mcp: method %q: Core %q is not an earlier revision the server serves", sp.Name, sp.Core)
	case sp.Capabilities != nil && (sp.Core == "" || jsonrpc.KindOf(sp.Capabilities) != jsonrpc.KindObject):
		return nil, fmt.Errorf("mcp: method %q: Capabilities need a Core revision and a JSON object", sp.Name)
	}
	sp.Capabilities = append(json.RawMessage(nil), sp.Capabilities...)
	m := &customMethod{spec: sp, handler: h, names: []string{"_meta"}, roles: []memberRole{roleMeta}, strip: []string{"_meta"}}
	if sp.TargetMember != "" {
		switch {
		case sp.TargetMember == "_meta", sp.Carrier && (sp.TargetMember == "inputResponses" || sp.TargetMember == "requestState"):
			return nil, fmt.Errorf("mcp: method %q: TargetMember %q is a member the SDK reads itself", sp.Name, sp.TargetMember)
		}
		m.names, m.roles = append(m.names, sp.TargetMember), append(m.roles, roleTarget)
	}
	if sp.Carrier {
		m.names = append(m.names, "inputResponses", "requestState")
		m.roles = append(m.roles, roleResponses, roleState)
		m.strip = append(m.strip, "inputResponses", "requestState")
	}
	m.ms = methodSpec{decode: m.decode, carrier: sp.Carrier}
	return m, nil
}

// updateExtensions applies f to a copy of the table and publishes it.
func (s *Server) updateExtensions(f func(*extensionTable)) {
	s.extMu.Lock()
	defer s.extMu.Unlock()
	next := &extensionTable{methods: map[string]*customMethod{}, exts: map[string]json.RawMessage{}}
	if t := s.ext.Load(); t != nil {
		for k, v := range t.methods {
			next.methods[k] = v
		}
		for k, v := range t.exts {
			next.exts[k] = v
		}
	}
	f(next)
	s.ext.Store(next)
}

// customSpec returns how to decode a custom method in an era (modern:
// 2026-07-28; otherwise a session's revision), or nil when the server
// has no such method there. It takes no lock and allocates nothing.
func (s *Server) customSpec(method string, modern bool) *methodSpec {
	t := s.ext.Load()
	if t == nil {
		return nil
	}
	m := t.methods[method]
	if m == nil || !modern && !m.spec.Legacy && m.spec.Core == "" {
		return nil
	}
	return &m.ms
}

// extensions returns the extensions advertised (nil when none); the
// map is shared and must not be modified.
func (s *Server) extensions() map[string]json.RawMessage {
	if t := s.ext.Load(); t != nil && len(t.exts) > 0 {
		return t.exts
	}
	return nil
}

// ---- decoding ----

// decode decodes the params of the method: _meta, the target member and
// (carrier) inputResponses and requestState with the exact-key scanner;
// the rest stays raw in Params, once no object of it repeats a member.
func (m *customMethod) decode(raw []byte, p *metaPresence) (Params, *Error) {
	r := &ExtensionRequest{Method: m.spec.Name, m: m}
	var hasTarget bool
	err := scanObject(raw, "params", m.names, func(i int, v []byte) *Error {
		var e *Error
		switch m.roles[i] {
		case roleMeta:
			e = decodeMeta(v, &r.Meta, p)
		case roleTarget:
			r.Target, e = decodeString(v, m.spec.TargetMember)
			hasTarget = true
		case roleResponses:
			r.InputResponses, e = decodeInputResponses(v)
		case roleState:
			decodeRequestState(v, &r.retryParams)
		}
		return e
	})
	if err == nil {
		err = checkParamsMembers(raw)
	}
	if err == nil && p.meta && m.spec.TargetMember != "" && !hasTarget {
		err = paramsError("missing %s", m.spec.TargetMember)
	}
	if err == nil {
		r.Params = withoutMembers(raw, m.strip)
	}
	return r, err
}

// checkParamsMembers rejects params in which some object repeats a
// member: the handler's decoding and the state's digest must read the
// same thing.
func checkParamsMembers(v []byte) *Error {
	if name, dup := jsonrpc.DuplicateMember(v); dup {
		return paramsError("duplicate member \"%s\" in params", jsonrpc.Clip(name))
	}
	return nil
}

// withoutMembers returns a copy of the object obj without the top-level
// members named (compared as the scanner compares them: unescaped).
func withoutMembers(obj []byte, names []string) json.RawMessage {
	out := make([]byte, 0, len(obj))
	out = append(out, '{')
	first := true
	_ = jsonrpc.Fields(obj, func(k, v []byte) error {
		key := jsonrpc.Key(k)
		for _, n := range names {
			if string(key) == n {
				return nil
			}
		}
		if !first {
			out = append(out, ',')
		}
		first = false
		out = append(out, '"')
		out = append(out, k...)
		out = append(out, `":`...)
		out = append(out, jsonrpc.TrimSpace(v)...)
		return nil
	})
	return append(out, '}')
}

// ---- serving ----

// callMethod serves a custom method: the extension check, then the
// handler.
func (s *Server) callMethod(ctx context.Context, r *ExtensionRequest) (Result, error) {
	m := r.m
	if sc := scopeFrom(ctx); sc == nil || sc.era.extensions() {
		if _, ok := r.Meta.ClientCapabilities.Extensions[m.spec.Extension]; !ok {
			return nil, missingExtension(m.spec.Name, m.spec.Extension)
		}
	}
	res, err := m.handler(ctx, r)
	if err != nil {
		return nil, askOutcomeError(err)
	}
	switch v := res.(type) {
	case nil:
	case *ExtensionResult:
		if v != nil {
			return v, nil
		}
	case *InputRequiredResult:
		if v != nil {
			return v, nil
		}
	default:
		if rv := reflect.ValueOf(res); rv.Kind() != reflect.Pointer || !rv.IsNil() {
			return res, nil
		}
	}
	return nil, fmt.Errorf("method %q handler returned no result", r.Method)
}

// missingExtension is the -32021 error naming the extension a request
// needed.
func missingExtension(what, ext string) *Error {
	return MissingCapabilityError(ClientCapabilities{Extensions: map[string]json.RawMessage{ext: json.RawMessage(`{}`)}},
		"Missing required client capability: "+what+" needs the "+ext+" extension")
}

// ---- notifications ----

// ErrNotificationMethod is returned by Notify and Server.NotifyListeners
// for a method they do not send: empty, not visible ASCII, or one the
// specification defines.
var errNotificationMethod = errors.New("mcp: not an extension notification method")

func checkNotificationMethod(method string) error {
	if !methodNameRE.MatchString(method) || specNotifications[method] {
		return errNotificationMethod
	}
	return nil
}

// Notify sends a notification related to the request ctx belongs to, on
// that request's response stream (SSE on Streamable HTTP, the
// connection on a byte stream, the session's stream on an earlier
// revision), before its response: an extension's notification from a
// custom method's (or any) handler. params must encode as a JSON object
// (nil means {}). It is a no-op outside a request and once the request
// can no longer send (a context of Detach: a task after tasks.Start); it returns the stream's
// error when the client went away, and an error for a
// notification of the specification (use ReportProgress or NewLogHandler).
func Notify(ctx context.Context, method string, params any) error {
	if err := checkNotificationMethod(method); err != nil {
		return err
	}
	sc := scopeFrom(ctx)
	if sc == nil || sc.out == nil {
		return nil
	}
	raw, err := notificationParams(params)
	if err != nil {
		return err
	}
	return sc.out.notify(method, raw)
}

// notificationParams encodes params, which must be a JSON object.
func notificationParams(params any) (json.RawMessage, error) {
	if params == nil {
		return json.RawMessage(`{}`), nil
	}
	b, err := toRawJSON(params)
	if err != nil {
		return nil, err
	}
	if jsonrpc.KindOf(b) != jsonrpc.KindObject {
		return nil, errors.New("mcp: notification params must encode as a JSON object")
	}
	return b, nil
}

// extensionNote is an extension's notification for listen streams: its
// params split so that each stream's subscription id goes into _meta.
type extensionNote struct {
	method string
	meta   []byte // the members of the params' own _meta, without braces
	rest   []byte // the other members, without braces
}

func newExtensionNote(method string, params json.RawMessage) *extensionNote {
	n := &extensionNote{method: method}
	_ = jsonrpc.Fields(params, func(k, v []byte) error {
		if string(jsonrpc.Key(k)) == "_meta" && jsonrpc.KindOf(v) == jsonrpc.KindObject {
			_ = jsonrpc.Fields(v, func(mk, mv []byte) error {
				if string(jsonrpc.Key(mk)) == metaSubscriptionID {
					return nil // the stream's own goes there
				}
				n.meta = appendMember(n.meta, mk, mv)
				return nil
			})
			return nil
		}
		n.rest = appendMember(n.rest, k, v)
		return nil
	})
	return n
}

func appendMember(dst, k, v []byte) []byte {
	if len(dst) > 0 {
		dst = append(dst, ',')
	}
	dst = append(dst, '"')
	dst = append(dst, k...)
	dst = append(dst, `":`...)
	return append(dst, jsonrpc.TrimSpace(v)...)
}

// params returns the notification's params for the stream subID.
func (n *extensionNote) params(subID json.RawMessage) json.RawMessage {
	b := make([]byte, 0, 64+len(subID)+len(n.meta)+len(n.rest))
	b = append(b, `{"_meta":{"`+metaSubscriptionID+`":`...)
	b = append(b, subID...)
	if len(n.meta) > 0 {
		b = append(b, ',')
		b = append(b, n.meta...)
	}
	b = append(b, '}')
	if len(n.rest) > 0 {
		b = append(b, ',')
		b = append(b, n.rest...)
	}
	return append(b, '}')
}

// NotifyListeners sends an extension's notification, related to no
// request, to every subscriptions/listen stream of this instance whose
// request declared the extension in clientCapabilities.extensions, with
// the stream's subscription id added to _meta as on every listen
// notification. params must encode as a JSON object (nil means {}).
// Delivery is best effort, as for list changes: a stream that is more
// than 32 notifications behind does not get it, other instances of a
// fleet are not told (Fanout carries list changes only), and sessions of
// earlier revisions, which have no extensions, never get it. It returns
// an error for a notification of the specification, and an
// error for an invalid extension identifier or params.
func (s *Server) NotifyListeners(extension, method string, params any) error {
	if !validExtensionName(extension) {
		return fmt.Errorf("mcp: invalid extension identifier %q", extension)
	}
	if err := checkNotificationMethod(method); err != nil {
		return err
	}
	raw, err := notificationParams(params)
	if err != nil {
		return err
	}
	s.hub.publish(change{kind: changeExtension, ext: extension, note: newExtensionNote(method, raw)}, nil)
	return nil
}
