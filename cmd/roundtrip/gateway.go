package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/roundtrip-mcp/roundtrip/auth"
	"github.com/roundtrip-mcp/roundtrip/gateway"
	"github.com/roundtrip-mcp/roundtrip/mcp"
	"github.com/roundtrip-mcp/roundtrip/otel"
	"github.com/roundtrip-mcp/roundtrip/redis/redisguard"
	"github.com/roundtrip-mcp/roundtrip/redis/redissessions"
	"github.com/roundtrip-mcp/roundtrip/requeststate"
)

// gatewayHelp is "roundtrip gateway -h".
const gatewayHelp = `Usage: roundtrip gateway -c CONFIG [--http ADDR | --stdio] [--allow-command]

Serves every server of CONFIG (an mcpServers file, read as the other commands
read it) as one MCP server: their tools and prompts named SERVER__NAME (at most
64 characters), their resources and templates, to clients of every revision,
each era's questions carried to the other's. --http ADDR serves /mcp
(Streamable HTTP, every revision), /sse (HTTP+SSE of 2024-11-05), /livez and
/readyz (each upstream's health, 503 while one is not up or while draining);
the first line on stdout is "listening on http://ADDR/mcp". --stdio serves on
stdin and stdout instead. Logs are JSON on stderr; OTEL_* variables export
traces and metrics. SIGTERM drains: new requests get 503, calls in flight
finish within gateway.drainTimeout.

The "gateway" member of CONFIG (ignored by other clients) holds the options:
  {"mcpServers": {...},
   "gateway": {"separator": "__", "timeout": "60s", "maxConcurrency": 16,
     "roundTimeout": "5m", "maxHeld": 1024, "maxHeldPerPrincipal": 16,
     "stateKeysFile": "keys.txt", "stateTTL": "10m", "redis": "redis://host:6379/0",
     "drainTimeout": "30s", "only": ["NAME", ...],
     "auth": {"issuer": ..., "audience": ..., "jwksUrl": ..., "scopes": [...],
              "resource": "https://host/mcp", "tokensFile": "tokens.json"},
     "servers": {"NAME": {"prefix": "gh", "timeout": "30s", "maxConcurrency": 4,
       "allow": {"scopes": ["github"]}, "tools": {"delete_repo": {"scopes": ["admin"]}},
       "ask": {"forms": true, "sampling": false, "roots": true, "urlHosts": ["github.com"]}}}}}

Without -c, the files the CLI reads (your own config and ./.mcp.json) are
merged; a stdio command of a project file runs only with --allow-command.`

// gwFlags are the command line of "roundtrip gateway".
type gwFlags struct {
	config       string
	httpAddr     string
	stdio        bool
	allowCommand bool
}

func parseGatewayFlags(args []string) (gwFlags, error) {
	var f gwFlags
	fs := flag.NewFlagSet("roundtrip gateway", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&f.config, "c", "", "the config `FILE` (mcpServers, and the gateway section)")
	fs.StringVar(&f.config, "config", "", "the config `FILE` (as -c)")
	fs.StringVar(&f.httpAddr, "http", "", "serve Streamable HTTP at http://`ADDR`/mcp (port 0: any free port)")
	fs.BoolVar(&f.stdio, "stdio", false, "serve on stdin and stdout")
	fs.BoolVar(&f.allowCommand, "allow-command", false, "run the stdio commands a project file (./.mcp.json) defines")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return f, errHelp
		}
		return f, usagef("%v", err)
	}
	switch {
	case fs.NArg() > 0:
		return f, usagef("unexpected arguments %q", fs.Args())
	case f.stdio == (f.httpAddr != ""):
		return f, usagef("give one of --http ADDR and --stdio")
	}
	return f, nil
}

// runGateway is "roundtrip gateway": it serves until ctx ends (SIGTERM,
// SIGINT), then drains. stdout is raw (with --stdio it is the protocol).
func runGateway(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	err := gatewayMain(ctx, args, stdin, stdout, stderr)
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errHelp):
		fmt.Fprintln(stdout, gatewayHelp)
		return exitOK
	}
	fmt.Fprintln(stderr, "roundtrip gateway:", err)
	var u *usageError
	if errors.As(err, &u) {
		fmt.Fprintln(stderr, `Run "roundtrip gateway -h" for usage.`)
		return exitUsage
	}
	return exitFailure
}

