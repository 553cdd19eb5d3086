// Command stdio is a server over stdio and the client that starts it:
// run with "serve" it serves MCP on its standard input and output; run
// without arguments it starts itself as a child process with "serve",
// and calls the server's tool through the child's stdio.
//
//	go run ./examples/stdio
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"strings"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// #region stdio-server
func serveStdio(ctx context.Context) error {
	srv := mcp.NewServer(mcp.Implementation{Name: "upper", Version: "1.0.0"}, nil)
	mcp.AddTypedTool(srv, &mcp.Tool{Name: "upper"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct {
		Text string `json:"text"`
	}) (*mcp.CallToolResult, error) {
		return mcp.TextResult(strings.ToUpper(in.Text)), nil
	})
	// Standard output carries the protocol: logs go to standard error.
	return srv.ServeStdio(ctx)
}

// #endregion stdio-server

// #region stdio-client
func callChild(ctx context.Context, cmd *exec.Cmd, out io.Writer) error {
	cmd.Stderr = os.Stderr // the server's logs
	tr, err := mcp.NewCommandTransport(cmd, nil)
	if err != nil {
		return err
	}
	client := mcp.NewClient(tr, nil)
	defer client.Close() // closes the child's stdin, waits for it to exit
	res, err := client.CallTool(ctx, "upper", map[string]any{"text": "over stdio"}, nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%s (protocol %s)\n", res.Content[0].(*mcp.TextContent).Text, client.ProtocolVersion())
	return nil
}

// #endregion stdio-client

func main() {
	log.SetFlags(0)
	ctx := context.Background()
	if len(os.Args) > 1 && os.Args[1] == "serve" {
		if err := serveStdio(ctx); err != nil {
			log.Fatal(err)
		}
		return
	}
	self, err := os.Executable()
	if err != nil {
		log.Fatal(err)
	}
	if err := callChild(ctx, exec.Command(self, "serve"), os.Stdout); err != nil {
		log.Fatal(err)
	}
}
