package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/roundtrip-mcp/roundtrip/auth"
	"github.com/roundtrip-mcp/roundtrip/internal/testutil"
	"github.com/roundtrip-mcp/roundtrip/mcp"
)

type noArgs struct{}

type textIn struct {
	Text string `json:"text,omitempty"`
}

type colour struct {
	Colour string `json:"colour"`
}

// upstreamServer is a roundtrip server with one tool of each kind the
// gateway must carry: echo, ask (elicits a form), sample, roots, both
// (elicits then samples: two rounds), and a prompt, a resource and a
// template. name goes into every result, so a test can tell upstreams
// apart.
func upstreamServer(name string) *mcp.Server {
	srv := mcp.NewServer(mcp.Implementation{Name: name, Version: "1"}, &mcp.ServerOptions{Logger: quietLogger()})
	mcp.AddTypedTool(srv, &mcp.Tool{Name: "echo"}, func(ctx context.Context, req *mcp.CallToolRequest, in textIn) (*mcp.CallToolResult, error) {
		return mcp.TextResult(name + ":" + in.Text), nil
	})
	mcp.AddTypedTool(srv, &mcp.Tool{Name: "ask"}, func(ctx context.Context, req *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, error) {
		c, err := mcp.Elicit[colour](ctx, "Which colour?")
		if err != nil {
			return nil, err
		}
		v, err := c.Value()
		if err != nil {
			return nil, err
		}
		return mcp.TextResult(name + ":colour=" + v.Colour), nil
	})
	mcp.AddTypedTool(srv, &mcp.Tool{Name: "both"}, func(ctx context.Context, req *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, error) {
		c, err := mcp.Elicit[colour](ctx, "Which colour?")
		if err != nil {
			return nil, err
		}
		v, err := c.Value()
		if err != nil {
			return nil, err
		}
		res, err := mcp.Sample(ctx, &mcp.CreateMessageRequest{
			Messages:  []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: []mcp.Content{&mcp.TextContent{Text: "poem about " + v.Colour}}}},
			MaxTokens: 10,
		})
		if err != nil {
			return nil, err
		}
		roots, err := mcp.ListRoots(ctx)
		if err != nil {
			return nil, err
		}
		return mcp.TextResult(name + ":" + v.Colour + ":" + textOf(res.Content[0]) + ":" + roots[0].URI), nil
	})
	mcp.AddTypedTool(srv, &mcp.Tool{Name: "hang"}, func(ctx context.Context, req *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	srv.AddPrompt(&mcp.Prompt{Name: "greet"}, func(ctx context.Context, req *mcp.GetPromptRequest) (mcp.PromptResponse, error) {
		return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{{Role: mcp.RoleUser, Content: &mcp.TextContent{Text: name + " says hello"}}}}, nil
	})
	srv.AddPrompt(&mcp.Prompt{Name: "colourful"}, func(ctx context.Context, req *mcp.GetPromptRequest) (mcp.PromptResponse, error) {
		c, err := mcp.Elicit[colour](ctx, "Which colour?")
		if err != nil {
			return nil, err
		}
		v, err := c.Value()
		if err != nil {
			return nil, err
		}
		return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{{Role: mcp.RoleUser, Content: &mcp.TextContent{Text: name + " paints " + v.Colour}}}}, nil
	})
	srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "paint://" + name + "/{thing}", Name: "paint"}, func(ctx context.Context, req *mcp.ReadResourceRequest) (mcp.ResourceResponse, error) {
		c, err := mcp.Elicit[colour](ctx, "Which colour?")
		if err != nil {
			return nil, err
		}
		v, err := c.Value()
		if err != nil {
			return nil, err
		}
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.URI, Text: req.Var("thing") + " in " + v.Colour}}}, nil
	})
	srv.AddResource(&mcp.Resource{URI: "file:///shared.txt", Name: "shared"}, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.URI, Text: name + " shared"}}}, nil
	})
	srv.AddResource(&mcp.Resource{URI: "file:///" + name + ".txt", Name: "own"}, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.URI, Text: name + " own"}}}, nil
	})
	return srv
}

