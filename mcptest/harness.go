package mcptest

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// Era is the protocol version a harness's client speaks: Modern, Legacy,
// or another version mcp.ClientOptions.ProtocolVersion accepts in
// mcp.ModePinned (such as "2025-06-18").
type Era string

// The two eras every server serves.
const (
	// Modern is 2026-07-28: no handshake, questions returned in
	// input_required results, the call sent again with the answers.
	Modern Era = mcp.LatestProtocolVersion
	// Legacy is 2025-11-25: an initialize handshake opens a session, and
	// the server asks its questions with live requests while the call is
	// open.
	Legacy Era = mcp.LegacyProtocolVersion
)

// Eras runs f as two subtests of t, named after the era: once in Modern
// and once in Legacy.
func Eras(t *testing.T, f func(t *testing.T, era Era)) {
	t.Helper()
	for _, era := range []Era{Modern, Legacy} {
		t.Run(string(era), func(t *testing.T) { f(t, era) })
	}
}

// Options configure a harness. A nil *Options is the zero value: the
// Modern era and a client with default options.
type Options struct {
	// Era is the version the client speaks. Empty means Modern.
	Era Era
	// Client holds options for the client (Info, Capabilities, Tasks,
	// LogLevel and OnLog, MaxRounds, Middleware, ...). The harness sets
	// Mode and ProtocolVersion from Era and replaces Elicitation,
	// Sampling and Roots with the script; its own middleware runs inside
	// the Middleware given here. Nil means the zero value.
	Client *mcp.ClientOptions
	// NoElicitation, NoURLElicitation, NoSampling and NoRoots drop a
	// capability from those the client declares (by default every kind
	// of question, elicitation in both modes): a client that cannot
	// answer that kind of question, to test a handler whose question is
	// optional (mcp.CanAsk). A question of a dropped kind is not answered
	// from the script.
	NoElicitation, NoURLElicitation, NoSampling, NoRoots bool
}

// capabilities are what the client declares: co's, or those of the
// script's handlers, less what o drops; nil when o drops nothing.
func (o *Options) capabilities(co *mcp.ClientOptions) *mcp.ClientCapabilities {
	if !o.NoElicitation && !o.NoURLElicitation && !o.NoSampling && !o.NoRoots {
		return co.Capabilities
	}
	empty := json.RawMessage(`{}`)
	caps := mcp.ClientCapabilities{
		Elicitation: &mcp.ElicitationCapabilities{Form: empty, URL: empty},
		Sampling:    &mcp.SamplingCapabilities{},
		Roots:       &mcp.RootsCapabilities{},
	}
	if co.SamplingTools {
		caps.Sampling.Tools = empty
	}
	if co.Capabilities != nil {
		caps = *co.Capabilities
	}
	switch {
	case o.NoElicitation:
		caps.Elicitation = nil
	case o.NoURLElicitation && caps.Elicitation != nil:
		e := *caps.Elicitation
		e.URL = nil
		if e.Form == nil {
			e.Form = empty
		}
		caps.Elicitation = &e
	}
	if o.NoSampling {
		caps.Sampling = nil
	}
	if o.NoRoots {
		caps.Roots = nil
	}
	return &caps
}

// Harness is a client connected to one *mcp.Server in memory, with a
// script of answers and a record of what crossed the pipe. Its methods
// are safe for concurrent use (CallTool, which may call Fatalf, only on
// the test's goroutine), but Rounds describes one call: with calls in
// flight at the same time, which call a question belongs to is not
// defined.
type Harness struct {
	// Client is connected to the server (the Legacy handshake is done).
	// Calls made with it directly are answered from the script and
	// recorded like those of CallTool.
	Client *mcp.Client

	t    testing.TB
	era  Era
	wire *recorder

	mu      sync.Mutex
	answers []Answer
	rounds  [][]Question
	call    *mcp.CallInfo // the call rounds describes
	leg     int           // the Round of its last leg sent (Modern)
}

