package bench

import (
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The official SDK, github.com/modelcontextprotocol/go-sdk. It speaks
// 2026-07-28 over HTTP only with StreamableHTTPOptions.Stateless (a
// stateful handler answers a 2026-07-28 request with 400 and -32022
// advertising the legacy versions, and the client falls back to
// initialize); JSONResponse
// makes it answer with a JSON body like the others instead of an SSE
// stream (its default; see docs/performance.md for the SSE variant). The
// client connects with Client.Connect, which sends server/discover at the
// latest version (2026-07-28) and then sends the per-request _meta on
// every call. Its multi round-trip support is the documented one: the
// handler returns InputRequests and a plain (unsealed) RequestState, the
// client's MRTR middleware answers and retries.

func gosdkServer() *gosdk.Server {
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
		r, ok := req.Params.InputResponses["name"].(*gosdk.ElicitResult)
		if !ok {
			return &gosdk.CallToolResult{
				InputRequests: gosdk.InputRequestMap{
					"name": &gosdk.ElicitParams{Mode: "form", Message: askMessage, RequestedSchema: schema},
				},
				RequestState: "step=1",
			}, nil, nil
		}
		name, _ := r.Content["name"].(string)
		return &gosdk.CallToolResult{Content: []gosdk.Content{&gosdk.TextContent{Text: "hello " + name}}}, nil, nil
	})
	return s
}

func gosdkClient() *gosdk.Client {
	return gosdk.NewClient(&gosdk.Implementation{Name: "bench-client", Version: "1"}, &gosdk.ClientOptions{
		ElicitationHandler: func(ctx context.Context, r *gosdk.ElicitRequest) (*gosdk.ElicitResult, error) {
			return &gosdk.ElicitResult{Action: "accept", Content: map[string]any{"name": answerName}}, nil
		},
	})
}

type gosdkCaller struct{ cs *gosdk.ClientSession }

func (c gosdkCaller) call(ctx context.Context, tool, text string) (string, error) {
	res, err := c.cs.CallTool(ctx, &gosdk.CallToolParams{Name: tool, Arguments: map[string]any{"text": text}})
	if err != nil {
		return "", err
	}
	if res.IsError || len(res.Content) == 0 {
		return "", errorResult(res.Content)
	}
	t, ok := res.Content[0].(*gosdk.TextContent)
	if !ok {
		return "", errorResult(res.Content)
	}
	return t.Text, nil
}

func (c gosdkCaller) close() error { return c.cs.Close() }

func gosdkConnect(tb testing.TB, t gosdk.Transport) caller {
	cs, err := gosdkClient().Connect(context.Background(), t, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return gosdkCaller{cs}
}

var gosdkSubject = subject{
	name: "gosdk",
	note: "go-sdk v1.8.0: StreamableHTTPHandler{Stateless, JSONResponse}, typed tools, MRTR via InputRequests + plain RequestState",
	handler: func(tb testing.TB) http.Handler {
		s := gosdkServer()
		return gosdk.NewStreamableHTTPHandler(func(*http.Request) *gosdk.Server { return s },
			&gosdk.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	},
	httpClient: func(tb testing.TB, url string, hc *http.Client) caller {
		return gosdkConnect(tb, &gosdk.StreamableClientTransport{Endpoint: url, HTTPClient: hc})
	},
	servePipe: func(tb testing.TB, r io.ReadCloser, w io.WriteCloser) {
		ss, err := gosdkServer().Connect(context.Background(), &gosdk.IOTransport{Reader: r, Writer: w}, nil)
		if err != nil {
			tb.Fatal(err)
		}
		go func() { ss.Wait(); w.Close() }()
	},
	pipeClient: func(tb testing.TB, r io.ReadCloser, w io.WriteCloser) caller {
		return gosdkConnect(tb, &gosdk.IOTransport{Reader: r, Writer: w})
	},
}
