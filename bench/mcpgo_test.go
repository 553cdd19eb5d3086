package bench

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// github.com/mark3labs/mcp-go as it ships: NewStreamableHTTPServer with
// no options (it decides the era per request: a request whose _meta and
// MCP-Protocol-Version name 2026-07-28 is served statelessly), the
// stdio server's Listen on the pipe. The client's Initialize probes with
// server/discover at its latest version (2026-07-28) and stays on it.
// Multi round-trip: the handler returns an InputRequestBuilder result with
// a plain (unsealed) requestState; the client's loop answers and retries.

func mcpgoServer() *mcpserver.MCPServer {
	s := mcpserver.NewMCPServer("bench", "1", mcpserver.WithToolCapabilities(false), mcpserver.WithElicitation())
	s.AddTool(mcpgo.NewTool("echo", mcpgo.WithString("text", mcpgo.Required())),
		func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			return mcpgo.NewToolResultText(req.GetString("text", "")), nil
		})
	s.AddTool(mcpgo.NewTool("ask", mcpgo.WithString("text")),
		func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			if r := mcpserver.ElicitationResponse(req.Params.InputResponses, "name"); r != nil {
				content, _ := r.Content.(map[string]any)
				name, _ := content["name"].(string)
				return mcpgo.NewToolResultText("hello " + name), nil
			}
			return mcpserver.NewInputRequestBuilder("step=1").
				Elicit("name", mcpgo.ElicitationParams{
					Mode:    mcpgo.ElicitationModeForm,
					Message: askMessage,
					RequestedSchema: map[string]any{
						"type":       "object",
						"properties": map[string]any{"name": map[string]any{"type": "string"}},
						"required":   []string{"name"},
					},
				}).
				ToolResult(), nil
		})
	return s
}

type mcpgoElicit struct{}

func (mcpgoElicit) Elicit(ctx context.Context, r mcpgo.ElicitationRequest) (*mcpgo.ElicitationResult, error) {
	return &mcpgo.ElicitationResult{ElicitationResponse: mcpgo.ElicitationResponse{
		Action:  mcpgo.ElicitationResponseActionAccept,
		Content: map[string]any{"name": answerName},
	}}, nil
}

type mcpgoCaller struct{ c *mcpclient.Client }

func (c mcpgoCaller) call(ctx context.Context, tool, text string) (string, error) {
	var req mcpgo.CallToolRequest
	req.Params.Name = tool
	req.Params.Arguments = map[string]any{"text": text}
	res, err := c.c.CallTool(ctx, req)
	if err != nil {
		return "", err
	}
	if res.IsError || len(res.Content) == 0 {
		return "", errorResult(res.Content)
	}
	t, ok := res.Content[0].(mcpgo.TextContent)
	if !ok {
		return "", errorResult(res.Content)
	}
	return t.Text, nil
}

func (c mcpgoCaller) close() error { return c.c.Close() }

func mcpgoConnect(tb testing.TB, t transport.Interface) caller {
	c := mcpclient.NewClient(t, mcpclient.WithElicitationHandler(mcpgoElicit{}))
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		tb.Fatal(err)
	}
	var init mcpgo.InitializeRequest
	init.Params.ClientInfo = mcpgo.Implementation{Name: "bench-client", Version: "1"}
	res, err := c.Initialize(ctx, init)
	if err != nil {
		tb.Fatal(err)
	}
	if res.ProtocolVersion != protocolVersion {
		tb.Fatalf("mcp-go negotiated %s", res.ProtocolVersion)
	}
	return mcpgoCaller{c}
}

var mcpgoSubject = subject{
	name: "mcpgo",
	note: "mcp-go v1.2.1: NewStreamableHTTPServer defaults, StdioServer.Listen, MRTR via InputRequestBuilder + plain requestState",
	handler: func(tb testing.TB) http.Handler {
		return mcpserver.NewStreamableHTTPServer(mcpgoServer())
	},
	httpClient: func(tb testing.TB, url string, hc *http.Client) caller {
		t, err := transport.NewStreamableHTTP(url, transport.WithHTTPBasicClient(hc))
		if err != nil {
			tb.Fatal(err)
		}
		return mcpgoConnect(tb, t)
	},
	servePipe: func(tb testing.TB, r io.ReadCloser, w io.WriteCloser) {
		mcpgoServePipe(tb, mcpgoServer(), r, w)
	},
	pipeClient: func(tb testing.TB, r io.ReadCloser, w io.WriteCloser) caller {
		return mcpgoConnect(tb, transport.NewIO(r, w, io.NopCloser(eofReader{})))
	},
}

// mcpgoServePipe serves s on the pipe with mcp-go's stdio server. That
// server keeps its session in a package variable: the cleanup waits for
// one to end before the next starts.
func mcpgoServePipe(tb testing.TB, s *mcpserver.MCPServer, r io.ReadCloser, w io.WriteCloser) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		mcpserver.NewStdioServer(s).Listen(ctx, r, w)
		w.Close()
	}()
	tb.Cleanup(func() {
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cancel()
			<-done
		}
		cancel()
	})
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }
