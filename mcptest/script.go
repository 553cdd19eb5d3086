package mcptest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// Question is one question the server asked, as the client received it.
type Question struct {
	// Method is the kind of question: mcp.MethodElicit,
	// mcp.MethodCreateMessage or mcp.MethodListRoots.
	Method string
	// Key is the question's key in inputRequests (derived from the
	// question, or set with mcp.WithKey). A Legacy live request has
	// none: Key is empty there.
	Key string
	// Text is what the question says: an elicitation's message, the text
	// of the last message of a sampling request; empty for roots.
	Text string
	// Request is the question itself: an *mcp.ElicitRequest, an
	// *mcp.CreateMessageRequest or an *mcp.ListRootsRequest.
	Request mcp.InputRequest
	// Answer is what the script answered: an *mcp.ElicitResult, an
	// *mcp.CreateMessageResult or an *mcp.ListRootsResult, or nil when
	// no answer fitted (the test failed then).
	Answer any
}

// Match says which questions an answer answers. The zero Match (Any)
// fits every question of the answer's kind.
type Match struct {
	desc string
	fits func(q *Question) bool
}

// Any fits every question of the answer's kind.
var Any = Match{desc: "any question"}

// Prefix fits the questions whose text starts with prefix.
func Prefix(prefix string) Match {
	return Match{desc: fmt.Sprintf("text prefix %q", prefix), fits: func(q *Question) bool {
		return strings.HasPrefix(q.Text, prefix)
	}}
}

// Regexp fits the questions whose text matches pattern (Go regexp
// syntax, unanchored). It panics when pattern does not compile, like
// regexp.MustCompile.
func Regexp(pattern string) Match {
	re := regexp.MustCompile(pattern)
	return Match{desc: fmt.Sprintf("text matching %q", pattern), fits: func(q *Question) bool {
		return re.MatchString(q.Text)
	}}
}

// Field fits the form elicitations whose requested schema has a property
// named name, whatever their message says.
func Field(name string) Match {
	return Match{desc: fmt.Sprintf("form field %q", name), fits: func(q *Question) bool {
		return slices.Contains(fields(q.Request), name)
	}}
}

// Key fits the question with this inputRequests key. Legacy live
// requests have no key, so a Key match fits nothing in the Legacy era;
// a test run in both eras matches by text or field instead.
func Key(key string) Match {
	return Match{desc: fmt.Sprintf("key %q", key), fits: func(q *Question) bool {
		return q.Key != "" && q.Key == key
	}}
}

// Matcher is what the answer constructors take to say which questions
// they answer: a string, which fits the questions whose text is exactly
// that, or a Match.
type Matcher interface{ string | Match }

func toMatch[M Matcher](m M) Match {
	switch m := any(m).(type) {
	case string:
		return Match{desc: fmt.Sprintf("text %q", m), fits: func(q *Question) bool { return q.Text == m }}
	case Match:
		return m
	}
	panic("unreachable")
}

// Answer is one entry of a harness's script: the kind of question it
// answers, which ones (its Match), and the answer. Build one with
// Elicit, Decline, Cancel, Sample, Roots or Reply.
type Answer struct {
	method string
	match  Match
	reply  func() any // a fresh result for each question
}

// Elicit accepts the elicitations match fits with content (nil for a
// URL-mode elicitation, which carries none). Fields content leaves out
// get the schema's defaults, as from any client.
func Elicit[M Matcher](match M, content map[string]any) Answer {
	return Answer{method: mcp.MethodElicit, match: toMatch(match), reply: func() any {
		return &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: maps.Clone(content)}
	}}
}

// Decline declines the elicitations match fits.
func Decline[M Matcher](match M) Answer {
	return Answer{method: mcp.MethodElicit, match: toMatch(match), reply: func() any {
		return &mcp.ElicitResult{Action: mcp.ElicitDecline}
	}}
}

// Cancel cancels the elicitations match fits (the user dismissed them).
func Cancel[M Matcher](match M) Answer {
	return Answer{method: mcp.MethodElicit, match: toMatch(match), reply: func() any {
		return &mcp.ElicitResult{Action: mcp.ElicitCancel}
	}}
}

// Sample answers the sampling requests match fits with one assistant
// message holding text, from the model "mcptest".
func Sample[M Matcher](match M, text string) Answer {
	return Answer{method: mcp.MethodCreateMessage, match: toMatch(match), reply: func() any {
		return &mcp.CreateMessageResult{Role: mcp.RoleAssistant, Content: []mcp.Content{&mcp.TextContent{Text: text}},
			Model: "mcptest", StopReason: "endTurn"}
	}}
}

// Roots answers every roots request with roots of these URIs (none:
// an empty list). Use Reply for roots with names, or per key.
func Roots(uris ...string) Answer {
	return Answer{method: mcp.MethodListRoots, match: Any, reply: func() any {
		roots := make([]mcp.Root, len(uris))
		for i, u := range uris {
			roots[i] = mcp.Root{URI: u}
		}
		return &mcp.ListRootsResult{Roots: roots}
	}}
}

