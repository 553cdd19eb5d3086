package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
	"github.com/roundtrip-mcp/roundtrip/requeststate"
)

// Asking for input in straight-line handler code: see "Asking for input"
// in the package documentation.

var (
	// ErrInputRequired matches the error an asking call returns while
	// its answer is not there yet. Return it (or an error wrapping it)
	// from the handler.
	ErrInputRequired = errors.New("mcp: input required")
	// ErrCannotAsk is returned by the asking functions outside a handler
	// that may ask (a static resource, a method other than tools/call,
	// prompts/get, resources/read of a template and a carrier custom
	// method, or a server with request-state sealing disabled).
	ErrCannotAsk = errors.New("mcp: this handler cannot ask for input")
)

// inputRequiredError names the question that is pending (by its text,
// worked out only when the message is read: every round makes one).
type inputRequiredError struct{ q *question }

func (e *inputRequiredError) Error() string {
	return "mcp: input required (" + labelOf(e.q.req, e.q.key) + ")"
}
func (e *inputRequiredError) Is(target error) bool { return target == ErrInputRequired }

// InvalidAnswerError reports an answer of the wrong kind, or content that
// fails the question's schema. A tool handler that returns it produces an
// isError result whose text is Error(), with the fields below in its
// _meta (InvalidAnswerMetaKey); a prompt or resource template, a -32602
// error with them in its data (see InvalidAnswerData). The details concern the client's own answer to a
// question it was shown, so nothing about request state is disclosed.
type InvalidAnswerError struct {
	// Key is the question's inputRequests key (a derived key is a hash of
	// the question; code may match it, people should not have to).
	Key string
	// Question is the text the user saw (an elicitation's message, the
	// last text of a sampling request), folded to one line and cut to 80
	// runes; "" when the question has none.
	Question string
	// Field is the form field at fault; "" when the answer as a whole is
	// (not an object, no action, an answer of another kind).
	Field string
	// Rule is what the field breaks: a schema keyword ("enum",
	// "minimum", "maximum", "minLength", "maxLength", "pattern",
	// "format", "required", "type", "minItems", "maxItems"), "case" for a
	// member differing from the field's name only in case, "repeated"
	// for a member sent twice; "" when Field is.
	Rule string
	// Detail says what is wrong, for a person: `region must be one of
	// "eu", "us" (got "asia")`.
	Detail string

	method string // the question's method; "" reads as an elicitation
}

// Error names the question by its text (by Key when it has none) and
// says what is wrong: `The answer to question "Which region?" is not
// valid: region must be one of "eu", "us" (got "asia").`
func (e *InvalidAnswerError) Error() string {
	s := "The answer to " + questionLabel(e.method, e.Question, e.Key) + " is not valid"
	if e.Detail != "" {
		return s + ": " + strings.TrimSuffix(e.Detail, ".") + "."
	}
	return s + "."
}

// data is the JSON-RPC error data of e (see InvalidAnswerData).
func (e *InvalidAnswerError) data() *InvalidAnswerData {
	return &InvalidAnswerData{Reason: "invalid_answer", Key: e.Key, Question: e.Question, Field: e.Field, Rule: e.Rule, Detail: e.Detail}
}

// InvalidAnswerData is the data of the -32602 error a prompt or resource
// template answers with for an *InvalidAnswerError (reason
// "invalid_answer") or a *NotAcceptedError (reason "not_accepted", with
// Action): the fields of the error, for a client that shows the
// question again.
type InvalidAnswerData struct {
	Reason   string       `json:"reason"`
	Key      string       `json:"key"`
	Question string       `json:"question,omitempty"`
	Field    string       `json:"field,omitempty"`
	Rule     string       `json:"rule,omitempty"`
	Detail   string       `json:"detail,omitempty"`
	Action   ElicitAction `json:"action,omitempty"`
}

