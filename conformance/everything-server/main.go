// Command everything-server is the "everything" server of the official MCP
// conformance suite (@modelcontextprotocol/conformance), written against
// the public API of package mcp for protocol revision 2026-07-28.
//
// It registers every tool, prompt and resource the suite's server
// scenarios call (see docs: conformance.md §2.6 and §2.7):
//
//	everything-server -http 127.0.0.1:0   # Streamable HTTP at /mcp, HTTP+SSE at /sse
//	everything-server -stdio              # newline-delimited JSON-RPC on stdin/stdout
//
// In HTTP mode the first line on stdout is exactly
// "listening on http://HOST:PORT/mcp"; everything else goes to stderr.
// The same process serves the HTTP+SSE transport of 2024-11-05 at /sse
// on the same address (GET for the event stream, POSTs to the URL its
// endpoint event names), with the same tools.
//
// With -session-store a Redis URL, the 2025-era sessions (Streamable HTTP
// and HTTP+SSE) live in Redis, so that processes sharing it serve each
// other's sessions (-guard-sentinels: the URL is then the master's name).
//
// With the standard OpenTelemetry variables set (for example
// OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318, and
// OTEL_EXPORTER_OTLP_PROTOCOL=grpc for gRPC), every request is a span,
// the child of the trace context its params._meta carries, and the MCP
// metrics are exported; nothing is exported when none is set. The
// console exporters write to stderr.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/roundtrip-mcp/roundtrip/mcp"
	"github.com/roundtrip-mcp/roundtrip/otel"
	"github.com/roundtrip-mcp/roundtrip/requeststate"
)

func main() {
	httpAddr := flag.String("http", "127.0.0.1:0", "listen on this address and serve Streamable HTTP at /mcp (and HTTP+SSE at /sse)")
	stdio := flag.Bool("stdio", false, "serve the stdio transport on stdin/stdout instead of HTTP")
	var sf stateFlags
	flag.StringVar(&sf.keys, "state-keys", "", "comma-separated base64url request-state keys (first seals, all verify); default $ROUNDTRIP_STATE_KEYS, else a random per-process key. Any user can read a command line: prefer -state-key-file")
	flag.StringVar(&sf.keyFile, "state-key-file", "", "file of base64url request-state keys, one per line, sealing key first; re-read on SIGHUP and when it changes (rotation without a restart)")
	flag.DurationVar(&sf.ttl, "state-ttl", 0, "lifetime of one round's requestState, e.g. 3s (default 10m)")
	flag.StringVar(&sf.guard, "guard", "", `single-use request state: "memory", or a Redis URL (redis://HOST:PORT/DB, unix:///PATH.sock); with -guard-sentinels, the Sentinel master name`)
	flag.StringVar(&sf.sentinels, "guard-sentinels", "", "comma-separated Redis Sentinel addresses (HOST:PORT); -guard and -session-store then name the master")
	flag.IntVar(&sf.replicas, "guard-replicas", 0, "replicas that must acknowledge each single-use record (WAIT) before it counts")
	flag.StringVar(&sf.sessions, "session-store", "", `keep the 2025-era sessions in Redis, shared by every process given the same store: a Redis URL (redis://HOST:PORT/DB, rediss://, unix:///PATH.sock); with -guard-sentinels, the Sentinel master name`)
	flag.DurationVar(&sf.lease, "guard-lease", 0, "how long a running leg holds its single-use claim without renewal (default 10s)")
	pf := partyFlagsOf(flag.CommandLine) // party.go
	flag.Parse()

	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	slog.SetDefault(logger)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	shutdown, err := otel.Setup(ctx, &otel.SetupOptions{ServiceName: "roundtrip-everything-server", ServiceVersion: "0.1.0"})
	if err != nil {
		fmt.Fprintln(os.Stderr, "everything-server: telemetry:", err)
		os.Exit(2)
	}
	rs, keyFile, err := stateOptions(sf, logger)
	if err != nil {
		fmt.Fprintln(os.Stderr, "everything-server:", err)
		os.Exit(2)
	}
	if keyFile != nil {
		go reloadKeys(ctx, keyFile)
	}
	store, err := sessionStoreOf(sf)
	if err != nil {
		fmt.Fprintln(os.Stderr, "everything-server:", err)
		os.Exit(2)
	}
	hopts, err := pf.httpOptions(flag.CommandLine, sf)
	if err != nil {
		fmt.Fprintln(os.Stderr, "everything-server:", err)
		os.Exit(2)
	}
	srv := newServer(logger, rs, store)

	if *stdio {
		err = srv.ServeStdio(ctx)
		if errors.Is(err, context.Canceled) {
			err = nil
		}
	} else {
		err = serveHTTP(ctx, srv, *httpAddr, hopts, logger)
	}
	// Export what is still buffered before exiting.
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	if serr := shutdown(sctx); serr != nil {
		logger.Warn("everything-server: exporting telemetry", "err", serr)
	}
	cancel()
	if err != nil {
		logger.Error("everything-server", "err", err)
		os.Exit(1)
	}
}

// reloadKeys re-reads the key file on SIGHUP and when it changes.
func reloadKeys(ctx context.Context, kf *requeststate.KeyFile) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go kf.Watch(ctx, 2*time.Second)
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			kf.Reload()
		}
	}
}

// serveHTTP listens on addr, announces the endpoint on stdout and serves
// until ctx ends, then shuts down gracefully.
func serveHTTP(ctx context.Context, srv *mcp.Server, addr string, hopts mcp.HTTPOptions, logger *slog.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewHTTPHandler(srv, &hopts))
	mux.Handle("/sse", mcp.NewSSEHandler(srv, &mcp.SSEOptions{HTTPOptions: hopts})) // HTTP+SSE (2024-11-05)
	mux.Handle("/livez", mcp.HealthHandler(srv))
	mux.Handle("/readyz", mcp.HealthHandler(srv))
	hs := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	// The first stdout line is the contract with scripts/conformance.sh.
	if _, err := fmt.Fprintf(os.Stdout, "listening on http://%s/mcp\n", ln.Addr()); err != nil {
		ln.Close()
		return err
	}
	logger.Info("everything-server: serving Streamable HTTP at /mcp and HTTP+SSE at /sse", "addr", ln.Addr().String())

	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	logger.Info("everything-server: draining")
	// Readiness off, new requests answered 503 (retried elsewhere),
	// listen streams ended, requests in flight finished; then closed.
	dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Second)
	if err := srv.Drain(dctx); err != nil {
		logger.Warn("everything-server: requests still running after the drain timeout", "inFlight", srv.InFlight())
	}
	dcancel()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		hs.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
