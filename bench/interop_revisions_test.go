//lint:file-ignore SA1019 the peers' sampling and roots APIs are deprecated in 2026-07-28 but are what clients of the earlier revisions speak

package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// TestInteropAtEveryRevision crosses the SDKs on sessions of every
// protocol revision before 2026-07-28, over Streamable HTTP and over the
// HTTP+SSE transport of 2024-11-05. Subtests are named
// <client>/<server>/<transport>/<revision>, with one subtest per tool
// below them.
//
// go-sdk's and mcp-go's clients, pinned to each revision, call a
// roundtrip server's tools that ask the client with the asking API:
// Sample and ListRoots become live server-to-client requests, two
// dependent Sample calls become two successive live requests within one
// run of the handler, and a low-level handler's own InputRequiredResult
// is bridged (its sampling request goes live, the handler runs again with
// the answer and its plaintext state). Elicitation, which 2025-03-26 and
// 2024-11-05 do not define, answers with an isError result naming the
// revision. roundtrip's client, pinned to each revision, calls go-sdk's
// and mcp-go's servers, whose tools sample and list roots through their
// own session APIs.
//
// A peer's real limits skip the subtests they rule out, with the place in
// the peer's code that says so.
func TestInteropAtEveryRevision(t *testing.T) {
	for _, client := range revClients {
		for _, tr := range []string{"http", "sse"} {
			for _, version := range interopRevisions {
				t.Run(client.name+"-client/roundtrip-server/"+tr+"/"+version, func(t *testing.T) {
					srv, runs := rtRevisionServer()
					var h http.Handler
					if tr == "sse" {
						h = mcp.NewSSEHandler(srv, nil)
					} else {
						h = mcp.NewHTTPHandler(srv, nil)
					}
					url := serveHTTP(t, h)
					rec := &samplingRecorder{}
					c := client.connect(t, url, tr, version, rec)
					defer c.close()
					if c.version != version {
						t.Fatalf("negotiated %q, pinned %q", c.version, version)
					}
					roundtripServerCalls(t, c, client.limits(tr, version), rec, runs, version)
				})
			}
		}
	}

	for _, server := range revServers {
		for _, tr := range []string{"http", "sse"} {
			for _, version := range interopRevisions {
				t.Run("roundtrip-client/"+server.name+"-server/"+tr+"/"+version, func(t *testing.T) {
					url := serveHTTP(t, server.handler(tr))
					if tr == "sse" {
						url = strings.TrimSuffix(url, "/mcp") + server.ssePath
					}
					rec := &samplingRecorder{}
					c := rtRevisionClient(url, tr, version, rec)
					defer c.Close()
					ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
					defer cancel()
					if err := c.Connect(ctx); err != nil {
						t.Fatal(err)
					}
					if v := c.ProtocolVersion(); v != version {
						t.Fatalf("negotiated %q, pinned %q", v, version)
					}
					rc := revCaller{version: version, close: c.Close, call: func(ctx context.Context, tool, text string) (string, bool, error) {
						return rtCallText(ctx, c, tool, text)
					}}
					peerServerCalls(t, rc, server.limits(tr), rec)
				})
			}
		}
	}
}

// interopRevisions are the session revisions, newest first.
var interopRevisions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// hasElicitation reports whether revision defines elicitation/create
// (added in 2025-06-18).
func hasElicitation(revision string) bool { return revision >= "2025-06-18" }

// The answers every client of this test gives: a sampling handler that
// replies "re: " and the text of the last message it was sent, and two
// roots.
const sampleModel = "bench-model"

func sampleReply(prompt string) string { return "re: " + prompt }

var interopRoots = [][2]string{{"a", "file:///work/a"}, {"b", "file:///work/b"}}

// rootsText is what a tool that lists the roots answers with.
const rootsText = "a=file:///work/a,b=file:///work/b"

// samplingRecorder records the prompts a client's sampling handler was
// sent, in order.
type samplingRecorder struct {
	mu      sync.Mutex
	prompts []string
}

func (r *samplingRecorder) add(p string) string {
	r.mu.Lock()
	r.prompts = append(r.prompts, p)
	r.mu.Unlock()
	return sampleReply(p)
}