// invalidAnswer is the error for an answer to q that failed its check
// with err; key is the key the answer came under (q's, or a task's
// renumbered one).
func (q *question) invalidAnswer(key string, err error) *InvalidAnswerError {
	e := &InvalidAnswerError{Key: key, Question: shortText(questionText(q.req), maxQuestionRunes), method: q.req.InputMethod()}
	var f *answerFault
	switch {
	case errors.As(err, &f):
		e.Field, e.Rule, e.Detail = cutRunes(f.field, maxFieldRunes), f.rule, f.detail
	case err != nil:
		e.Detail = strings.TrimPrefix(err.Error(), "mcp: ")
	}
	e.Detail = shortText(strings.ToValidUTF8(e.Detail, "\uFFFD"), maxDetailRunes)
	return e
}

// NotAcceptedError reports an elicitation the user declined or
// cancelled. A tool handler that returns it produces an isError result;
// a prompt or resource template, a -32602 error (both with an
// InvalidAnswerData, as InvalidAnswerError has).
type NotAcceptedError struct {
	// Key is the question's inputRequests key.
	Key    string
	Action ElicitAction
	// Question is the elicitation's message, folded to one line and cut
	// to 80 runes ("" when unknown: the message then names Key).
	Question string
}

// Error names the question by its text and says what the user did:
// `Question "Which region?" could not be answered: the elicitation was
// declined.`
func (e *NotAcceptedError) Error() string {
	past := "declined"
	if e.Action == ElicitCancel {
		past = "cancelled"
	}
	return "Question " + quotedQuestion(e.Question, e.Key) + " could not be answered: the elicitation was " + past + "."
}

// AskOption adjusts a question.
type AskOption func(*askOptions)

type askOptions struct {
	key           string
	elicitationID string // URL mode on a 2025-11-25 session (WithLegacyElicitationID)
}

// WithKey sets the key of a question in inputRequests instead of the
// derived one. Keys must be stable across deploys and instances.
func WithKey(key string) AskOption { return func(o *askOptions) { o.key = key } }

// question is one input request as sent.
type question struct {
	key    string
	req    InputRequest
	digest [8]byte
	// validate checks an answer; an error means the answer is unusable.
	validate func(raw json.RawMessage) error
	// elicitationID is sent with a URL elicitation on a legacy session.
	elicitationID string
	// id is questionID(idKey, digest), computed when the question was
	// rendered; idKey is "" when it was not (a key of the caller's).
	id    [8]byte
	idKey string
}

// questionID returns q's id under its key as it is now.
func (q *question) questionID() [8]byte {
	if q.idKey != "" && q.idKey == q.key {
		return q.id
	}
	return questionID(q.key, q.digest)
}

// asker answers questions. The modern asker records them for an
// InputRequiredResult; a legacy session's asker sends live requests.
type asker interface {
	ask(ctx context.Context, q *question) (json.RawMessage, error)
	// refuses returns why q would not reach the client (the error ask
	// would return at once), or nil.
	refuses(q *question) error
}

// CanAsk reports whether a question like r, asked with ctx, can reach
// the request's client, in either era: the client declared the
// capability r needs (elicitation, in form or URL mode as r's Mode says;
// sampling, with tools when r sets Tools or ToolChoice; roots) and, on a
// 2025 session, the session's revision defines r and its transport can
// carry a request to the client. A handler makes a question optional
// with it: ask only when CanAsk, and do without the answer otherwise.
// Outside a request that can ask it reports false.
func CanAsk(ctx context.Context, r InputRequest) bool {
	a := askerFrom(ctx)
	if a == nil || r == nil {
		return false
	}
	return a.refuses(&question{req: r}) == nil
}

type askerKey struct{}

func askerFrom(ctx context.Context) asker {
	if sc := scopeFrom(ctx); sc != nil && sc.asker != nil {
		return sc.asker
	}
	a, _ := ctx.Value(askerKey{}).(asker)
	return a
}

// newQuestion renders req, derives its digest and key.
func newQuestion(req InputRequest, opts []AskOption, validate func(json.RawMessage) error) (*question, error) {
	r, err := renderQuestion(req)
	if err != nil {
		return nil, err
	}
	return r.question(req, opts, validate), nil
}

