package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"

	"github.com/roundtrip-mcp/roundtrip/internal/netaddr"
	"github.com/roundtrip-mcp/roundtrip/mcp"
	"github.com/roundtrip-mcp/roundtrip/otel"
	"github.com/roundtrip-mcp/roundtrip/redis/redisfanout"
	"github.com/roundtrip-mcp/roundtrip/redis/redisguard"
	"github.com/roundtrip-mcp/roundtrip/redis/redissessions"
	"github.com/roundtrip-mcp/roundtrip/requeststate"
)

// keysEnv is the fallback for the request-state keys when no key file is
// given: comma-separated base64url keys, the first seals, all verify. A
// key file is better: it stays off the environment of child processes and
// can be rotated without a restart.
const keysEnv = "ROUNDTRIP_STATE_KEYS"

// instanceHeader names the instance that answered an HTTP request.
const instanceHeader = "X-Fleet-Instance"

// serveFlags are the settings of one instance.
type serveFlags struct {
	id           string
	addr         string
	redisURL     string
	sentinels    string
	master       string
	keyFile      string
	ttl          time.Duration
	replicas     int
	lease        time.Duration
	drainTimeout time.Duration
	ledger       string
	work         time.Duration
	metricsAddr  string
	proxies      []netip.Prefix // -trusted-proxies (internal/netaddr)
}

// parseServeFlags reads the serve flags; usage (and errors) go to
// usage.
func parseServeFlags(args []string, usage io.Writer) (serveFlags, error) {
	var f serveFlags
	fs := flag.NewFlagSet("fleet serve", flag.ContinueOnError)
	fs.SetOutput(usage)
	fs.StringVar(&f.id, "id", "", "this instance's id (letters, digits, '-'): logged and sent in "+instanceHeader+" (required)")
	fs.StringVar(&f.addr, "addr", "127.0.0.1:0", "listen address; the first stdout line is \"listening on ADDR\"")
	fs.StringVar(&f.redisURL, "redis", "", "the shared Redis: redis://HOST:PORT/DB, rediss://..., or unix:///PATH.sock")
	fs.StringVar(&f.sentinels, "sentinels", "", "comma-separated Redis Sentinel addresses (HOST:PORT), instead of -redis; -master names the group")
	fs.StringVar(&f.master, "master", "", "the Sentinel master name (with -sentinels)")
	fs.StringVar(&f.keyFile, "state-key-file", "", "file of base64url request-state keys, one per line, sealing key first; re-read on SIGHUP and when it changes (default: $"+keysEnv+")")
	fs.DurationVar(&f.ttl, "state-ttl", 0, "lifetime of one round's requestState (default 10m)")
	fs.IntVar(&f.replicas, "guard-replicas", 0, "replicas that must acknowledge each single-use record (WAIT) before it counts; 1 or more with Sentinel")
	fs.DurationVar(&f.lease, "guard-lease", 0, "how long a running leg holds its single-use claim without renewal (default 10s); keep it well under -state-ttl")
	fs.DurationVar(&f.drainTimeout, "drain-timeout", 30*time.Second, "on SIGTERM, how long the requests in flight may take to finish")
	fs.StringVar(&f.ledger, "ledger", "", "append one line per provisioned database to this file (the tool's side effect; shared by the fleet)")
	fs.DurationVar(&f.work, "provision-time", 0, "how long provisioning takes, on the last leg (a stand-in for real work)")
	fs.StringVar(&f.metricsAddr, "metrics-addr", "", "serve the metrics for Prometheus to scrape at http://`ADDR`/metrics, apart from /mcp (empty: no scrape endpoint; OTEL_* variables export over OTLP either way)")
	fs.Func("trusted-proxies", "comma-separated `CIDRs` (or bare IPs) of the proxies in front (nginx): behind them a client's party, for the per-client session quota, is its X-Forwarded-For address", func(v string) (err error) {
		f.proxies, err = netaddr.ParsePrefixes(v)
		return err
	})
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	switch {
	case fs.NArg() > 0:
		return f, fmt.Errorf("unexpected arguments %q", fs.Args())
	case f.id == "" || strings.IndexFunc(f.id, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-')
	}) >= 0:
		return f, errors.New("-id is required: letters, digits and '-'")
	case f.redisURL == "" && f.sentinels == "":
		return f, errors.New("set -redis or -sentinels: a fleet shares its single-use records")
	case f.redisURL != "" && f.sentinels != "":
		return f, errors.New("set -redis or -sentinels, not both")
	case f.sentinels != "" && f.master == "":
		return f, errors.New("-sentinels needs -master")
	case f.ttl < 0 || f.lease < 0 || f.drainTimeout < 0 || f.replicas < 0 || f.work < 0:
		return f, errors.New("durations and -guard-replicas must not be negative")
	}
	return f, nil
}

