package bench

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// TestInterop crosses the SDKs: every SDK's client against every SDK's
// server, over Streamable HTTP and over the stdio framing, at protocol
// revision 2026-07-28. Each pair runs the plain tool and the multi
// round-trip one (input_required with a form elicitation, answered and
// retried with the echoed requestState). roundtrip's server seals that
// state, so a client that altered it would be refused: every peer echoes
// it untouched.
func TestInterop(t *testing.T) {
	sdks := []subject{roundtripSubject, gosdkSubject, mcpgoSubject}
	for _, server := range sdks {
		for _, client := range sdks {
			if server.name == client.name {
				continue // TestSubjects covers each SDK with itself
			}
			name := client.name + "-client/" + server.name + "-server"
			t.Run(name+"/http", func(t *testing.T) {
				url := serveHTTP(t, server.handler(t))
				c := client.httpClient(t, url, newHTTPClient(nil))
				defer c.close()
				interopCalls(t, c)
			})
			t.Run(name+"/pipe", func(t *testing.T) {
				p := newPipes(t)
				server.servePipe(t, p.sr, p.sw)
				c := client.pipeClient(t, p.cr, p.cw)
				defer func() { c.close(); p.cw.Close(); p.cr.Close() }()
				interopCalls(t, c)
			})
		}
	}
}

func interopCalls(t *testing.T, c caller) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := callWant(ctx, c, "echo", "hello", "hello"); err != nil {
		t.Fatal("echo:", err)
	}
	for range 2 {
		if err := callWant(ctx, c, "ask", "hello", askResult); err != nil {
			t.Fatal("ask:", err)
		}
	}
}

// TestInteropLegacy crosses the SDKs at 2025-11-25 (and 2025-06-18), where a server asks
// with a live elicitation/create on the session while the tool call is
// open: go-sdk's client (pinned to each) against roundtrip's server,
// whose MRTR handler (mcp.Elicit) becomes a live request on a legacy
// session; and roundtrip's client (ModeLegacy) against a stateful go-sdk
// server whose handler calls ServerSession.Elicit.
func TestInteropLegacy(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	legacy := "2025-11-25"

	for _, version := range []string{legacy, "2025-06-18"} {
		t.Run("gosdk-client/roundtrip-server/"+version, func(t *testing.T) {
			url := serveHTTP(t, roundtripSubject.handler(t))
			cs, err := gosdkClient().Connect(ctx, &gosdk.StreamableClientTransport{Endpoint: url}, &gosdk.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if v := cs.InitializeResult().ProtocolVersion; v != version {
				t.Fatalf("negotiated %q", v)
			}
			if err := callWant(ctx, gosdkCaller{cs}, "ask", "hello", askResult); err != nil {
				t.Fatal(err)
			}
		})
	}

	t.Run("roundtrip-client/gosdk-server", func(t *testing.T) {
		s := gosdk.NewServer(&gosdk.Implementation{Name: "legacy", Version: "1"}, nil)
		gosdk.AddTool(s, &gosdk.Tool{Name: "ask"}, func(ctx context.Context, req *gosdk.CallToolRequest, in echoArgs) (*gosdk.CallToolResult, any, error) {
			r, err := req.Session.Elicit(ctx, &gosdk.ElicitParams{Message: askMessage, RequestedSchema: &jsonschema.Schema{
				Type: "object", Properties: map[string]*jsonschema.Schema{"name": {Type: "string"}}, Required: []string{"name"},
			}})
			if err != nil {
				return nil, nil, err
			}
			name, _ := r.Content["name"].(string)
			return &gosdk.CallToolResult{Content: []gosdk.Content{&gosdk.TextContent{Text: "hello " + name}}}, nil, nil
		})
		url := serveHTTP(t, gosdk.NewStreamableHTTPHandler(func(*http.Request) *gosdk.Server { return s }, nil))
		opts := rtClientOptions()
		opts.Mode, opts.ProtocolVersion = mcp.ModeLegacy, ""
		c := mcp.NewClient(mcp.NewHTTPClientTransport(url, nil), opts)
		defer c.Close()
		if err := callWant(ctx, rtCaller{c}, "ask", "hello", askResult); err != nil {
			t.Fatal(err)
		}
		if v := c.ProtocolVersion(); v != legacy {
			t.Errorf("negotiated %q", v)
		}
	})
}
