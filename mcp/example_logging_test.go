package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// Logs to the client: a handler logs with slog and the request's
// context; NewLogHandler sends each record the client asked for (its
// LogLevel and above) as notifications/message, which OnLog receives.
func ExampleNewLogHandler_client() {
	// #region log-handler
	log := slog.New(mcp.NewLogHandler(&mcp.LogHandlerOptions{Logger: "deploy"}))
	srv := mcp.NewServer(mcp.Implementation{Name: "deployer", Version: "1.0.0"}, nil)
	srv.AddTool(&mcp.Tool{Name: "deploy"}, func(ctx context.Context, req *mcp.CallToolRequest) (mcp.ToolResponse, error) {
		log.DebugContext(ctx, "resolving", "env", "prod") // below the client's level: dropped
		log.InfoContext(ctx, "deploying", "env", "prod")
		return mcp.TextResult("deployed"), nil
	})
	// #endregion log-handler

	// #region log-client
	client := connect(srv, &mcp.ClientOptions{
		LogLevel: mcp.LevelInfo,
		OnLog: func(m *mcp.LoggingMessageParams) {
			data, _ := json.Marshal(m.Data)
			fmt.Println(m.Level, m.Logger, string(data))
		},
	})
	// #endregion log-client
	defer client.Close()
	res, err := client.CallTool(context.Background(), "deploy", map[string]any{}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	// Output:
	// info deploy {"env":"prod","msg":"deploying"}
	// deployed
}