// take returns the prompts recorded since the last take.
func (r *samplingRecorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.prompts
	r.prompts = nil
	return p
}

// revCaller is one client bound to one server on a session of version.
type revCaller struct {
	version string // as negotiated
	// call calls tool with arguments {"text": text} and returns the
	// text of the result's first content block and its isError.
	call  func(ctx context.Context, tool, text string) (string, bool, error)
	close func() error
}

// toolCase is one tool call and the result it must give.
type toolCase struct {
	tool, text string
	want       string
	wantError  bool     // an isError result with text want
	prompts    []string // the prompts the sampling handler must see
	runs       int32    // the runs of the server's handler (0: not counted)
}

// limits maps a tool to the reason a peer cannot take part in it.
type limits map[string]string

func runToolCases(t *testing.T, c revCaller, lim limits, rec *samplingRecorder, runs *toolRuns, cases []toolCase) {
	for _, tc := range cases {
		t.Run(tc.tool, func(t *testing.T) {
			if why, ok := lim[tc.tool]; ok {
				t.Skip(why)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			rec.take()
			if runs != nil {
				runs.reset()
			}
			got, isError, err := c.call(ctx, tc.tool, tc.text)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want || isError != tc.wantError {
				t.Fatalf("got %q (isError %v), want %q (isError %v)", got, isError, tc.want, tc.wantError)
			}
			if p := rec.take(); strings.Join(p, "\n") != strings.Join(tc.prompts, "\n") {
				t.Errorf("sampling handler was sent %q, want %q", p, tc.prompts)
			}
			if runs != nil && tc.runs != 0 {
				if n := runs.get(tc.tool); n != tc.runs {
					t.Errorf("the handler ran %d times, want %d", n, tc.runs)
				}
			}
		})
	}
}

// roundtripServerCalls calls every tool of rtRevisionServer.
func roundtripServerCalls(t *testing.T, c revCaller, lim limits, rec *samplingRecorder, runs *toolRuns, version string) {
	first := sampleReply("first hello")
	ask := toolCase{tool: "ask", text: "hello", want: askResult}
	if !hasElicitation(version) {
		ask.want, ask.wantError = "cannot send elicitation/create to the client: protocol revision "+version+" has no elicitation (added in 2025-06-18)", true
	}
	runToolCases(t, c, lim, rec, runs, []toolCase{
		{tool: "echo", text: "hello", want: "hello"},
		{tool: "sample", text: "hello", want: sampleReply("sample hello"), prompts: []string{"sample hello"}, runs: 1},
		{tool: "roots", text: "hello", want: rootsText, runs: 1},
		// Both questions are live requests of one run of the handler.
		{tool: "rounds", text: "hello", want: first + " / " + sampleReply("second after "+first),
			prompts: []string{"first hello", "second after " + first}, runs: 1},
		// The low-level handler runs again with the answer and its state.
		{tool: "bridged", text: "hello", want: "bridged " + sampleReply("bridge hello") + " (state step=1)",
			prompts: []string{"bridge hello"}, runs: 2},
		ask,
	})
}

// peerServerCalls calls the tools of another SDK's server.
func peerServerCalls(t *testing.T, c revCaller, lim limits, rec *samplingRecorder) {
	runToolCases(t, c, lim, rec, nil, []toolCase{
		{tool: "echo", text: "hello", want: "hello"},
		{tool: "sample", text: "hello", want: sampleReply("sample hello"), prompts: []string{"sample hello"}},
		{tool: "roots", text: "hello", want: rootsText},
	})
}

// toolRuns counts the runs of each tool handler of a server.
type toolRuns struct {
	mu sync.Mutex
	n  map[string]int32
}

func (r *toolRuns) inc(tool string) {
	r.mu.Lock()
	r.n[tool]++
	r.mu.Unlock()
}

func (r *toolRuns) get(tool string) int32 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n[tool]
}

func (r *toolRuns) reset() {
	r.mu.Lock()
	r.n = map[string]int32{}
	r.mu.Unlock()
}

