package bench

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// The 2025-11-25 era: every subject opens a session with initialize
// (protocolVersion 2025-11-25; over HTTP the server returns an
// Mcp-Session-Id that every later request carries) and then calls the
// same two tools. "ask" asks by a live elicitation/create: the server
// sends the request while the call is in flight (over HTTP on the POST's
// SSE response stream, on stdio as a line), the client's handler answers
// {"name": "Ada"}, and the call's result follows. The legacy captures
// (legacy-*-<subject>.txt, legacyFlows in capture_legacy_test.go) prove it.
//
//	LegacyToolCall  session tools/call echo("hello") over loopback Streamable HTTP
//	LegacyElicit    session tools/call ask over HTTP: live elicitation/create on the SSE stream
//	LegacyPipe      session tools/call echo("hello") over the os.Pipe pair
//
// The peers are configured for sessions: go-sdk's stateful
// StreamableHTTPHandler (its default: SSE responses), mcp-go's
// NewStreamableHTTPServer with WithStateful(true). Their handlers ask
// with their live APIs (ServerSession.Elicit, MCPServer.RequestElicitation).
// The raw baseline (rawlegacy_test.go) is a hand-written stateful server
// and client doing the same exchange.

const legacyVersion = "2025-11-25"

// quietLog discards mcp-go's informational lines ("Delivered sampling
// response" per answer; "failed to send response" when the call's result
// arrives before the answer's own POST has read its 202, which cancels
// that POST's context: the answer was delivered).
var quietLog = slog.New(slog.DiscardHandler)

// legacySubjects in the order of the tables.
var legacySubjects = []subject{roundtripLegacy, gosdkLegacy, mcpgoLegacy, rawLegacy}

func forEachLegacySubject(b *testing.B, fn func(b *testing.B, s subject)) {
	for _, s := range legacySubjects {
		b.Run("subject="+s.name, func(b *testing.B) { fn(b, s) })
	}
}

func BenchmarkLegacyToolCall(b *testing.B) {
	forEachLegacySubject(b, func(b *testing.B, s subject) {
		benchCalls(b, httpCaller(b, s, nil), "echo", "hello", "hello")
	})
}

func BenchmarkLegacyElicit(b *testing.B) {
	forEachLegacySubject(b, func(b *testing.B, s subject) {
		benchCalls(b, httpCaller(b, s, nil), "ask", "hello", askResult)
	})
}

func BenchmarkLegacyPipe(b *testing.B) {
	forEachLegacySubject(b, func(b *testing.B, s subject) {
		benchCalls(b, pipeCaller(b, s, nil, nil), "echo", "hello", "hello")
	})
}

// roundtrip: the same server as the 2026-07-28 benchmarks (it is
// dual-era; mcp.Elicit blocks on a live elicitation/create in a session),
// a client in ModeLegacy.

func rtLegacyClientOptions() *mcp.ClientOptions {
	o := rtClientOptions()
	o.Mode = mcp.ModeLegacy
	o.ProtocolVersion = ""
	return o
}

func rtLegacyConnect(tb testing.TB, t mcp.ClientTransport) caller {
	c := mcp.NewClient(t, rtLegacyClientOptions())
	if err := c.Connect(context.Background()); err != nil {
		tb.Fatal(err)
	}
	return rtCaller{c}
}

var roundtripLegacy = subject{
	name: "roundtrip",
	note: "the same dual-era server (mcp.Elicit blocks on a live elicitation/create), NewHTTPHandler defaults, client ModeLegacy",
	handler: func(tb testing.TB) http.Handler {
		return mcp.NewHTTPHandler(rtServer(), nil)
	},
	httpClient: func(tb testing.TB, url string, hc *http.Client) caller {
		return rtLegacyConnect(tb, mcp.NewHTTPClientTransport(url, &mcp.HTTPClientOptions{HTTPClient: hc}))
	},
	servePipe: roundtripSubject.servePipe,
	pipeClient: func(tb testing.TB, r io.ReadCloser, w io.WriteCloser) caller {
		return rtLegacyConnect(tb, mcp.NewStreamClientTransport(rwc{r, w}, nil))
	},
}

// go-sdk: the stateful StreamableHTTPHandler with its defaults, the
// client connecting at 2025-11-25 (initialize, no server/discover).

func gosdkLegacyServer() *gosdk.Server {
	s := gosdk.NewServer(&gosdk.Implementation{Name: "bench", Version: "1"}, nil)
	gosdk.AddTool(s, &gosdk.Tool{Name: "echo"}, func(ctx context.Context, req *gosdk.CallToolRequest, in echoArgs) (*gosdk.CallToolResult, any, error) {
		return &gosdk.CallToolResult{Content: []gosdk.Content{&gosdk.TextContent{Text: in.Text}}}, nil, nil
	})
	schema := &jsonschema.Schema{
		Type:       "object",
		Properties: map[string]*jsonschema.Schema{"name": {Type: "string"}},
		Required:   []string{"name"},
	}
	gosdk.AddTool(s, &gosdk.Tool{Name: "ask"}, func(ctx context.Context, req *gosdk.CallToolRequest, in echoArgs) (*gosdk.CallToolResult, any, error) {
		r, err := req.Session.Elicit(ctx, &gosdk.ElicitParams{Mode: "form", Message: askMessage, RequestedSchema: schema})
		if err != nil {
			return nil, nil, err
		}
		if r.Action != "accept" {
			return nil, nil, errors.New("declined")
		}
		name, _ := r.Content["name"].(string)
		return &gosdk.CallToolResult{Content: []gosdk.Content{&gosdk.TextContent{Text: "hello " + name}}}, nil, nil
	})
	return s
}