func gatewayMain(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	f, err := parseGatewayFlags(args)
	if err != nil {
		return err
	}
	cfg, sec, err := loadGatewayConfig(f.config)
	if err != nil {
		return err
	}
	ups, notes, err := gwUpstreams(cfg, sec, f.allowCommand)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	for _, n := range notes {
		logger.Warn(n)
	}
	for i := range ups {
		if ups[i].Command != "" {
			ups[i].Stderr = &lineLogger{log: logger, upstream: ups[i].Name}
		}
	}

	// Request state: keys from the file (shared by a fleet) or, without
	// one, a random key of this process.
	var rs mcp.RequestStateOptions
	rs.TTL = time.Duration(sec.StateTTL)
	var keyFile *requeststate.KeyFile
	if sec.StateKeysFile != "" {
		if keyFile, err = requeststate.OpenKeyFile(sec.StateKeysFile); err != nil {
			return usagef("gateway.stateKeysFile: %v", err)
		}
		keyFile.Logger = logger
		keyFile.OnReload = func(ids []string, err error) {
			if err != nil {
				logger.Error("state key file not reloaded; keeping the keys in use", "file", sec.StateKeysFile, "err", err)
				return
			}
			logger.Info("state keys reloaded", "file", sec.StateKeysFile, "keyIDs", strings.Join(ids, ","))
		}
		rs.Codec = keyFile.Ring
	}
	// Downstream auth, checked before anything starts.
	var bo *auth.BearerOptions
	var prm *auth.ProtectedResourceMetadata
	if sec.Auth != nil {
		if bo, prm, err = bearerOptions(sec.Auth, logger); err != nil {
			return usagef("gateway.auth: %v", err)
		}
	}
	sopts := &mcp.ServerOptions{Logger: logger}
	// #region gateway-fleet
	if sec.Redis != "" {
		if keyFile == nil {
			return usagef("gateway.redis needs gateway.stateKeysFile: the instances of a fleet must share the request-state keys")
		}
		ro, err := redis.ParseURL(sec.Redis)
		if err != nil {
			return usagef("gateway.redis: %v", err)
		}
		ro.DialTimeout, ro.ReadTimeout, ro.WriteTimeout = time.Second, time.Second, time.Second
		rdb := redis.NewClient(ro)
		defer rdb.Close()
		guard := redisguard.New(rdb)
		prepareGuard(ctx, guard, logger)
		rs.Guard = guard
		sopts.SessionStore = redissessions.New(rdb, redissessions.Options{})
	}
	sopts.RequestState = rs
	otel.InstrumentServer(sopts, nil)
	// #endregion gateway-fleet

	g, err := gateway.New(ups, &gateway.Options{
		Implementation: mcp.Implementation{Name: "roundtrip-gateway", Version: version},
		Server:         sopts,
		Pool: &gateway.PoolOptions{Logger: logger, Info: mcp.Implementation{Name: "roundtrip-gateway", Version: version},
			// Each upstream leg is a client span in the downstream call's
			// trace, its context sent upstream in params._meta.
			ConfigureClient: func(_ string, o *mcp.ClientOptions) *mcp.ClientOptions { return otel.InstrumentClient(o, nil) }},
		Separator:           sec.Separator,
		RoundTimeout:        time.Duration(sec.RoundTimeout),
		MaxHeld:             sec.MaxHeld,
		MaxHeldPerPrincipal: sec.MaxHeldPerPrincipal,
	})
	if err != nil {
		return usagef("%v", err)
	}
	defer g.Close()
	if keyFile != nil {
		// Re-read when the file changes and on SIGHUP: a rotation is three
		// rewrites of the file on every instance, with no restart.
		kctx, kcancel := context.WithCancel(context.Background())
		defer kcancel()
		go keyFile.Watch(kctx, 2*time.Second)
		hup := make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		defer signal.Stop(hup)
		go func() {
			for {
				select {
				case <-kctx.Done():
					return
				case <-hup:
					keyFile.Reload()
				}
			}
		}()
	}
	srv := g.Server()
	drain := time.Duration(sec.DrainTimeout)
	if drain == 0 {
		drain = 30 * time.Second
	}

	if f.stdio {
		// A stdio client lists once, at the start: wait until every
		// upstream has been tried once (bounded by the longest timeout).
		wctx, wcancel := context.WithTimeout(ctx, readyWait(ups))
		if err := g.WaitReady(wctx); err != nil && ctx.Err() == nil {
			logger.Warn("serving before every upstream was tried", "err", err)
		}
		wcancel()
		logger.Info("serving on stdio", "upstreams", len(ups))
		err := srv.ServeStream(ctx, stdin, stdout, nil)
		if ctx.Err() != nil {
			return nil
		}
		return err
	}

	mux := http.NewServeMux()
	hopts := &mcp.HTTPOptions{AllowedHosts: sec.AllowedHosts, AllowedOrigins: sec.AllowedOrigins}
	var mcpH, sseH http.Handler = mcp.NewHTTPHandler(srv, hopts), mcp.NewSSEHandler(srv, &mcp.SSEOptions{HTTPOptions: *hopts})
	var verifier auth.TokenVerifier
	if bo != nil {
		verifier = bo.Verifier
		mcpH, sseH = auth.RequireBearer(mcpH, bo), auth.RequireBearer(sseH, bo)
		if prm != nil {
			u, _ := url.Parse(bo.ResourceMetadataURL)
			mux.Handle(u.Path, auth.ProtectedResourceHandler(prm))
		}
	}
	// #region gateway-serve
	mux.Handle("/mcp", mcpH)
	mux.Handle("/sse", sseH)
	mux.Handle("/livez", mcp.HealthHandler(srv))
	mux.Handle("/readyz", readyz(srv, g.Pool(), verifier))
	// #endregion gateway-serve
	hs := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second, // the MCP handler clears it once a body is in
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	ln, err := net.Listen("tcp", f.httpAddr)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(stdout, "listening on http://%s/mcp\n", ln.Addr()); err != nil {
		ln.Close()
		return err
	}
	logger.Info("serving", "addr", ln.Addr().String(), "pid", os.Getpid(), "upstreams", len(ups), "fleet", sec.Redis != "", "auth", sec.Auth != nil)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	logger.Info("draining", "inFlight", srv.InFlight(), "timeout", drain.String())
	start := time.Now()
	dctx, dcancel := context.WithTimeout(context.Background(), drain)
	derr := srv.Drain(dctx)
	dcancel()
	if derr != nil {
		logger.Warn("drain timed out; cutting the calls still in flight", "inFlight", srv.InFlight(), "err", derr)
	}
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	if err := hs.Shutdown(sctx); err != nil {
		hs.Close()
	}
	scancel()
	logger.Info("stopped", "drained", derr == nil, "took", time.Since(start).Round(time.Millisecond).String())
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// readyz answers 200 while the server is not draining and every upstream
// is up, 503 otherwise (a balancer stops sending to a draining instance;
// a degraded one still serves what is up), with {"ready": ...,
// "draining": ..., "upstreams": [gateway.Health...]}. Probes carry no
// token, so with auth the upstreams' names, states and last errors are
// shown only to a request whose bearer token verifies.
func readyz(srv *mcp.Server, pool *gateway.Pool, verifier auth.TokenVerifier) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		health := pool.Health()
		draining := !srv.Ready()
		ready := !draining
		for _, h := range health {
			ready = ready && h.State == gateway.HealthUp
		}
		body := map[string]any{"ready": ready}
		if draining {
			body["draining"] = true
		}
		if verifier == nil || bearerVerifies(r, verifier) {
			body["upstreams"] = health
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		if !ready {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		json.NewEncoder(w).Encode(body)
	})
}

