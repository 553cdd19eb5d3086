// Command quickstart is the server and the client of the quickstart:
// a tool that asks the user a question, served over Streamable HTTP,
// and a client that calls it and answers.
//
//	go run ./examples/quickstart serve            # listens on 127.0.0.1:8000
//	go run ./examples/quickstart call orders      # in another terminal
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// #region server
type ProvisionArgs struct {
	Name string `json:"name" jsonschema:"the database name"`
}

type Region struct {
	Region string `json:"region" mcp:"enum=eu-west-1|us-east-1"`
}

func newServer() *mcp.Server {
	srv := mcp.NewServer(mcp.Implementation{Name: "provisioner", Version: "1.0.0"}, nil)
	mcp.AddTypedTool(srv, &mcp.Tool{Name: "provision", Description: "Create a database"},
		func(ctx context.Context, req *mcp.CallToolRequest, in ProvisionArgs) (*mcp.CallToolResult, error) {
			region, err := mcp.Elicit[Region](ctx, "Which region should "+in.Name+" live in?")
			if err != nil {
				return nil, err // not answered yet: the client is asked, the call comes back
			}
			r, err := region.Value() // declined or cancelled: an isError result
			if err != nil {
				return nil, err
			}
			return mcp.TextResult("Provisioned " + in.Name + " in " + r.Region), nil
		})
	return srv
}

// #endregion server

// #region serve
func serve(ctx context.Context, ln net.Listener, out io.Writer) error {
	srv := newServer()
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewHTTPHandler(srv, nil))
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	go func() {
		<-ctx.Done()
		_ = srv.Drain(context.Background())
		_ = hs.Shutdown(context.Background())
	}()
	fmt.Fprintf(out, "listening on http://%s/mcp\n", ln.Addr())
	if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// #endregion serve

// #region client
func call(ctx context.Context, url, name string, out io.Writer) error {
	client := mcp.NewClient(mcp.NewHTTPClientTransport(url, nil), &mcp.ClientOptions{
		Elicitation: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			fmt.Fprintln(out, "server asks:", r.Message)
			return &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: map[string]any{"region": "eu-west-1"}}, nil
		},
	})
	defer client.Close()
	res, err := client.CallTool(ctx, "provision", ProvisionArgs{Name: name}, nil)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, res.Content[0].(*mcp.TextContent).Text)
	return nil
}

// #endregion client

func main() {
	log.SetFlags(0)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch {
	case len(os.Args) == 2 && os.Args[1] == "serve":
		var ln net.Listener
		if ln, err = net.Listen("tcp", "127.0.0.1:8000"); err == nil {
			err = serve(ctx, ln, os.Stdout)
		}
	case len(os.Args) == 3 && os.Args[1] == "call":
		err = call(ctx, "http://127.0.0.1:8000/mcp", os.Args[2], os.Stdout)
	default:
		err = errors.New("usage: quickstart serve | quickstart call NAME")
	}
	if err != nil {
		log.Fatal(err)
	}
}