// rtRevisionServer is rtServer (echo, ask) with the tools that sample
// and list roots, and a low-level tool that builds its own
// InputRequiredResult.
func rtRevisionServer() (*mcp.Server, *toolRuns) {
	s := rtServer()
	runs := &toolRuns{n: map[string]int32{}}
	sample := func(ctx context.Context, prompt string) (string, error) {
		res, err := mcp.Sample(ctx, &mcp.CreateMessageRequest{MaxTokens: 16, Messages: []mcp.SamplingMessage{{
			Role: mcp.RoleUser, Content: []mcp.Content{&mcp.TextContent{Text: prompt}},
		}}})
		if err != nil {
			return "", err
		}
		return rtSampledText(res)
	}
	mcp.AddTypedTool(s, &mcp.Tool{Name: "sample"}, func(ctx context.Context, req *mcp.CallToolRequest, in echoArgs) (*mcp.CallToolResult, error) {
		runs.inc("sample")
		text, err := sample(ctx, "sample "+in.Text)
		if err != nil {
			return nil, err
		}
		return mcp.TextResult(text), nil
	})
	mcp.AddTypedTool(s, &mcp.Tool{Name: "roots"}, func(ctx context.Context, req *mcp.CallToolRequest, in echoArgs) (*mcp.CallToolResult, error) {
		runs.inc("roots")
		roots, err := mcp.ListRoots(ctx)
		if err != nil {
			return nil, err
		}
		parts := make([]string, len(roots))
		for i, r := range roots {
			parts[i] = r.Name + "=" + r.URI
		}
		return mcp.TextResult(strings.Join(parts, ",")), nil
	})
	mcp.AddTypedTool(s, &mcp.Tool{Name: "rounds"}, func(ctx context.Context, req *mcp.CallToolRequest, in echoArgs) (*mcp.CallToolResult, error) {
		runs.inc("rounds")
		a, err := sample(ctx, "first "+in.Text)
		if err != nil {
			return nil, err
		}
		b, err := sample(ctx, "second after "+a)
		if err != nil {
			return nil, err
		}
		return mcp.TextResult(a + " / " + b), nil
	})
	s.AddTool(&mcp.Tool{Name: "bridged"}, func(ctx context.Context, req *mcp.CallToolRequest) (mcp.ToolResponse, error) {
		runs.inc("bridged")
		var in echoArgs
		if err := json.Unmarshal(req.Arguments, &in); err != nil {
			return nil, err
		}
		res, err := req.InputResponses.Sampling("s")
		if errors.Is(err, mcp.ErrNoInputResponse) {
			return &mcp.InputRequiredResult{
				InputRequests: map[string]mcp.InputRequest{"s": &mcp.CreateMessageRequest{MaxTokens: 16, Messages: []mcp.SamplingMessage{{
					Role: mcp.RoleUser, Content: []mcp.Content{&mcp.TextContent{Text: "bridge " + in.Text}},
				}}}},
				RequestState: "step=1",
			}, nil
		}
		if err != nil {
			return nil, err
		}
		text, err := rtSampledText(res)
		if err != nil {
			return nil, err
		}
		return mcp.TextResult("bridged " + text + " (state " + req.RequestState + ")"), nil
	})
	return s, runs
}

func rtSampledText(res *mcp.CreateMessageResult) (string, error) {
	if len(res.Content) != 1 {
		return "", fmt.Errorf("sampled %d content blocks", len(res.Content))
	}
	t, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		return "", fmt.Errorf("sampled %T", res.Content[0])
	}
	if res.Model != sampleModel {
		return "", fmt.Errorf("sampled with model %q", res.Model)
	}
	return t.Text, nil
}

// revClient is another SDK's client, pinned to a revision.
type revClient struct {
	name string
	// connect opens a session of version with the server at url over
	// tr ("http" or "sse"), its sampling handler recording into rec.
	connect func(t *testing.T, url, tr, version string, rec *samplingRecorder) revCaller
	// limits are the tools the client cannot take part in over tr at
	// version.
	limits func(tr, version string) limits
}