// renderedQuestion is what a question's request renders to: the digest
// of its canonical JSON, the key derived from it, and the question id
// (questionID) under that key.
type renderedQuestion struct {
	digest [8]byte
	key    string
	id     [8]byte
}

// renderQuestion renders req: marshal, canonical form, SHA-256.
func renderQuestion(req InputRequest) (*renderedQuestion, error) {
	raw, err := marshalInputRequest(req)
	if err != nil {
		return nil, err
	}
	canon, err := requeststate.AppendCanonical(nil, raw)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(canon)
	r := &renderedQuestion{}
	copy(r.digest[:], sum[:8])
	var prefix string
	switch req.InputMethod() {
	case MethodElicit:
		prefix = "elicit_"
	case MethodCreateMessage:
		prefix = "sample_"
	case MethodListRoots:
		prefix = "roots_"
	}
	r.key = prefix + base64.RawURLEncoding.EncodeToString(sum[:6])
	r.id = questionID(r.key, r.digest)
	return r, nil
}

// question is a question asking req as r renders it, with opts applied.
func (r *renderedQuestion) question(req InputRequest, opts []AskOption, validate func(json.RawMessage) error) *question {
	var o askOptions
	for _, f := range opts {
		f(&o)
	}
	q := &question{req: req, validate: validate, key: o.key, elicitationID: o.elicitationID, digest: r.digest}
	if q.key == "" {
		q.key, q.id, q.idKey = r.key, r.id, r.key
	}
	return q
}

// Elicit[T] renders its question once per form type and message: the
// request is the form's schema (fixed per T) and the message, so the
// rendering is a pure function of the two and is kept in
// renderedElicits, keyed by both. The cache is bounded: at most
// maxRenderedElicits entries, each with a message of at most
// maxRenderedMessageBytes (a longer one, or one past the bound, is
// rendered on every call, as any other question is).
const (
	maxRenderedElicits      = 1024
	maxRenderedMessageBytes = 1 << 10
)

type elicitRenderKey struct {
	fs      *formSchema
	message string
}

var (
	renderedElicits  sync.Map // elicitRenderKey → *renderedQuestion
	renderedElicitsN atomic.Int32
)

// renderElicit renders the form elicitation of fs with message, from the
// cache when it can.
func renderElicit(fs *formSchema, req *ElicitRequest) (*renderedQuestion, error) {
	if len(req.Message) > maxRenderedMessageBytes {
		return renderQuestion(req)
	}
	k := elicitRenderKey{fs, req.Message}
	if v, ok := renderedElicits.Load(k); ok {
		return v.(*renderedQuestion), nil
	}
	r, err := renderQuestion(req)
	if err != nil {
		return nil, err
	}
	if renderedElicitsN.Add(1) <= maxRenderedElicits {
		if _, loaded := renderedElicits.LoadOrStore(k, r); loaded {
			renderedElicitsN.Add(-1)
		}
	} else {
		renderedElicitsN.Add(-1)
	}
	return r, nil
}

// missingCapability returns the -32021 error when the request did not
// declare what q needs, or nil.
func missingCapability(caps *ClientCapabilities, q *question) *Error {
	var need ClientCapabilities
	var name string
	switch r := q.req.(type) {
	case *ElicitRequest:
		if r.Mode == ElicitModeURL {
			if !caps.Elicitation.supportsURL() {
				need.Elicitation, name = &ElicitationCapabilities{URL: json.RawMessage(`{}`)}, "elicitation.url"
			}
		} else if !caps.Elicitation.supportsForm() {
			need.Elicitation, name = &ElicitationCapabilities{}, "elicitation"
		}
	case *CreateMessageRequest:
		switch {
		case caps.Sampling == nil && (r.Tools != nil || r.ToolChoice != nil):
			need.Sampling, name = &SamplingCapabilities{Tools: json.RawMessage(`{}`)}, "sampling.tools"
		case caps.Sampling == nil:
			need.Sampling, name = &SamplingCapabilities{}, "sampling"
		case (r.Tools != nil || r.ToolChoice != nil) && caps.Sampling.Tools == nil:
			need.Sampling, name = &SamplingCapabilities{Tools: json.RawMessage(`{}`)}, "sampling.tools"
		}
	case *ListRootsRequest:
		if caps.Roots == nil {
			need.Roots, name = &RootsCapabilities{}, "roots"
		}
	}
	if name == "" {
		return nil
	}
	return MissingCapabilityError(need, "Client did not declare the "+name+" capability required by "+labelOf(q.req, q.key))
}

