package mcp_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// Readiness and drain: /readyz turns 503 as soon as Drain begins, so the
// balancer stops sending new requests, and Drain waits for the requests
// in flight before the server closes.
func ExampleServer_Drain() {
	srv := provisioner(nil)
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewHTTPHandler(srv, nil))
	mux.Handle("/livez", mcp.HealthHandler(srv))
	mux.Handle("/readyz", mcp.HealthHandler(srv))
	ts := httptest.NewServer(mux)
	defer ts.Close()
	status := func(path string) int {
		resp, err := http.Get(ts.URL + path)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	fmt.Println("ready:", status("/readyz"))

	// #region drain
	// On SIGTERM: drain the MCP server, then shut the HTTP server down.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Drain(ctx); err != nil {
		fmt.Println("gave up waiting:", err)
	}
	// then: httpServer.Shutdown(ctx)
	// #endregion drain
	fmt.Println("after drain: live", status("/livez"), "ready", status("/readyz"))
	// Output:
	// ready: 200
	// after drain: live 200 ready 503
}