var revClients = []revClient{
	{name: "gosdk", connect: gosdkRevConnect, limits: func(string, string) limits { return nil }},
	{name: "mcpgo", connect: mcpgoRevConnect, limits: func(tr, version string) limits {
		if tr != "sse" {
			return nil
		}
		why := "mcp-go v1.2.1: its HTTP+SSE client transport cannot answer a server-to-client request " +
			"(client/transport/sse.go:473-506 treats every message with an id as a response; it does not implement " +
			"BidirectionalInterface, which client/client.go:202 requires for the sampling/roots/elicitation handlers)"
		l := limits{"sample": why, "roots": why, "rounds": why, "bridged": why}
		if hasElicitation(version) {
			l["ask"] = why // elicitation/create is a live request too
		}
		return l
	}},
}

func gosdkRevConnect(t *testing.T, url, tr, version string, rec *samplingRecorder) revCaller {
	c := gosdk.NewClient(&gosdk.Implementation{Name: "bench-client", Version: "1"}, &gosdk.ClientOptions{
		ElicitationHandler: func(ctx context.Context, r *gosdk.ElicitRequest) (*gosdk.ElicitResult, error) {
			return &gosdk.ElicitResult{Action: "accept", Content: map[string]any{"name": answerName}}, nil
		},
		CreateMessageHandler: func(ctx context.Context, r *gosdk.CreateMessageRequest) (*gosdk.CreateMessageResult, error) {
			if len(r.Params.Messages) == 0 {
				return nil, errors.New("no messages")
			}
			text, ok := r.Params.Messages[len(r.Params.Messages)-1].Content.(*gosdk.TextContent)
			if !ok {
				return nil, fmt.Errorf("content %T", r.Params.Messages[0].Content)
			}
			return &gosdk.CreateMessageResult{Role: "assistant", Model: sampleModel, Content: &gosdk.TextContent{Text: rec.add(text.Text)}}, nil
		},
	})
	for _, r := range interopRoots {
		c.AddRoots(&gosdk.Root{Name: r[0], URI: r[1]})
	}
	var tp gosdk.Transport = &gosdk.StreamableClientTransport{Endpoint: url}
	if tr == "sse" {
		tp = &gosdk.SSEClientTransport{Endpoint: url}
	}
	// The context of Connect is the HTTP+SSE stream's: it must outlive
	// the handshake.
	cs, err := c.Connect(context.Background(), tp, &gosdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	return revCaller{version: cs.InitializeResult().ProtocolVersion, close: cs.Close, call: func(ctx context.Context, tool, text string) (string, bool, error) {
		res, err := cs.CallTool(ctx, &gosdk.CallToolParams{Name: tool, Arguments: map[string]any{"text": text}})
		if err != nil {
			return "", false, err
		}
		if len(res.Content) == 0 {
			return "", res.IsError, errorResult(res)
		}
		t, ok := res.Content[0].(*gosdk.TextContent)
		if !ok {
			return "", res.IsError, errorResult(res.Content)
		}
		return t.Text, res.IsError, nil
	}}
}

type mcpgoRevHandlers struct{ rec *samplingRecorder }

func (h mcpgoRevHandlers) CreateMessage(ctx context.Context, r mcpgo.CreateMessageRequest) (*mcpgo.CreateMessageResult, error) {
	if len(r.Messages) == 0 {
		return nil, errors.New("no messages")
	}
	var text string
	switch c := r.Messages[len(r.Messages)-1].Content.(type) {
	case mcpgo.TextContent:
		text = c.Text
	case *mcpgo.TextContent:
		text = c.Text
	default:
		return nil, fmt.Errorf("content %T", c)
	}
	return &mcpgo.CreateMessageResult{
		SamplingMessage: mcpgo.SamplingMessage{Role: mcpgo.RoleAssistant, Content: mcpgo.NewTextContent(h.rec.add(text))},
		Model:           sampleModel,
	}, nil
}

func (h mcpgoRevHandlers) ListRoots(ctx context.Context, r mcpgo.ListRootsRequest) (*mcpgo.ListRootsResult, error) {
	res := &mcpgo.ListRootsResult{}
	for _, r := range interopRoots {
		res.Roots = append(res.Roots, mcpgo.Root{Name: r[0], URI: r[1]})
	}
	return res, nil
}

func mcpgoRevConnect(t *testing.T, url, tr, version string, rec *samplingRecorder) revCaller {
	var tp transport.Interface
	var err error
	if tr == "sse" {
		tp, err = transport.NewSSE(url)
	} else {
		tp, err = transport.NewStreamableHTTP(url)
	}
	if err != nil {
		t.Fatal(err)
	}
	h := mcpgoRevHandlers{rec}
	c := mcpclient.NewClient(tp, mcpclient.WithProtocolVersion(version),
		mcpclient.WithSamplingHandler(h), mcpclient.WithRootsHandler(h), mcpclient.WithElicitationHandler(mcpgoElicit{}))
	// The context of Start is the HTTP+SSE stream's: it must outlive the
	// handshake.
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var init mcpgo.InitializeRequest
	init.Params.ClientInfo = mcpgo.Implementation{Name: "bench-client", Version: "1"}
	res, err := c.Initialize(ctx, init)
	if err != nil {
		c.Close()
		t.Fatal(err)
	}
	return revCaller{version: res.ProtocolVersion, close: c.Close, call: func(ctx context.Context, tool, text string) (string, bool, error) {
		var req mcpgo.CallToolRequest
		req.Params.Name = tool
		req.Params.Arguments = map[string]any{"text": text}
		res, err := c.CallTool(ctx, req)
		if err != nil {
			return "", false, err
		}
		if len(res.Content) == 0 {
			return "", res.IsError, errorResult(res)
		}
		t, ok := res.Content[0].(mcpgo.TextContent)
		if !ok {
			return "", res.IsError, errorResult(res.Content)
		}
		return t.Text, res.IsError, nil
	}}
}

// rtRevisionClient is roundtrip's client pinned to version, over
// Streamable HTTP or (tr "sse") HTTP+SSE, answering sampling into rec
// and roots/list with interopRoots.
func rtRevisionClient(url, tr, version string, rec *samplingRecorder) *mcp.Client {
	opts := rtClientOptions()
	opts.Mode, opts.ProtocolVersion = mcp.ModePinned, version
	opts.Sampling = func(ctx context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
		if len(r.Messages) == 0 || len(r.Messages[len(r.Messages)-1].Content) != 1 {
			return nil, errors.New("not one message of one block")
		}
		text, ok := r.Messages[len(r.Messages)-1].Content[0].(*mcp.TextContent)
		if !ok {
			return nil, fmt.Errorf("content %T", r.Messages[0].Content[0])
		}
		return &mcp.CreateMessageResult{Role: mcp.RoleAssistant, Model: sampleModel, Content: []mcp.Content{&mcp.TextContent{Text: rec.add(text.Text)}}}, nil
	}
	opts.Roots = func(ctx context.Context, r *mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
		res := &mcp.ListRootsResult{}
		for _, r := range interopRoots {
			res.Roots = append(res.Roots, mcp.Root{Name: r[0], URI: r[1]})
		}
		return res, nil
	}
	return mcp.NewClient(mcp.NewHTTPClientTransport(url, &mcp.HTTPClientOptions{SSE: tr == "sse"}), opts)
}

func rtCallText(ctx context.Context, c *mcp.Client, tool, text string) (string, bool, error) {
	res, err := c.CallTool(ctx, tool, map[string]any{"text": text}, nil)
	if err != nil {
		return "", false, err
	}
	if len(res.Content) == 0 {
		return "", res.IsError, errorResult(res)
	}
	t, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		return "", res.IsError, errorResult(res.Content)
	}
	return t.Text, res.IsError, nil
}