var errMixedForms = jsonrpcError(CodeInternalError, "Internal error: the handler both asked through the asking API and returned its own InputRequiredResult; a call has one inputResponses/requestState channel, so use one form")

// askMiddleware installs the asking API for the handlers that may ask:
// tools, prompts and resource templates (a static resource cannot ask,
// by its handler's type). It sits just inside the request-state
// boundary, so the answers and questions it keeps in the state are
// sealed on the way out. The era decides how a question is answered: a
// multi round-trip scope that turns the questions still open into an
// InputRequiredResult when the handler unwinds, or live requests on a
// session.
func (srv *Server) askMiddleware(next ServerHandler) ServerHandler {
	return func(ctx context.Context, method string, params Params) (Result, error) {
		sc := scopeFrom(ctx)
		rp, caps := srv.askable(params)
		if sc == nil || rp == nil {
			return next(ctx, method, params)
		}
		as := sc.era.installAsker(sc, caps, rp)
		res, err := next(ctx, method, params)
		if as != nil {
			return as.finish(res, err)
		}
		if irr, ok := res.(*InputRequiredResult); ok && err == nil && irr != nil {
			// A low-level handler's own input requests, on an era that
			// asks otherwise (live requests on a session).
			return sc.era.resolveInput(ctx, sc, irr, rp, func() (Result, error) { return next(ctx, method, params) })
		}
		return res, err
	}
}

// askable returns what the asker of a request needs, or nil when its
// handler cannot ask.
func (srv *Server) askable(params Params) (*retryParams, *ClientCapabilities) {
	switch p := params.(type) {
	case *CallToolRequest:
		return &p.retryParams, &p.Meta.ClientCapabilities
	case *GetPromptRequest:
		return &p.retryParams, &p.Meta.ClientCapabilities
	case *ReadResourceRequest:
		if r, _ := srv.resources.get(p.URI); r != nil {
			return nil, nil
		}
		return &p.retryParams, &p.Meta.ClientCapabilities
	case *ExtensionRequest: // a carrier custom method (extension.go)
		if p.m != nil && p.m.spec.Carrier {
			return &p.retryParams, &p.Meta.ClientCapabilities
		}
	}
	return nil, nil
}

// askOutcomeError maps the asking API's errors for methods without an
// isError result (prompts, resources).
func askOutcomeError(err error) error {
	if d := answerData(err); d != nil {
		return jsonrpc.NewErrorData(CodeInvalidParams, err.Error(), d)
	}
	return err
}

// InvalidAnswerMetaKey names the _meta member of the isError result a
// tool answers with for an *InvalidAnswerError or a *NotAcceptedError:
// an InvalidAnswerData, as a prompt's or resource's error data carries.
const InvalidAnswerMetaKey = "com.github.roundtrip-mcp/invalidAnswer"

// answerData is the InvalidAnswerData of the asking API's errors, nil for
// any other error.
func answerData(err error) *InvalidAnswerData {
	var ia *InvalidAnswerError
	if errors.As(err, &ia) {
		return ia.data()
	}
	var na *NotAcceptedError
	if errors.As(err, &na) {
		return &InvalidAnswerData{Reason: "not_accepted", Key: na.Key, Question: na.Question, Action: na.Action}
	}
	return nil
}

// ---- the modern asker ----

// storedAnswer is an answer carried in the state. id pins it to the
// question's key and exact text; raw is the answer as the client sent it
// (elicitation answers are kept as action + raw content, see
// compactAnswer).
type storedAnswer struct {
	id  [8]byte
	raw json.RawMessage
}