// Result is the type of an answer Reply gives: its type says which kind
// of question it answers.
type Result interface {
	*mcp.ElicitResult | *mcp.CreateMessageResult | *mcp.ListRootsResult
}

// Reply answers the questions match fits with r as it is: the questions
// of r's kind (elicitations for an *mcp.ElicitResult, and so on). r is
// shared by every question it answers and must not be changed after.
func Reply[M Matcher, R Result](match M, r R) Answer {
	a := Answer{match: toMatch(match), reply: func() any { return r }}
	switch any(r).(type) {
	case *mcp.ElicitResult:
		a.method = mcp.MethodElicit
	case *mcp.CreateMessageResult:
		a.method = mcp.MethodCreateMessage
	case *mcp.ListRootsResult:
		a.method = mcp.MethodListRoots
	}
	return a
}

// Answer adds answers to the end of the script. A question is answered
// by the first answer in the script that is of its kind and fits it;
// answers stay in the script and answer every question they fit, in
// this call and later ones. Answers added while a call runs answer the
// questions asked after.
func (h *Harness) Answer(answers ...Answer) {
	h.mu.Lock()
	h.answers = append(h.answers, answers...)
	h.mu.Unlock()
}

func (h *Harness) elicit(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	res, err := h.ask(ctx, Question{Method: mcp.MethodElicit, Text: r.Message, Request: r})
	if err != nil {
		return nil, err
	}
	return res.(*mcp.ElicitResult), nil
}

func (h *Harness) sample(ctx context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	res, err := h.ask(ctx, Question{Method: mcp.MethodCreateMessage, Text: lastText(r), Request: r})
	if err != nil {
		return nil, err
	}
	return res.(*mcp.CreateMessageResult), nil
}

func (h *Harness) roots(ctx context.Context, r *mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	res, err := h.ask(ctx, Question{Method: mcp.MethodListRoots, Request: r})
	if err != nil {
		return nil, err
	}
	return res.(*mcp.ListRootsResult), nil
}

// ask answers q from the script and records it; a question the script
// cannot answer fails the test and the client's answer.
func (h *Harness) ask(ctx context.Context, q Question) (any, error) {
	if h.era == Modern {
		q.Key = mcp.InputRequestKey(ctx)
	}
	h.mu.Lock()
	var kind []string
	for _, a := range h.answers {
		if a.method != q.Method {
			continue
		}
		if a.match.fits == nil || a.match.fits(&q) {
			q.Answer = a.reply()
			break
		}
		kind = append(kind, a.match.desc)
	}
	h.mu.Unlock()
	h.record(q)
	if q.Answer == nil {
		h.t.Errorf("%s", unanswered(&q, kind))
		return nil, fmt.Errorf("%w: %s", errUnanswered, describe(&q))
	}
	return q.Answer, nil
}

// errUnanswered is the client's error for a question the script cannot
// answer.
var errUnanswered = errors.New("mcptest: the script has no answer")

// unanswered says which question had no answer, what the script holds
// for its kind, and how to answer it.
func unanswered(q *Question, kind []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "mcptest: no answer in the script for %s", describe(q))
	if len(kind) > 0 {
		fmt.Fprintf(&b, "; the script's answers of this kind fit %s", strings.Join(kind, ", "))
	}
	b.WriteString("; answer it with h.Answer(")
	switch q.Method {
	case mcp.MethodElicit:
		fmt.Fprintf(&b, "mcptest.Elicit(%q, ...)", q.Text)
	case mcp.MethodCreateMessage:
		fmt.Fprintf(&b, "mcptest.Sample(%q, ...)", q.Text)
	default:
		b.WriteString("mcptest.Roots(...)")
	}
	b.WriteString(")")
	return b.String()
}

// describe names a question in a failure message.
func describe(q *Question) string {
	s := q.Method
	if q.Text != "" {
		s += fmt.Sprintf(" %q", q.Text)
	}
	if f := fields(q.Request); len(f) > 0 {
		s += " (fields " + strings.Join(f, ", ") + ")"
	}
	if q.Key != "" {
		s += " (key " + q.Key + ")"
	}
	return s
}

// fields returns the property names of a form elicitation's schema,
// sorted.
func fields(r mcp.InputRequest) []string {
	er, ok := r.(*mcp.ElicitRequest)
	if !ok || er.RequestedSchema == nil {
		return nil
	}
	raw, ok := er.RequestedSchema.(json.RawMessage)
	if !ok {
		var err error
		if raw, err = json.Marshal(er.RequestedSchema); err != nil {
			return nil
		}
	}
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(raw, &s) != nil {
		return nil
	}
	return slices.Sorted(maps.Keys(s.Properties))
}

// lastText returns the text blocks of a sampling request's last message.
func lastText(r *mcp.CreateMessageRequest) string {
	if len(r.Messages) == 0 {
		return ""
	}
	var parts []string
	for _, c := range r.Messages[len(r.Messages)-1].Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}