// New serves srv on one end of an in-memory pipe and connects a client
// to the other end, speaking opts.Era. It fails the test (Fatalf) when
// the client cannot connect — the server refuses the era, or the era is
// no version the client speaks. The pipe is closed and the server's
// serving loop awaited when the test ends (t.Cleanup).
func New(t testing.TB, srv *mcp.Server, opts *Options) *Harness {
	t.Helper()
	if opts == nil {
		opts = &Options{}
	}
	h := &Harness{t: t, era: opts.Era, wire: &recorder{}}
	if h.era == "" {
		h.era = Modern
	}
	var co mcp.ClientOptions
	if opts.Client != nil {
		co = *opts.Client
	}
	co.Mode = mcp.ModePinned
	co.ProtocolVersion = string(h.era)
	co.Elicitation = h.elicit
	//lint:ignore SA1019 sampling, deprecated in 2026-07-28, is still served to the revisions that have it
	co.Sampling = h.sample
	//lint:ignore SA1019 roots, deprecated in 2026-07-28, is still served to the revisions that have it
	co.Roots = h.roots
	co.Middleware = append(slices.Clone(co.Middleware), h.middleware)
	co.Capabilities = opts.capabilities(&co)
	if opts.NoElicitation {
		co.Elicitation = nil
	}
	if opts.NoSampling {
		//lint:ignore SA1019 sampling, deprecated in 2026-07-28, is still served to the revisions that have it
		co.Sampling = nil
	}
	if opts.NoRoots {
		//lint:ignore SA1019 roots, deprecated in 2026-07-28, is still served to the revisions that have it
		co.Roots = nil
	}

	clientEnd, serverEnd := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- srv.ServeStream(ctx, h.wire.reader(serverEnd), h.wire.writer(serverEnd), nil)
	}()
	// The client gets the pipe's own end, so that it knows it is in
	// memory; the wire is recorded on the server's end.
	h.Client = mcp.NewClient(mcp.NewStreamClientTransport(clientEnd, nil), &co)
	t.Cleanup(func() {
		if t.Failed() {
			h.logWire()
		}
		h.Client.Close()
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Errorf("mcptest: the server still runs a request 10 s after the test ended")
		}
	})
	if err := h.Client.Connect(t.Context()); err != nil {
		t.Fatalf("mcptest: connecting in era %s: %v", h.era, err)
	}
	return h
}

// CallTool calls the tool name with args (nil, a map or a struct),
// answering the server's questions from the script, and returns its
// result. Any error fails the test (Fatalf); an isError result is a
// result. For a call whose error is the point of the test, use
// h.Client.CallTool, which is recorded the same way.
func (h *Harness) CallTool(name string, args any) *mcp.CallToolResult {
	h.t.Helper()
	res, err := h.Client.CallTool(h.t.Context(), name, args, nil)
	if errors.Is(err, errUnanswered) {
		h.t.Fatalf("mcptest: calling %s: a question had no answer (see above)", name)
	}
	if err != nil {
		h.t.Fatalf("mcptest: calling %s: %v", name, err)
	}
	return res
}

// Rounds returns the questions the last tools/call, prompts/get or
// resources/read asked, one slice per round, each in the order of the
// question keys; every Question holds what the script answered. A round
// is one input_required result in the Modern era and one live request
// in the Legacy era: a tool that asks three questions one after the
// other takes three rounds in both, while questions asked together
// (errors.Join) share one Modern round and take one Legacy round each.
// A call answered at once has no rounds.
func (h *Harness) Rounds() [][]Question {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([][]Question, 0, len(h.rounds))
	for _, r := range h.rounds {
		if len(r) > 0 {
			out = append(out, slices.Clone(r))
		}
	}
	return out
}

// Text returns the text blocks of r joined by newlines ("" for a nil
// result), for comparing a result with what a test expects.
func Text(r *mcp.CallToolResult) string {
	if r == nil {
		return ""
	}
	var parts []string
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// middleware notes the legs of every call: a new call starts a new
// record, and the questions answered after a Modern leg returned belong
// to that leg's round.
func (h *Harness) middleware(next mcp.ClientHandler) mcp.ClientHandler {
	return func(ctx context.Context, req *mcp.ClientRequest) (json.RawMessage, error) {
		if req.Call != nil {
			h.mu.Lock()
			if req.Call != h.call {
				h.call, h.rounds = req.Call, nil
			}
			h.leg = req.Call.Round
			h.mu.Unlock()
		}
		return next(ctx, req)
	}
}

// record adds q to the round it belongs to.
func (h *Harness) record(q Question) {
	h.mu.Lock()
	defer h.mu.Unlock()
	i := len(h.rounds) // Legacy: each live request is a round of its own
	if h.era == Modern {
		i = max(h.leg-1, 0)
	}
	for len(h.rounds) <= i {
		h.rounds = append(h.rounds, nil)
	}
	r := h.rounds[i]
	at, _ := slices.BinarySearchFunc(r, q.Key, func(q Question, k string) int { return strings.Compare(q.Key, k) })
	h.rounds[i] = slices.Insert(r, at, q)
}