// revServer is another SDK's server whose tools sample and list roots
// through the SDK's own session API.
type revServer struct {
	name string
	// handler serves the SDK's server over tr ("http": its stateful
	// Streamable HTTP handler; "sse": its HTTP+SSE handler, whose stream
	// is at ssePath).
	handler func(tr string) http.Handler
	ssePath string
	limits  func(tr string) limits
}

var revServers = []revServer{
	{name: "gosdk", handler: gosdkRevHandler, ssePath: "/mcp", limits: func(string) limits { return nil }},
	{name: "mcpgo", handler: mcpgoRevHandler, ssePath: "/sse", limits: func(tr string) limits {
		if tr != "sse" {
			return nil
		}
		why := "mcp-go v1.2.1: the sessions of its HTTP+SSE server cannot send a server-to-client request " +
			"(server/sse.go:156-163: sseSession implements neither SessionWithSampling nor SessionWithRoots, so " +
			"RequestSampling answers \"session does not support sampling\", server/sampling.go:49-53, and RequestRoots " +
			"ErrRootsNotSupported, server/roots.go:31-35)"
		return limits{"sample": why, "roots": why}
	}},
}

func gosdkRevHandler(tr string) http.Handler {
	s := gosdkServer()
	gosdk.AddTool(s, &gosdk.Tool{Name: "sample"}, func(ctx context.Context, req *gosdk.CallToolRequest, in echoArgs) (*gosdk.CallToolResult, any, error) {
		res, err := req.Session.CreateMessage(ctx, &gosdk.CreateMessageParams{MaxTokens: 16, Messages: []*gosdk.SamplingMessage{{
			Role: "user", Content: &gosdk.TextContent{Text: "sample " + in.Text},
		}}})
		if err != nil {
			return nil, nil, err
		}
		text, ok := res.Content.(*gosdk.TextContent)
		if !ok || res.Model != sampleModel {
			return nil, nil, fmt.Errorf("sampled %T from %q", res.Content, res.Model)
		}
		return &gosdk.CallToolResult{Content: []gosdk.Content{&gosdk.TextContent{Text: text.Text}}}, nil, nil
	})
	gosdk.AddTool(s, &gosdk.Tool{Name: "roots"}, func(ctx context.Context, req *gosdk.CallToolRequest, in echoArgs) (*gosdk.CallToolResult, any, error) {
		res, err := req.Session.ListRoots(ctx, nil)
		if err != nil {
			return nil, nil, err
		}
		parts := make([]string, len(res.Roots))
		for i, r := range res.Roots {
			parts[i] = r.Name + "=" + r.URI
		}
		return &gosdk.CallToolResult{Content: []gosdk.Content{&gosdk.TextContent{Text: strings.Join(parts, ",")}}}, nil, nil
	})
	get := func(*http.Request) *gosdk.Server { return s }
	if tr == "sse" {
		return gosdk.NewSSEHandler(get, nil)
	}
	return gosdk.NewStreamableHTTPHandler(get, nil)
}

