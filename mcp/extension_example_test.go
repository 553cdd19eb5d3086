package mcp_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

type SearchParams struct {
	Query string `json:"query"`
}

type SearchHits struct {
	Hits []string `json:"hits"`
}

// A method outside the specification, served under an extension the
// server advertises; a client that declared the extension calls it.
func ExampleAddTypedMethod() {
	srv := mcp.NewServer(mcp.Implementation{Name: "search", Version: "1.0.0"}, nil)
	mcp.AddTypedMethod(srv, &mcp.MethodSpec{Name: "com.example/search/query", Extension: "com.example/search"},
		func(ctx context.Context, req *mcp.ExtensionRequest, in SearchParams) (SearchHits, error) {
			return SearchHits{Hits: []string{in.Query + ".md"}}, nil
		})

	ce, se := mcp.NewInMemoryTransports()
	go srv.ServeStream(context.Background(), se, se, nil)
	defer ce.Close()
	io.WriteString(ce, `{"jsonrpc":"2.0","id":1,"method":"com.example/search/query","params":{"_meta":{`+
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28",`+
		`"io.modelcontextprotocol/clientCapabilities":{"extensions":{"com.example/search":{}}}},"query":"notes"}}`+"\n")
	line, _ := bufio.NewReader(ce).ReadString('\n')
	fmt.Print(line)
	// Output:
	// {"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"search","version":"1.0.0"}},"hits":["notes.md"]}}
}

// Per-request tool sets: a tenant header decides which tools exist.
func ExampleServerOptions_visible() {
	srv := mcp.NewServer(mcp.Implementation{Name: "tenants", Version: "1.0.0"}, &mcp.ServerOptions{
		Visible: func(ctx context.Context, kind mcp.FeatureKind, name string) bool {
			tenant := mcp.RequestHeader(ctx).Get("X-Tenant")
			return tenant != "" && strings.HasPrefix(name, tenant+"_")
		},
	})
	http.Handle("/mcp", mcp.NewHTTPHandler(srv, nil)) // tools/list, tools/call... see the tenant's tools only
}

// A handler's slog records go to its client, at the level it asked for.
func ExampleNewLogHandler() {
	log := slog.New(mcp.NewLogHandler(&mcp.LogHandlerOptions{Logger: "deploy"}))
	srv := mcp.NewServer(mcp.Implementation{Name: "deployer", Version: "1.0.0"}, nil)
	srv.AddTool(&mcp.Tool{Name: "deploy"}, func(ctx context.Context, req *mcp.CallToolRequest) (mcp.ToolResponse, error) {
		log.InfoContext(ctx, "deploying", "env", "prod") // sent when the client asked for info
		return mcp.TextResult("deployed"), nil
	})
}