// redisClient connects to the store the flags name. Short timeouts: a
// store that does not answer is a 503 the client retries, not a hung leg.
func redisClient(f serveFlags) (redis.UniversalClient, error) {
	if f.sentinels != "" {
		return redis.NewFailoverClient(&redis.FailoverOptions{
			MasterName:    f.master,
			SentinelAddrs: strings.Split(f.sentinels, ","),
			DialTimeout:   time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second,
		}), nil
	}
	opts, err := redis.ParseURL(f.redisURL)
	if err != nil {
		return nil, fmt.Errorf("-redis: %w", err)
	}
	opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout = time.Second, time.Second, time.Second
	return redis.NewClient(opts), nil
}

// #region fleet-keys
// stateCodec loads the keys: the key file (returned, to be reloaded), or
// the environment.
func stateCodec(f serveFlags, logger *slog.Logger) (mcp.RequestStateOptions, *requeststate.KeyFile, error) {
	var o mcp.RequestStateOptions
	if f.keyFile == "" {
		keys, err := requeststate.ParseKeys(os.Getenv(keysEnv))
		if err == nil && len(keys) == 0 {
			err = errors.New("no keys: set -state-key-file (or " + keysEnv + "); a fleet needs shared keys")
		}
		o.Keys = keys
		return o, nil, err
	}
	kf, err := requeststate.OpenKeyFile(f.keyFile)
	if err != nil {
		return o, nil, fmt.Errorf("-state-key-file: %w", err)
	}
	logger.Info("request-state keys loaded", "file", f.keyFile, "keyIDs", strings.Join(kf.Ring.KeyIDs(), ","))
	kf.Logger = logger
	kf.OnReload = func(ids []string, err error) {
		if err != nil {
			logger.Error("key file not reloaded; keeping the keys in use", "file", f.keyFile, "err", err)
			return
		}
		logger.Info("request-state keys reloaded", "file", f.keyFile, "keyIDs", strings.Join(ids, ","))
	}
	o.Codec = kf.Ring
	return o, kf, nil
}

// #endregion fleet-keys

// prepareGuard records the store's generation before the first state is
// sealed, retrying for a few seconds when the store is not up yet. Not
// fatal: until the store answers, guarded legs get 503 and the boundary
// tries again before it seals.
func prepareGuard(g *redisguard.Guard, logger *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	for delay := 50 * time.Millisecond; ; delay = min(2*delay, 500*time.Millisecond) {
		actx, acancel := context.WithTimeout(ctx, time.Second)
		err := g.Prepare(actx)
		acancel()
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			logger.Warn("the single-use store is not reachable yet; guarded legs get 503 until it is", "err", err)
			return
		case <-time.After(delay):
		}
	}
}