// askScope is the modern asker of one handler run.
type askScope struct {
	caps      *ClientCapabilities
	responses InputResponses
	prior     map[[8]byte]json.RawMessage // answers carried in the state, by question id
	asked     map[[8]byte]bool            // question ids of the previous round

	mu       sync.Mutex
	used     bool
	seen     map[[8]byte]int // occurrences of a question in this run
	keys     map[string][8]byte
	answered []storedAnswer // carried forward, in ask order
	pending  []*question    // still unanswered, in ask order
}

// questionID pins a key to a question: the first 8 bytes of
// SHA-256(key || 0 || question digest).
func questionID(key string, digest [8]byte) (id [8]byte) {
	h := sha256.New()
	h.Write([]byte(key))
	h.Write([]byte{0})
	h.Write(digest[:])
	var sum [sha256.Size]byte
	copy(id[:], h.Sum(sum[:0]))
	return id
}

func (s *askScope) init(caps *ClientCapabilities, responses InputResponses, state []byte) {
	s.caps, s.responses = caps, responses
	s.prior, s.asked = decodeAskState(state)
}

func (s *askScope) refuses(q *question) error {
	if e := missingCapability(s.caps, q); e != nil {
		return e
	}
	return nil
}

func (s *askScope) ask(ctx context.Context, q *question) (json.RawMessage, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.used = true
	if s.seen == nil {
		s.seen, s.keys = map[[8]byte]int{}, map[string][8]byte{}
	}
	// The n-th identical question of a run is its own question.
	if n := s.seen[q.digest]; n > 0 {
		q.key += "_" + strconv.Itoa(n+1)
	}
	s.seen[q.digest]++
	if d, dup := s.keys[q.key]; dup && d != q.digest {
		return nil, fmt.Errorf("mcp: two different questions asked under key %q (the second: %s)", q.key, labelOf(q.req, q.key))
	}
	s.keys[q.key] = q.digest
	if e := missingCapability(s.caps, q); e != nil {
		return nil, e
	}
	id := q.questionID()
	// An answer stored in the state counts only for the same question
	// under the same key.
	if raw, ok := s.prior[id]; ok && q.validate(raw) == nil {
		s.answered = append(s.answered, storedAnswer{id, raw})
		return raw, nil
	}
	// A fresh answer counts only if the previous round asked exactly this.
	if s.asked[id] {
		if raw, ok := s.responses[q.key]; ok && string(raw) != "null" {
			if err := q.validate(raw); err != nil {
				return nil, q.invalidAnswer(q.key, err)
			}
			s.answered = append(s.answered, storedAnswer{id, raw})
			return raw, nil
		}
	}
	s.pending = append(s.pending, q)
	return nil, &inputRequiredError{q: q}
}

// finish turns the handler's outcome into the response: pending
// questions become an InputRequiredResult whose state carries the
// answers of this run and the digests of the new questions.
func (s *askScope) finish(res Result, err error) (Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if irr, ok := res.(*InputRequiredResult); ok && irr != nil && s.used {
		return nil, errMixedForms
	}
	if err == nil || !errors.Is(err, ErrInputRequired) {
		return res, err
	}
	if len(s.pending) == 0 {
		return nil, fmt.Errorf("handler returned ErrInputRequired without a pending question: %w", err)
	}
	irr := &InputRequiredResult{InputRequests: make(map[string]InputRequest, len(s.pending))}
	for _, q := range s.pending {
		irr.InputRequests[q.key] = q.req
	}
	irr.askState = encodeAskState(s.answered, s.pending)
	return irr, nil
}

// Asker state, inside the sealed requestState (binary, version 2):
//
//	version byte (2)
//	uvarint n; n × (8-byte question id, kind byte, uvarint length, data)
//	uvarint m; m × 8-byte question id (the questions pending)
//
// kind 0: data is the answer JSON as the client sent it; kinds 1, 2, 3:
// an elicitation answer with action accept, decline or cancel, data the
// raw "content" JSON (accept) or empty. The question id (questionID) pins
// key and question text together, so no key or question is stored. A
// state that does not decode is no progress, not an error.
const askStateVersion = 2

var actionKinds = [...]ElicitAction{1: ElicitAccept, 2: ElicitDecline, 3: ElicitCancel}

