// Command apps serves an MCP Apps server (the io.modelcontextprotocol/ui
// extension): a forecast tool linked to a page, ui://forecast/view.html,
// that a host renders in a sandboxed iframe and feeds the tool's result
// over postMessage; the page asks for the hours of a day with
// forecast_day, a tool only the page may call.
//
// Next to the MCP endpoint it serves a minimal host, so that the page
// can be seen in a browser without an MCP client: the host page (Go
// calls the tool with an mcp.Client that declares the extension) and
// its sandbox proxy, on a second origin.
//
//	go run ./examples/apps                 # MCP on 127.0.0.1:8080/mcp, host page on /
//	go run ./examples/apps -http :0 -sandbox :0
package main

import (
	"context"
	"errors"
	"flag"
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

func main() {
	log.SetFlags(0)
	addr := flag.String("http", "127.0.0.1:8080", "address of the MCP endpoint (/mcp) and of the host page (/)")
	sandbox := flag.String("sandbox", "127.0.0.1:8081", "address of the host's sandbox proxy (another origin)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *addr, *sandbox, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// run serves until ctx ends. Its first line on out is
// "listening on http://HOST:PORT/mcp".
func run(ctx context.Context, addr, sandboxAddr string, out io.Writer) error {
	d, err := start(addr, sandboxAddr)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "listening on", d.mcpURL)
	fmt.Fprintln(out, "sandbox proxy on", d.sandboxOrigin)
	fmt.Fprintf(out, "open %s/?city=Lisbon to see the forecast view in a minimal host\n", d.hostURL)
	<-ctx.Done()
	return d.Close()
}

// demo is the running example: the MCP server with the host beside it.
type demo struct {
	mcpURL, hostURL, sandboxOrigin string

	srv     *mcp.Server
	host    *host
	servers []*http.Server
}

// start listens on addr (MCP endpoint and host page) and sandboxAddr
// (the sandbox proxy) and serves them.
func start(addr, sandboxAddr string) (*demo, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	sln, err := net.Listen("tcp", sandboxAddr)
	if err != nil {
		ln.Close()
		return nil, err
	}
	d := &demo{
		hostURL:       "http://" + ln.Addr().String(),
		sandboxOrigin: "http://" + sln.Addr().String(),
		srv:           newServer(),
	}
	d.mcpURL = d.hostURL + "/mcp"
	d.host = newHost(d.mcpURL, d.sandboxOrigin)
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewHTTPHandler(d.srv, nil))
	mux.Handle("/", d.host.handler())
	for _, s := range []struct {
		ln net.Listener
		h  http.Handler
	}{{ln, mux}, {sln, sandboxHandler()}} {
		// No WriteTimeout: SSE responses stay open (the MCP handler gives
		// each SSE write its own deadline).
		hs := &http.Server{Handler: s.h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, IdleTimeout: 2 * time.Minute}
		d.servers = append(d.servers, hs)
		go hs.Serve(s.ln)
	}
	return d, nil
}

// Close stops serving.
func (d *demo) Close() error {
	errs := []error{d.host.Close(), d.srv.Close()}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, hs := range d.servers {
		errs = append(errs, hs.Shutdown(ctx))
	}
	return errors.Join(errs...)
}