// serve runs one instance until SIGTERM or SIGINT, then drains it; the
// first line on out is "listening on ADDR".
func serve(args []string, out io.Writer) error {
	f, err := parseServeFlags(args, os.Stderr)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})).With("instance", f.id)
	redis.SetLogger(redisLog{logger}) // the Redis client's own messages, structured too
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, os.Interrupt)
	defer signal.Stop(stop)

	rs, keyFile, err := stateCodec(f, logger)
	if err != nil {
		return err
	}
	rdb, err := redisClient(f)
	if err != nil {
		return err
	}
	defer rdb.Close()
	// #region fleet-guard
	guard := redisguard.New(rdb)
	guard.Replicas, guard.Lease = f.replicas, f.lease
	prepareGuard(guard, logger)
	rs.TTL, rs.Guard = f.ttl, guard
	// #endregion fleet-guard

	var ledger *os.File
	if f.ledger != "" {
		// O_APPEND: each line is one write at the end of the file, whatever
		// the other instances write at the same time.
		if ledger, err = os.OpenFile(f.ledger, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644); err != nil {
			return err
		}
		defer ledger.Close()
	}
	metrics, shutdown, err := telemetry(f, logger)
	if err != nil {
		return err
	}
	defer shutdown()
	if metrics != nil {
		go metrics.serve()
		defer metrics.close()
	}
	// #region fleet-server
	srv := mcp.NewServer(mcp.Implementation{Name: "fleet-db", Version: "1.0.0"}, otel.InstrumentServer(&mcp.ServerOptions{
		RequestState: rs,
		// A resource updated through one instance reaches the listen
		// streams held by all of them.
		Fanout: redisfanout.New(rdb, ""),
		// 2025-era sessions (2025-11-25 and older) live in Redis: any
		// instance serves any request of any session, a GET stream
		// resumes anywhere, a session outlives its instance.
		SessionStore: redissessions.New(rdb, redissessions.Options{}),
		Logger:       logger,
	}, nil))
	p := &provisioner{id: f.id, ledger: ledger, work: f.work, log: logger, srv: srv}
	mcp.AddTypedTool(srv, &mcp.Tool{Name: "provision", Description: "Provision a database; asks which engine and region, then how much storage."}, p.provision)
	// fleet://databases/NAME changes when NAME is provisioned: a 2025
	// session subscribed to it gets notifications/resources/updated on
	// its GET stream, wherever that stream is held.
	srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: databaseURI + "{name}", Name: "database", MIMEType: "text/plain",
		Description: "A database of the fleet; updated when it is provisioned"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (mcp.ResourceResponse, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.URI, MIMEType: "text/plain",
				Text: "database " + strings.TrimPrefix(req.URI, databaseURI)}}}, nil
		})
	// echo(text) returns text: the workload of the load run through the
	// fleet (scripts/load-fleet.sh).
	mcp.AddTypedTool(srv, &mcp.Tool{Name: "echo", Description: "Return the text."}, func(ctx context.Context, req *mcp.CallToolRequest, in struct {
		Text string `json:"text"`
	}) (*mcp.CallToolResult, error) {
		return mcp.TextResult(in.Text), nil
	})

	h := mcp.NewHTTPHandler(srv, &mcp.HTTPOptions{
		BodyReadTimeout:    10 * time.Second,
		StreamWriteTimeout: 10 * time.Second,
		TrustedProxies:     f.proxies,
	})
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	health := mcp.HealthHandler(srv)
	mux.Handle("/livez", health)
	mux.Handle("/readyz", health)
	// #endregion fleet-server
	hs := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set(instanceHeader, f.id)
			mux.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: 5 * time.Second,
		// ReadTimeout bounds reading a request; the MCP handler clears
		// the read deadline once the body is in, so long legs and SSE
		// streams are not cut by it. No WriteTimeout: it would end SSE
		// streams (HTTPOptions.StreamWriteTimeout bounds each write).
		ReadTimeout: 30 * time.Second,
		// Longer than nginx keeps idle upstream connections (keepalive_timeout
		// in nginxConf), so that nginx, not this side, closes them.
		IdleTimeout: 2 * time.Minute,
		ErrorLog:    slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(out, "listening on %s\n", ln.Addr()); err != nil {
		ln.Close()
		return err
	}
	ttl := f.ttl
	if ttl == 0 {
		ttl = mcp.DefaultStateTTL
	}
	logger.Info("serving", "addr", ln.Addr().String(), "pid", os.Getpid(), "stateTTL", ttl.String(), "guardReplicas", f.replicas)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if keyFile != nil {
		go reloadKeys(ctx, keyFile)
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case sig := <-stop:
		logger.Info("draining", "signal", sig.String(), "inFlight", srv.InFlight(), "timeout", f.drainTimeout.String())
	}
	// #region fleet-drain
	// Readiness off, new requests answered 503 (nginx tries the next
	// instance; nothing of them ran here), listen streams ended, the legs
	// in flight finish within -drain-timeout.
	start := time.Now()
	dctx, dcancel := context.WithTimeout(context.Background(), f.drainTimeout)
	derr := srv.Drain(dctx)
	dcancel()
	if derr != nil {
		logger.Warn("drain timed out; cutting the requests still in flight", "inFlight", srv.InFlight(), "err", derr)
	}
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	if err := hs.Shutdown(sctx); err != nil {
		hs.Close()
	}
	scancel()
	// #endregion fleet-drain
	logger.Info("stopped", "drained", derr == nil, "took", time.Since(start).Round(time.Millisecond).String())
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// redisLog passes the Redis client's messages (reconnects, Sentinel
// switches) to the instance's log.
type redisLog struct{ l *slog.Logger }

