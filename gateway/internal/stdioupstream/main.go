// Command stdioupstream is the stdio upstream of the gateway's tests: a
// roundtrip server on stdio with tools that say who it is, wait for
// ever, and start a child of their own (so that a test can check that
// the whole process group goes with it).
package main

import (
	"context"
	"os"
	"os/exec"
	"strconv"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

type none struct{}

type echoIn struct {
	Text string `json:"text"`
}

func main() {
	srv := mcp.NewServer(mcp.Implementation{Name: "stdio-upstream", Version: "1"}, nil)
	mcp.AddTypedTool(srv, &mcp.Tool{Name: "echo"}, func(ctx context.Context, req *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, error) {
		return mcp.TextResult(in.Text), nil
	})
	mcp.AddTypedTool(srv, &mcp.Tool{Name: "pid"}, func(ctx context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, error) {
		return mcp.TextResult(strconv.Itoa(os.Getpid())), nil
	})
	mcp.AddTypedTool(srv, &mcp.Tool{Name: "hang"}, func(ctx context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	mcp.AddTypedTool(srv, &mcp.Tool{Name: "spawn"}, func(ctx context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, error) {
		cmd := exec.Command("sleep", "300")
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		return mcp.TextResult(strconv.Itoa(cmd.Process.Pid)), nil
	})
	if err := srv.ServeStdio(context.Background()); err != nil {
		os.Exit(1)
	}
}
