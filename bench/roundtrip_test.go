package bench

import (
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// roundtrip as a user writes it: typed tools, mcp.Elicit in the asking
// tool, the default sealing of requestState (AES-256-GCM with a random
// per-process key), NewHTTPHandler with its defaults.

type echoArgs struct {
	Text string `json:"text"`
}

type nameForm struct {
	Name string `json:"name"`
}

func rtServer() *mcp.Server {
	s := mcp.NewServer(mcp.Implementation{Name: "bench", Version: "1"}, nil)
	mcp.AddTypedTool(s, &mcp.Tool{Name: "echo"}, func(ctx context.Context, req *mcp.CallToolRequest, in echoArgs) (*mcp.CallToolResult, error) {
		return mcp.TextResult(in.Text), nil
	})
	mcp.AddTypedTool(s, &mcp.Tool{Name: "ask"}, func(ctx context.Context, req *mcp.CallToolRequest, in echoArgs) (*mcp.CallToolResult, error) {
		name, err := mcp.Elicit[nameForm](ctx, askMessage)
		if err != nil {
			return nil, err
		}
		v, err := name.Value()
		if err != nil {
			return nil, err
		}
		return mcp.TextResult("hello " + v.Name), nil
	})
	return s
}

func rtClientOptions() *mcp.ClientOptions {
	return &mcp.ClientOptions{
		Info: mcp.Implementation{Name: "bench-client", Version: "1"},
		// Pinned: the benchmark measures 2026-07-28 calls, with no
		// discovery round on the first call.
		Mode:            mcp.ModePinned,
		ProtocolVersion: mcp.LatestProtocolVersion,
		Elicitation: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: map[string]any{"name": answerName}}, nil
		},
	}
}

type rtCaller struct{ c *mcp.Client }

func (c rtCaller) call(ctx context.Context, tool, text string) (string, error) {
	res, err := c.c.CallTool(ctx, tool, map[string]any{"text": text}, nil)
	if err != nil {
		return "", err
	}
	if res.IsError || len(res.Content) == 0 {
		return "", errorResult(res.Content)
	}
	t, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		return "", errorResult(res.Content)
	}
	return t.Text, nil
}

func (c rtCaller) close() error { return c.c.Close() }

var roundtripSubject = subject{
	name: "roundtrip",
	note: "typed tools, mcp.Elicit, sealed requestState (default), NewHTTPHandler defaults",
	handler: func(tb testing.TB) http.Handler {
		return mcp.NewHTTPHandler(rtServer(), nil)
	},
	httpClient: func(tb testing.TB, url string, hc *http.Client) caller {
		t := mcp.NewHTTPClientTransport(url, &mcp.HTTPClientOptions{HTTPClient: hc})
		return rtCaller{mcp.NewClient(t, rtClientOptions())}
	},
	servePipe: func(tb testing.TB, r io.ReadCloser, w io.WriteCloser) {
		go func() {
			rtServer().ServeStream(context.Background(), r, w, nil)
			w.Close()
			r.Close()
		}()
	},
	pipeClient: func(tb testing.TB, r io.ReadCloser, w io.WriteCloser) caller {
		return rtCaller{mcp.NewClient(mcp.NewStreamClientTransport(rwc{r, w}, nil), rtClientOptions())}
	},
}