func mcpgoRevHandler(tr string) http.Handler {
	s := mcpgoServer()
	s.EnableSampling()
	s.AddTool(mcpgo.NewTool("sample", mcpgo.WithString("text")),
		func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			var p mcpgo.CreateMessageRequest
			p.MaxTokens = 16
			p.Messages = []mcpgo.SamplingMessage{{Role: mcpgo.RoleUser, Content: mcpgo.NewTextContent("sample " + req.GetString("text", ""))}}
			res, err := s.RequestSampling(ctx, p)
			if err != nil {
				return nil, err
			}
			var text string
			switch c := res.Content.(type) {
			case mcpgo.TextContent:
				text = c.Text
			case *mcpgo.TextContent:
				text = c.Text
			default:
				return nil, fmt.Errorf("sampled %T", c)
			}
			if res.Model != sampleModel {
				return nil, fmt.Errorf("sampled with model %q", res.Model)
			}
			return mcpgo.NewToolResultText(text), nil
		})
	s.AddTool(mcpgo.NewTool("roots", mcpgo.WithString("text")),
		func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			res, err := s.RequestRoots(ctx, mcpgo.ListRootsRequest{})
			if err != nil {
				return nil, err
			}
			parts := make([]string, len(res.Roots))
			for i, r := range res.Roots {
				parts[i] = r.Name + "=" + r.URI
			}
			return mcpgo.NewToolResultText(strings.Join(parts, ",")), nil
		})
	if tr == "sse" {
		return mcpserver.NewSSEServer(s)
	}
	// Quiet: it logs every sampling answer it delivers at Info.
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	return mcpserver.NewStreamableHTTPServer(s, mcpserver.WithStreamableHTTPLogger(quiet))
}