func (r redisLog) Printf(ctx context.Context, format string, v ...any) {
	r.l.Warn("redis: " + fmt.Sprintf(format, v...))
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

// ---- the tool ----

// Database is the first question: engine and region.
type Database struct {
	Engine string `json:"engine" mcp:"enum=postgres|mysql"`
	Region string `json:"region" mcp:"enum=eu-west-1|us-east-1"`
}

// Size is the second question, asked once the engine is known.
type Size struct {
	GiB int `json:"gib" jsonschema:"storage in GiB"`
}

// ProvisionArgs are the tool's arguments.
type ProvisionArgs struct {
	Name string `json:"name" jsonschema:"the database name"`
}

// databaseURI is the prefix of the resource of a database.
const databaseURI = "fleet://databases/"

// provisioner serves the provision tool of one instance.
type provisioner struct {
	id     string
	ledger *os.File // nil: no side effect recorded
	work   time.Duration
	log    *slog.Logger
	srv    *mcp.Server // told that the database's resource changed
	mu     sync.Mutex
}

// provision asks two dependent questions (two rounds), then provisions:
// the side effect (a ledger line) happens on the last leg only. The body
// runs again on every leg, on whichever instance gets it; the single-use
// guard makes the last leg run once, even when the client sends it again.
func (p *provisioner) provision(ctx context.Context, req *mcp.CallToolRequest, in ProvisionArgs) (*mcp.CallToolResult, error) {
	db, err := mcp.Elicit[Database](ctx, "Which engine and region for "+in.Name+"?")
	if err != nil {
		return nil, err
	}
	d, err := db.Value()
	if err != nil {
		return nil, err
	}
	size, err := mcp.Elicit[Size](ctx, fmt.Sprintf("How much storage for %s on %s?", in.Name, d.Engine))
	if err != nil {
		return nil, err
	}
	s, err := size.Value()
	if err != nil {
		return nil, err
	}
	if in.Name == "" || strings.ContainsAny(in.Name, " \n\r\t") {
		return nil, fmt.Errorf("a database name is one word")
	}
	p.log.Info("provisioning", "name", in.Name, "engine", d.Engine, "region", d.Region, "gib", s.GiB)
	if p.work > 0 {
		select {
		case <-time.After(p.work):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if p.ledger != nil {
		p.mu.Lock()
		_, err := fmt.Fprintf(p.ledger, "%s %s %d\n", in.Name, p.id, os.Getpid())
		p.mu.Unlock()
		if err != nil {
			return nil, err
		}
	}
	if p.srv != nil {
		p.srv.ResourceUpdated(databaseURI + in.Name)
	}
	return mcp.TextResult(fmt.Sprintf("Provisioned %s: %s in %s, %d GiB.", in.Name, d.Engine, d.Region, s.GiB)), nil
}

// scrape is the Prometheus scrape endpoint of -metrics-addr.
type scrape struct {
	ln net.Listener
	hs *http.Server
}

func (m *scrape) serve() { _ = m.hs.Serve(m.ln) }

func (m *scrape) close() { m.hs.Close() }

// #region fleet-telemetry

// telemetry sets OpenTelemetry up from the environment (OTEL_* for
// OTLP) and, with -metrics-addr, a Prometheus exporter on its own
// listener; shutdown flushes what is buffered.
func telemetry(f serveFlags, logger *slog.Logger) (*scrape, func(), error) {
	var m *scrape
	opts := &otel.SetupOptions{
		ServiceName: "fleet", ServiceVersion: "1.0.0",
		Attributes: []attribute.KeyValue{attribute.String("service.instance.id", f.id)},
	}
	if f.metricsAddr != "" {
		reg := prometheus.NewRegistry()
		exp, err := otelprom.New(otelprom.WithRegisterer(reg))
		if err != nil {
			return nil, nil, err
		}
		ln, err := net.Listen("tcp", f.metricsAddr)
		if err != nil {
			return nil, nil, fmt.Errorf("-metrics-addr: %w", err)
		}
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		m = &scrape{ln: ln, hs: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second}}
		opts.MetricReaders = append(opts.MetricReaders, exp)
		logger.Info("serving metrics", "addr", ln.Addr().String())
	}
	shutdown, err := otel.Setup(context.Background(), opts)
	if err != nil {
		if m != nil {
			m.ln.Close()
		}
		return nil, nil, err
	}
	return m, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := shutdown(ctx); err != nil {
			logger.Warn("exporting telemetry", "err", err)
		}
	}, nil
}

// #endregion fleet-telemetry