// bearerVerifies reports whether r carries a bearer token v accepts.
func bearerVerifies(r *http.Request, v auth.TokenVerifier) bool {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return false
	}
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	_, err := v.Verify(ctx, strings.TrimSpace(token))
	return err == nil
}

// lineLogger logs what a stdio upstream writes on its standard error, a
// record per line ("upstream stderr", with the upstream's name), lines cut
// at maxStderrLine bytes. The JSON handler escapes what it records.
type lineLogger struct {
	log      *slog.Logger
	upstream string
	mu       sync.Mutex
	buf      []byte
	cut      bool // the current line was cut: drop the rest of it
}

const maxStderrLine = 4 << 10

func (l *lineLogger) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if !l.cut {
			room := maxStderrLine - len(l.buf)
			if len(chunk) > room {
				l.buf = append(l.buf, chunk[:room]...)
				l.emit(true)
				l.cut = true
			} else {
				l.buf = append(l.buf, chunk...)
			}
		}
		if i < 0 {
			break
		}
		if !l.cut {
			l.emit(false)
		}
		l.cut = false
		p = p[i+1:]
	}
	return n, nil
}

func (l *lineLogger) emit(truncated bool) {
	line := strings.TrimRight(string(l.buf), "\r")
	l.buf = l.buf[:0]
	if line == "" {
		return
	}
	if truncated {
		l.log.Info("upstream stderr", "upstream", l.upstream, "line", line, "truncated", true)
		return
	}
	l.log.Info("upstream stderr", "upstream", l.upstream, "line", line)
}