// compactAnswer splits an elicitation answer into kind and content.
func compactAnswer(raw json.RawMessage) (kind byte, data []byte) {
	var action string
	var content []byte
	extra := false
	err := jsonrpc.Fields(raw, func(k, v []byte) error {
		switch string(k) {
		case "action":
			action, _ = jsonrpc.String(v)
		case "content":
			content = v
		default:
			extra = true
		}
		return nil
	})
	if err != nil || extra {
		return 0, raw
	}
	for i, a := range actionKinds {
		if i > 0 && string(a) == action && (a == ElicitAccept || content == nil) {
			return byte(i), content
		}
	}
	return 0, raw
}

func expandAnswer(kind byte, data []byte) json.RawMessage {
	if kind == 0 {
		return data
	}
	b := make([]byte, 0, 32+len(data))
	b = append(b, `{"action":"`...)
	b = append(b, actionKinds[kind]...)
	b = append(b, '"')
	if data != nil {
		b = append(b, `,"content":`...)
		b = append(b, data...)
	}
	return append(b, '}')
}

func encodeAskState(answered []storedAnswer, pending []*question) []byte {
	size := 3 + 8*len(pending)
	for _, a := range answered {
		size += 12 + len(a.raw)
	}
	b := make([]byte, 0, size)
	b = append(b, askStateVersion)
	b = binary.AppendUvarint(b, uint64(len(answered)))
	for _, a := range answered {
		b = append(b, a.id[:]...)
		kind, data := compactAnswer(a.raw)
		b = append(b, kind)
		b = binary.AppendUvarint(b, uint64(len(data)))
		b = append(b, data...)
	}
	b = binary.AppendUvarint(b, uint64(len(pending)))
	for _, q := range pending {
		id := q.questionID()
		b = append(b, id[:]...)
	}
	return b
}

func decodeAskState(p []byte) (map[[8]byte]json.RawMessage, map[[8]byte]bool) {
	if len(p) == 0 || p[0] != askStateVersion {
		return nil, nil
	}
	p = p[1:]
	n, k := binary.Uvarint(p)
	if k <= 0 || n > uint64(len(p)) {
		return nil, nil
	}
	p = p[k:]
	prior := make(map[[8]byte]json.RawMessage, n)
	for i := uint64(0); i < n; i++ {
		if len(p) < 9 {
			return nil, nil
		}
		var id [8]byte
		copy(id[:], p)
		kind := p[8]
		l, k := binary.Uvarint(p[9:])
		if k <= 0 || int(kind) >= len(actionKinds) || l > uint64(len(p)-9-k) {
			return nil, nil
		}
		data := p[9+k : 9+k+int(l)]
		if (kind == 0 || len(data) > 0) && !jsonrpc.Valid(data) {
			return nil, nil
		}
		if kind != 0 && len(data) == 0 {
			data = nil
		}
		prior[id] = expandAnswer(kind, data)
		p = p[9+k+int(l):]
	}
	m, k := binary.Uvarint(p)
	if k <= 0 || m > uint64(len(p)) {
		return nil, nil
	}
	p = p[k:]
	if uint64(len(p)) != 8*m {
		return nil, nil
	}
	asked := make(map[[8]byte]bool, m)
	for ; len(p) >= 8; p = p[8:] {
		var id [8]byte
		copy(id[:], p)
		asked[id] = true
	}
	return prior, asked
}

// ---- the asking functions ----

// askRaw asks req through the asker of ctx. fs is the form of an
// Elicit[T] request (nil for any other): its rendering is then cached
// (renderElicit).
func askRaw(ctx context.Context, req InputRequest, fs *formSchema, opts []AskOption, validate func(json.RawMessage) error) (json.RawMessage, string, error) {
	a := askerFrom(ctx)
	if a == nil {
		return nil, "", ErrCannotAsk
	}
	var r *renderedQuestion
	var err error
	if e, ok := req.(*ElicitRequest); ok && fs != nil {
		r, err = renderElicit(fs, e)
	} else {
		r, err = renderQuestion(req)
	}
	if err != nil {
		return nil, "", err
	}
	q := r.question(req, opts, validate)
	raw, err := a.ask(ctx, q)
	return raw, q.key, err
}

