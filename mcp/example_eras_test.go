package mcp_test

import (
	"context"
	"fmt"
	"net/http/httptest"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// One server, one handler, every era: a 2026-07-28 client gets an
// input_required round, a client of an earlier revision gets a session
// and a live elicitation/create request, and the same Elicit call serves
// both.
func Example_eras() {
	// #region eras-server
	srv := provisioner(nil) // an ordinary server: dual-era by default
	ts := httptest.NewServer(mcp.NewHTTPHandler(srv, nil))
	// #endregion eras-server
	defer ts.Close()

	answer := func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: map[string]any{"region": "eu-west-1"}}, nil
	}
	// #region eras-clients
	for _, opts := range []*mcp.ClientOptions{
		{Elicitation: answer},                       // ModeAuto: 2026-07-28 with this server
		{Elicitation: answer, Mode: mcp.ModeLegacy}, // initialize, 2025-11-25 session
		{Elicitation: answer, Mode: mcp.ModePinned, ProtocolVersion: "2025-06-18"},
	} {
		client := mcp.NewClient(mcp.NewHTTPClientTransport(ts.URL, nil), opts)
		res, err := client.CallTool(context.Background(), "provision", ProvisionArgs{Name: "orders"}, nil)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(client.ProtocolVersion()+":", res.Content[0].(*mcp.TextContent).Text)
		client.Close()
	}
	// #endregion eras-clients
	fmt.Println("server speaks:", srv.SupportedVersions())
	// Output:
	// 2026-07-28: orders in eu-west-1
	// 2025-11-25: orders in eu-west-1
	// 2025-06-18: orders in eu-west-1
	// server speaks: [2026-07-28 2025-11-25 2025-06-18 2025-03-26 2024-11-05]
}