// readyWait is how long --stdio waits for the upstreams before serving:
// the longest of their timeouts (60 s when none is set).
func readyWait(ups []gateway.Upstream) time.Duration {
	d := time.Duration(0)
	for _, u := range ups {
		d = max(d, u.Timeout)
	}
	if d == 0 {
		d = 60 * time.Second
	}
	return d
}

// bearerOptions builds the downstream authentication, and the protected
// resource metadata when a resource URL is given.
func bearerOptions(a *gwAuth, logger *slog.Logger) (*auth.BearerOptions, *auth.ProtectedResourceMetadata, error) {
	bo := &auth.BearerOptions{Scopes: a.Scopes, Logger: logger}
	switch {
	case a.TokensFile != "" && (a.Issuer != "" || a.JWKSURL != ""):
		return nil, nil, errors.New("give tokensFile or issuer/audience/jwksUrl, not both")
	case a.TokensFile != "":
		b, err := os.ReadFile(a.TokensFile)
		if err != nil {
			return nil, nil, err
		}
		var tokens map[string]staticToken
		if err := json.Unmarshal(b, &tokens); err != nil {
			return nil, nil, fmt.Errorf("tokensFile %s: %v", a.TokensFile, err)
		}
		bo.Verifier = auth.TokenVerifierFunc(func(ctx context.Context, token string) (*mcp.TokenInfo, error) {
			t, ok := tokens[token]
			if !ok {
				return nil, errors.New("unknown token")
			}
			return &mcp.TokenInfo{Subject: t.Subject, ClientID: t.ClientID, Scopes: t.Scopes, Issuer: "roundtrip-gateway-tokens"}, nil
		})
	default:
		v, err := auth.NewJWTVerifier(auth.JWTOptions{Issuer: a.Issuer, Audience: cmpOr(a.Audience, a.Resource), JWKSURL: a.JWKSURL})
		if err != nil {
			return nil, nil, err
		}
		bo.Verifier = v
	}
	if a.Resource == "" {
		return bo, nil, nil
	}
	mdURL, err := auth.ResourceMetadataURL(a.Resource)
	if err != nil {
		return nil, nil, fmt.Errorf("resource: %v", err)
	}
	bo.ResourceMetadataURL = mdURL
	return bo, &auth.ProtectedResourceMetadata{Resource: a.Resource, AuthorizationServers: cmpSlice(a.AuthorizationServers, a.Issuer), ScopesSupported: a.Scopes,
		BearerMethodsSupported: []string{"header"}, ResourceName: "roundtrip gateway"}, nil
}

func cmpSlice(s []string, fallback string) []string {
	if len(s) > 0 || fallback == "" {
		return s
	}
	return []string{fallback}
}

// prepareGuard records the single-use store's generation before the first
// state is sealed, retrying for a few seconds when Redis is not up yet.
// Not fatal: until the store answers, guarded legs get 503 and the
// boundary tries again before it seals.
func prepareGuard(ctx context.Context, g *redisguard.Guard, logger *slog.Logger) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	for delay := 50 * time.Millisecond; ; delay = min(2*delay, 500*time.Millisecond) {
		actx, acancel := context.WithTimeout(ctx, time.Second)
		err := g.Prepare(actx)
		acancel()
		if err == nil {
			return
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			logger.Warn("the single-use store is not reachable yet; guarded legs get 503 until it is", "err", err)
			return
		case <-t.C:
		}
	}
}

// serviceName is the OTel service name of a run: roundtrip-gateway for
// "roundtrip gateway", roundtrip-cli otherwise.
func serviceName(args []string) string {
	if len(args) > 0 && args[0] == "gateway" {
		return "roundtrip-gateway"
	}
	return "roundtrip-cli"
}