// Elicited is the outcome of a form elicitation: the user's action and,
// when accepted, the form's content decoded into T.
type Elicited[T any] struct {
	Key     string
	Action  ElicitAction
	Content T

	message string // the question's text, for Value's error
}

// Accepted reports whether the user submitted the form.
func (e Elicited[T]) Accepted() bool { return e.Action == ElicitAccept }

// Value returns the content when accepted, and a *NotAcceptedError
// otherwise: return that error from a tool handler that does not care
// about declines to answer with an isError result.
func (e Elicited[T]) Value() (T, error) {
	if e.Action != ElicitAccept {
		var zero T
		return zero, &NotAcceptedError{Key: e.Key, Action: e.Action, Question: shortText(e.message, maxQuestionRunes)}
	}
	return e.Content, nil
}

// Elicit asks the user to fill a form whose flat JSON Schema is derived
// from T, a struct of string, number, integer and boolean fields (and
// string slices with an enum), or pointers to them. Field names follow
// json tags; a `jsonschema:"..."` tag gives the description; an
// `mcp:"..."` tag adds what the restricted schema allows, options
// separated by commas: title=, description=, enum=a|b, format= (email,
// uri, date, date-time), default= (a|b for a list), minimum= and
// maximum= (numbers), minLength= and maxLength= (strings), minItems= and
// maxItems= (lists), required or optional, and pattern= last (it takes
// the rest of the tag, commas included), as in
// `mcp:"minimum=1,maximum=20"` for a party of at most 20. A field is
// required unless it is a pointer, has omitempty or says optional; an
// optional field not answered decodes as nil (a pointer) or its zero
// value.
//
// An accepted answer is checked (types, enums, formats, required fields)
// and decoded into T exactly as it was checked: a repeated member, or one
// that differs from a field's name only in case (as encoding/json would
// fold it: "REGION", "regionſ"), makes it an *InvalidAnswerError, and
// members T does not declare are dropped before decoding. See the
// package notes on asking: the handler runs again on every round.
func Elicit[T any](ctx context.Context, message string, opts ...AskOption) (Elicited[T], error) {
	out := Elicited[T]{message: message}
	fs, err := formSchemaFor[T]()
	if err != nil {
		return out, err
	}
	req := &ElicitRequest{Mode: ElicitModeForm, Message: message, RequestedSchema: fs.raw}
	// The answer validated last is the one returned: keep its decoding.
	var r *ElicitResult
	var content json.RawMessage
	_, key, err := askRaw(ctx, req, fs, opts, func(raw json.RawMessage) error {
		var err error
		if r, content, err = decodeElicit(raw); err != nil {
			return err
		}
		return fs.check(r)
	})
	out.Key = key
	if err != nil {
		return out, err
	}
	out.Action = r.Action
	if r.Action == ElicitAccept && content != nil {
		if err := json.Unmarshal(fs.declaredContent(content), &out.Content); err != nil {
			return out, unfitAnswer(key, message, err)
		}
	}
	return out, nil
}