func textOf(c mcp.Content) string {
	if t, ok := c.(*mcp.TextContent); ok {
		return t.Text
	}
	return ""
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// serveModern serves srv over Streamable HTTP (every revision).
func serveModern(t *testing.T, srv *mcp.Server) string {
	ts := httptest.NewServer(mcp.NewHTTPHandler(srv, nil))
	t.Cleanup(func() { ts.Close(); srv.Close() })
	return ts.URL
}

// serveLegacyOnly serves srv as a 2025-11-25 server would: a request that
// is neither initialize nor part of a session is a plain 400.
func serveLegacyOnly(t *testing.T, srv *mcp.Server) string {
	h := mcp.NewHTTPHandler(srv, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" {
			body, _ := io.ReadAll(r.Body)
			if !bytes.Contains(body, []byte(`"initialize"`)) {
				http.Error(w, "Bad Request: No valid session ID provided", http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { ts.Close(); srv.Close() })
	return ts.URL
}

// serveSSE serves srv over HTTP+SSE (2024-11-05).
func serveSSE(t *testing.T, srv *mcp.Server) string {
	ts := httptest.NewServer(mcp.NewSSEHandler(srv, nil))
	t.Cleanup(func() { ts.Close(); srv.Close() })
	return ts.URL
}

// stdioUpstream builds internal/stdioupstream into the test's temporary
// directory.
func stdioUpstream(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "stdioupstream")
	if out, err := exec.Command("go", "build", "-o", path, "./internal/stdioupstream").CombinedOutput(); err != nil {
		t.Fatalf("building the stdio upstream: %v\n%s", err, out)
	}
	return path
}

// tokens is the test's bearer verifier: the token is the subject; the
// scopes are fixed per subject.
var tokens = auth.TokenVerifierFunc(func(ctx context.Context, token string) (*mcp.TokenInfo, error) {
	scopes := map[string][]string{"alice": {"ops", "read"}, "bob": {"read"}}
	s, ok := scopes[token]
	if !ok {
		return nil, errors.New("unknown token")
	}
	return &mcp.TokenInfo{Subject: token, Issuer: "test", ClientID: "c-" + token, Scopes: s, Expiry: time.Now().Add(time.Hour)}, nil
})

// startGateway builds a gateway over ups, serves it over Streamable HTTP
// behind auth.RequireBearer, and waits until it lists every upstream's
// entries.
func startGateway(t *testing.T, ups []Upstream, opts *Options) (*Gateway, string) {
	t.Helper()
	if opts == nil {
		opts = &Options{}
	}
	if opts.Server == nil {
		opts.Server = &mcp.ServerOptions{Logger: quietLogger()}
	}
	if opts.Pool == nil {
		opts.Pool = &PoolOptions{Logger: quietLogger(), BackoffMin: 20 * time.Millisecond, BackoffMax: 200 * time.Millisecond}
	}
	g, err := New(ups, opts)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(auth.RequireBearer(mcp.NewHTTPHandler(g.Server(), nil), &auth.BearerOptions{Verifier: tokens, Logger: quietLogger()}))
	t.Cleanup(func() { ts.Close(); g.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := g.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	return g, ts.URL
}

// answers are the downstream client's handlers: a colour, a poem, a
// root.
func answers(o *mcp.ClientOptions) *mcp.ClientOptions {
	o.Elicitation = func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: map[string]any{"colour": "teal"}}, nil
	}
	o.Sampling = func(ctx context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
		return &mcp.CreateMessageResult{Role: mcp.RoleAssistant, Content: []mcp.Content{&mcp.TextContent{Text: "verse"}}, Model: "m"}, nil
	}
	o.Roots = func(ctx context.Context, r *mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
		return &mcp.ListRootsResult{Roots: []mcp.Root{{URI: "file:///home"}}}, nil
	}
	return o
}

// downstream is a client of the gateway at url as user, in mode.
func downstream(t *testing.T, url, user string, mode mcp.ClientMode, opts *mcp.ClientOptions) *mcp.Client {
	t.Helper()
	if opts == nil {
		opts = &mcp.ClientOptions{}
	}
	opts.Mode = mode
	opts.Logger = quietLogger()
	c := mcp.NewClient(mcp.NewHTTPClientTransport(url, &mcp.HTTPClientOptions{Header: http.Header{"Authorization": {"Bearer " + user}}}), opts)
	t.Cleanup(func() { c.Close() })
	return c
}

func toolNames(t *testing.T, c *mcp.Client) []string {
	t.Helper()
	var names []string
	for tool, err := range c.Tools(mcp.WithoutCache(context.Background())) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	return names
}

func resultText(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	var b strings.Builder
	for _, c := range res.Content {
		b.WriteString(textOf(c))
	}
	return b.String()
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testutil.Eventually(t, 20*time.Second, what, cond)
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
