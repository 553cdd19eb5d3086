package mcp_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// The in-memory pair: a server and a client in one process, for tests
// and embedding, with no port and no subprocess.
func ExampleNewInMemoryTransports() {
	srv := provisioner(nil)
	// #region memory
	clientEnd, serverEnd := mcp.NewInMemoryTransports()
	go srv.ServeStream(context.Background(), serverEnd, serverEnd, nil)
	client := mcp.NewClient(mcp.NewStreamClientTransport(clientEnd, nil), nil)
	defer client.Close()
	// #endregion memory
	for t, err := range client.Tools(context.Background()) {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println("tool:", t.Name)
	}
	// Output:
	// tool: provision
}

// Streamable HTTP and the HTTP+SSE transport of 2024-11-05 side by side,
// on one mux; a client of either finds its way.
func ExampleNewSSEHandler() {
	srv := provisioner(nil)
	// #region http-mux
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewHTTPHandler(srv, &mcp.HTTPOptions{
		AllowedOrigins: []string{"https://app.example"}, // besides loopback origins
	}))
	mux.Handle("/sse", mcp.NewSSEHandler(srv, nil)) // HTTP+SSE (2024-11-05)
	mux.Handle("/readyz", mcp.HealthHandler(srv))
	// #endregion http-mux
	ts := httptest.NewServer(mux)
	defer ts.Close()

	answer := func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: map[string]any{"region": "us-east-1"}}, nil
	}
	// #region http-clients
	streamable := mcp.NewHTTPClientTransport(ts.URL+"/mcp", nil)
	sse := mcp.NewHTTPClientTransport(ts.URL+"/sse", &mcp.HTTPClientOptions{SSE: true})
	// #endregion http-clients
	for name, tr := range map[string]mcp.ClientTransport{"streamable": streamable, "sse": sse} {
		client := mcp.NewClient(tr, &mcp.ClientOptions{Elicitation: answer})
		res, err := client.CallTool(context.Background(), "provision", ProvisionArgs{Name: "logs"}, nil)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(name, client.ProtocolVersion()+":", res.Content[0].(*mcp.TextContent).Text)
		client.Close()
	}
	// Unordered output:
	// streamable 2026-07-28: logs in us-east-1
	// sse 2025-11-25: logs in us-east-1
}