func gosdkLegacyConnect(tb testing.TB, t gosdk.Transport) caller {
	cs, err := gosdkClient().Connect(context.Background(), t, &gosdk.ClientSessionOptions{ProtocolVersion: legacyVersion})
	if err != nil {
		tb.Fatal(err)
	}
	if v := cs.InitializeResult().ProtocolVersion; v != legacyVersion {
		tb.Fatalf("go-sdk negotiated %s", v)
	}
	return gosdkCaller{cs}
}

var gosdkLegacy = subject{
	name: "gosdk",
	note: "go-sdk v1.8.0: stateful StreamableHTTPHandler (defaults: sessions, SSE responses), ServerSession.Elicit, Connect at 2025-11-25",
	handler: func(tb testing.TB) http.Handler {
		s := gosdkLegacyServer()
		return gosdk.NewStreamableHTTPHandler(func(*http.Request) *gosdk.Server { return s }, nil)
	},
	httpClient: func(tb testing.TB, url string, hc *http.Client) caller {
		return gosdkLegacyConnect(tb, &gosdk.StreamableClientTransport{Endpoint: url, HTTPClient: hc})
	},
	servePipe: func(tb testing.TB, r io.ReadCloser, w io.WriteCloser) {
		ss, err := gosdkLegacyServer().Connect(context.Background(), &gosdk.IOTransport{Reader: r, Writer: w}, nil)
		if err != nil {
			tb.Fatal(err)
		}
		go func() { ss.Wait(); w.Close() }()
	},
	pipeClient: func(tb testing.TB, r io.ReadCloser, w io.WriteCloser) caller {
		return gosdkLegacyConnect(tb, &gosdk.IOTransport{Reader: r, Writer: w})
	},
}

// mcp-go: NewStreamableHTTPServer WithStateful(true), the client pinned
// to 2025-11-25 (WithProtocolVersion keeps it on initialize).

func mcpgoLegacyServer() *mcpserver.MCPServer {
	s := mcpserver.NewMCPServer("bench", "1", mcpserver.WithToolCapabilities(false), mcpserver.WithElicitation())
	s.AddTool(mcpgo.NewTool("echo", mcpgo.WithString("text", mcpgo.Required())),
		func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			return mcpgo.NewToolResultText(req.GetString("text", "")), nil
		})
	s.AddTool(mcpgo.NewTool("ask", mcpgo.WithString("text")),
		func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			var er mcpgo.ElicitationRequest
			er.Params = mcpgo.ElicitationParams{
				Mode:    mcpgo.ElicitationModeForm,
				Message: askMessage,
				RequestedSchema: map[string]any{
					"type":       "object",
					"properties": map[string]any{"name": map[string]any{"type": "string"}},
					"required":   []string{"name"},
				},
			}
			r, err := s.RequestElicitation(ctx, er)
			if err != nil {
				return nil, err
			}
			content, _ := r.Content.(map[string]any)
			name, _ := content["name"].(string)
			return mcpgo.NewToolResultText("hello " + name), nil
		})
	return s
}

func mcpgoLegacyConnect(tb testing.TB, t transport.Interface) caller {
	c := mcpclient.NewClient(t, mcpclient.WithElicitationHandler(mcpgoElicit{}), mcpclient.WithProtocolVersion(legacyVersion))
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		tb.Fatal(err)
	}
	var init mcpgo.InitializeRequest
	init.Params.ProtocolVersion = legacyVersion
	init.Params.ClientInfo = mcpgo.Implementation{Name: "bench-client", Version: "1"}
	res, err := c.Initialize(ctx, init)
	if err != nil {
		tb.Fatal(err)
	}
	if res.ProtocolVersion != legacyVersion {
		tb.Fatalf("mcp-go negotiated %s", res.ProtocolVersion)
	}
	return mcpgoCaller{c}
}

var mcpgoLegacy = subject{
	name: "mcpgo",
	note: "mcp-go v1.2.1: NewStreamableHTTPServer WithStateful(true), MCPServer.RequestElicitation, client WithProtocolVersion(2025-11-25)",
	handler: func(tb testing.TB) http.Handler {
		return mcpserver.NewStreamableHTTPServer(mcpgoLegacyServer(), mcpserver.WithStateful(true),
			mcpserver.WithStreamableHTTPLogger(quietLog))
	},
	httpClient: func(tb testing.TB, url string, hc *http.Client) caller {
		t, err := transport.NewStreamableHTTP(url, transport.WithHTTPBasicClient(hc), transport.WithHTTPLogger(quietLog))
		if err != nil {
			tb.Fatal(err)
		}
		return mcpgoLegacyConnect(tb, t)
	},
	servePipe: func(tb testing.TB, r io.ReadCloser, w io.WriteCloser) {
		mcpgoServePipe(tb, mcpgoLegacyServer(), r, w)
	},
	pipeClient: func(tb testing.TB, r io.ReadCloser, w io.WriteCloser) caller {
		return mcpgoLegacyConnect(tb, transport.NewIO(r, w, io.NopCloser(eofReader{})))
	},
}