// ElicitForm asks the user to fill a form described by schema, a flat JSON
// Schema object ({"type":"object","properties":{...},"required":[...]})
// passed to the client as is: use it when Elicit[T] cannot express the
// form, for default values (SEP-1034), titled enums (oneOf/anyOf with
// const and title, SEP-1330), legacy enumNames, length or range limits,
// patterns. Both eras: an InputRequiredResult round on 2026-07-28, a live
// request on a 2025-11-25 session.
//
// The schema must stay inside the specification's restricted elicitation
// schema (PrimitiveSchemaDefinition properties), plus pattern: an error
// is returned, and nothing asked, for any other keyword, a format other
// than email, uri, date and date-time, a pattern Go's regexp (RE2) cannot
// compile, or a required name that is not a property. pattern is matched
// with RE2 semantics, which differ from ECMA-262's (no lookaround or
// backreferences).
//
// An accepted answer must satisfy every keyword of the schema — type,
// enum and titled enums, multi-select items and minItems/maxItems,
// minLength/maxLength (in code points), pattern, format,
// minimum/maximum, required — or it is an *InvalidAnswerError. A
// repeated member, or one that differs from a property's name only in
// case (under encoding/json's folding), is invalid too. Members the
// schema does not declare are dropped: Content holds the declared
// properties only. Decline and cancel are values in the result's Action,
// with no Content.
func ElicitForm(ctx context.Context, message string, schema json.RawMessage, opts ...AskOption) (*ElicitResult, error) {
	fs, err := formSchemaFromRaw(schema)
	if err != nil {
		return nil, err
	}
	req := &ElicitRequest{Mode: ElicitModeForm, Message: message, RequestedSchema: schema}
	// The answer validated last is the one returned: keep its decoding.
	var r *ElicitResult
	_, _, err = askRaw(ctx, req, nil, opts, func(raw json.RawMessage) error {
		var err error
		if r, _, err = decodeElicit(raw); err != nil {
			return err
		}
		return fs.check(r)
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// ElicitURL asks the user to visit url (URL-mode elicitation) and
// returns their action. Accept means consent only: check the outcome of
// the out-of-band interaction yourself before going on.
func ElicitURL(ctx context.Context, message, url string, opts ...AskOption) (ElicitAction, error) {
	req := &ElicitRequest{Mode: ElicitModeURL, Message: message, URL: url}
	raw, _, err := askRaw(ctx, req, nil, opts, func(raw json.RawMessage) error {
		_, err := decodeElicitResult(raw)
		return err
	})
	if err != nil {
		return "", err
	}
	r, _ := decodeElicitResult(raw)
	return r.Action, nil
}

// Sample asks the client's LLM for a message. Setting Tools or
// ToolChoice needs the client's sampling.tools capability.
//
// Deprecated: sampling is deprecated in 2026-07-28 (SEP-2577) and may be
// removed from a revision after 2027-07-28; it still works with every
// client that declares it. New servers should call a model they have
// access to themselves, and ask the user what only the user knows with
// Elicit.
func Sample(ctx context.Context, req *CreateMessageRequest, opts ...AskOption) (*CreateMessageResult, error) {
	if req == nil || len(req.Messages) == 0 || req.MaxTokens <= 0 {
		return nil, errors.New("mcp: Sample needs messages and a positive MaxTokens")
	}
	raw, _, err := askRaw(ctx, req, nil, opts, func(raw json.RawMessage) error {
		_, err := InputResponses{"": raw}.Sampling("")
		return err
	})
	if err != nil {
		return nil, err
	}
	return InputResponses{"": raw}.Sampling("")
}

// ListRoots asks for the client's roots.
//
// Deprecated: roots are deprecated in 2026-07-28 (SEP-2577) and may be
// removed from a revision after 2027-07-28; it still works with every
// client that declares them. New servers should take the paths or URIs
// they work on as tool arguments, or ask for them with Elicit.
func ListRoots(ctx context.Context, opts ...AskOption) ([]Root, error) {
	raw, _, err := askRaw(ctx, &ListRootsRequest{}, nil, opts, func(raw json.RawMessage) error {
		_, err := InputResponses{"": raw}.Roots("")
		return err
	})
	if err != nil {
		return nil, err
	}
	r, err := InputResponses{"": raw}.Roots("")
	if err != nil {
		return nil, err
	}
	return r.Roots, nil
}

// unfitAnswer is the error for an answer to Elicit[T] that passed the
// form but does not decode into T (a number too large for its field's
// Go type).
func unfitAnswer(key, message string, err error) *InvalidAnswerError {
	e := &InvalidAnswerError{Key: key, Question: shortText(message, maxQuestionRunes), method: MethodElicit, Detail: "it does not fit the form's Go type"}
	var ute *json.UnmarshalTypeError
	if errors.As(err, &ute) && ute.Field != "" {
		e.Field, e.Rule = ute.Field, "type"
		e.Detail = fieldName(ute.Field) + " does not fit in a " + ute.Type.String() + " (got " + ute.Value + ")"
	}
	return e
}
