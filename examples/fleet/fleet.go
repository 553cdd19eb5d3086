package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/roundtrip-mcp/roundtrip/requeststate"
)

// The controller: what an orchestrator does for a fleet, in a few hundred
// lines. It starts the instances and nginx, and, since open-source nginx
// has no active health checks, polls each instance's /readyz and rewrites
// nginx's upstream block (an instance that is not ready is marked down),
// reloading nginx when the pool changes. Passive checks in nginx
// (max_fails) cover the moments between two polls.

// Config says what Start runs.
type Config struct {
	// Self is the program run as "serve" for each instance.
	Self string
	// Dir holds the nginx configuration and logs, the key files, the
	// instances' logs.
	Dir string
	// Instances is how many to run, with ids a, b, c...
	Instances int
	// Redis (a URL: redis://, unix://) or Sentinels with Master is the
	// shared store.
	Redis     string
	Sentinels []string
	Master    string
	// GuardReplicas, GuardLease, StateTTL, DrainTimeout: the serve flags
	// of the same names (zero: the program's default).
	GuardReplicas int
	GuardLease    time.Duration
	StateTTL      time.Duration
	DrainTimeout  time.Duration
	// Keys are the first request-state keys, sealing key first; nil means
	// one random key.
	Keys [][]byte
	// Ledger is the file where the instances record what they provision
	// (empty: none); ProvisionTime is how long provisioning takes.
	Ledger        string
	ProvisionTime time.Duration
	// TrustedProxies is the -trusted-proxies flag of the instances
	// (empty: none trusted; nginx is on 127.0.0.1).
	TrustedProxies string
	// HealthInterval is how often /readyz is polled; zero means 200 ms.
	HealthInterval time.Duration
	// Logger receives the controller's log; nil discards it.
	Logger *slog.Logger
}

// Fleet is a running fleet: instances, nginx and the health loop. Its
// methods are safe for concurrent use.
type Fleet struct {
	URL       string            // nginx's MCP endpoint
	Instances map[string]string // id -> address, fixed once Start returns (restarts reuse it)
	AccessLog string            // nginx's access log: method, status, upstream, instance

	cfg       Config
	log       *slog.Logger
	ids       []string
	confFile  string
	port      int
	nginx     *proc
	stopCheck context.CancelFunc
	checkDone chan struct{}

	mu      sync.Mutex
	procs   map[string]*proc // id -> the running incarnation (nil when stopped)
	killed  map[int]bool     // pids stopped with SIGKILL
	pool    map[string]bool  // id -> in nginx's pool (not down), as last loaded
	reloads int
	closed  bool
}

// proc is one process and its end.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when it exited
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Start starts cfg.Instances instances and nginx in front of them, and the
// health loop. On an error everything started is stopped.
func Start(cfg Config) (*Fleet, error) {
	if cfg.Instances <= 0 || cfg.Instances > 26 {
		return nil, errors.New("fleet: 1 to 26 instances")
	}
	if cfg.HealthInterval <= 0 {
		cfg.HealthInterval = 200 * time.Millisecond
	}
	if cfg.Keys == nil {
		cfg.Keys = [][]byte{requeststate.GenerateKey()}
	}
	f := &Fleet{cfg: cfg, log: cfg.Logger, Instances: map[string]string{}, procs: map[string]*proc{},
		killed: map[int]bool{}, pool: map[string]bool{}, AccessLog: filepath.Join(cfg.Dir, "access.log"),
		confFile: filepath.Join(cfg.Dir, "nginx.conf")}
	if f.log == nil {
		f.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
		}
	}()
	for _, sub := range []string{"keys", "logs"} {
		if err := os.MkdirAll(filepath.Join(cfg.Dir, sub), 0o700); err != nil {
			return nil, err
		}
	}
	for i := range cfg.Instances {
		id := string(rune('a' + i))
		f.ids = append(f.ids, id)
		if err := writeKeyFile(f.keyFile(id), cfg.Keys); err != nil {
			return nil, err
		}
		if err := f.Restart(id); err != nil {
			return nil, err
		}
		f.pool[id] = true
	}
	var err error
	if f.port, err = freePort(); err != nil {
		return nil, err
	}
	if err := f.writeConf(f.pool); err != nil {
		return nil, err
	}
	nlog, err := os.OpenFile(filepath.Join(cfg.Dir, "logs", "nginx.log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	defer nlog.Close()
	cmd := exec.Command(nginxPath(), "-p", cfg.Dir, "-c", f.confFile, "-e", "stderr")
	cmd.Stdout, cmd.Stderr = nlog, nlog
	if f.nginx, err = startProc(cmd); err != nil {
		return nil, fmt.Errorf("nginx: %w", err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(f.port))
	if err := waitFor(10*time.Second, func() error {
		if f.nginx.exited() {
			return errors.New("nginx exited: " + f.tail("nginx", 2000))
		}
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err
	}); err != nil {
		return nil, fmt.Errorf("nginx did not come up: %w", err)
	}
	f.URL = "http://" + addr + "/mcp"
	ctx, cancel := context.WithCancel(context.Background())
	f.stopCheck, f.checkDone = cancel, make(chan struct{})
	go f.healthLoop(ctx)
	f.log.Info("fleet started", "url", f.URL, "instances", f.Instances)
	ok = true
	return f, nil
}

// IDs are the instances' ids, in order.
func (f *Fleet) IDs() []string { return slices.Clone(f.ids) }

func (f *Fleet) keyFile(id string) string { return filepath.Join(f.cfg.Dir, "keys", id+".keys") }

// LogFile is the file an instance's log (every incarnation) goes to.
func (f *Fleet) LogFile(id string) string { return filepath.Join(f.cfg.Dir, "logs", id+".log") }

// args are an instance's serve flags.
func (f *Fleet) args(id, addr string) []string {
	a := []string{"serve", "-id", id, "-addr", addr, "-state-key-file", f.keyFile(id)}
	if f.cfg.Redis != "" {
		a = append(a, "-redis", f.cfg.Redis)
	} else {
		a = append(a, "-sentinels", strings.Join(f.cfg.Sentinels, ","), "-master", f.cfg.Master)
	}
	if f.cfg.GuardReplicas > 0 {
		a = append(a, "-guard-replicas", strconv.Itoa(f.cfg.GuardReplicas))
	}
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"-guard-lease", f.cfg.GuardLease}, {"-state-ttl", f.cfg.StateTTL}, {"-drain-timeout", f.cfg.DrainTimeout}, {"-provision-time", f.cfg.ProvisionTime}} {
		if d.v > 0 {
			a = append(a, d.flag, d.v.String())
		}
	}
	if f.cfg.Ledger != "" {
		a = append(a, "-ledger", f.cfg.Ledger)
	}
	if f.cfg.TrustedProxies != "" {
		a = append(a, "-trusted-proxies", f.cfg.TrustedProxies)
	}
	return a
}

// Restart starts instance id (again, on the address it had), and returns
// once it announced that it listens. It fails if the instance runs.
func (f *Fleet) Restart(id string) error {
	f.mu.Lock()
	if p := f.procs[id]; p != nil && !p.exited() {
		f.mu.Unlock()
		return fmt.Errorf("instance %s is running", id)
	}
	addr := f.Instances[id]
	f.mu.Unlock()
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	logf, err := os.OpenFile(f.LogFile(id), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close() // the child has its own descriptor
	// Stdout is a pipe of our own (not StdoutPipe, which Wait closes
	// under the reader): its first line says where the instance listens,
	// the rest is discarded until the instance exits.
	stdout, w, err := os.Pipe()
	if err != nil {
		return err
	}
	cmd := exec.Command(f.cfg.Self, f.args(id, addr)...)
	cmd.Stdout, cmd.Stderr = w, logf
	p, err := startProc(cmd)
	w.Close()
	if err != nil {
		stdout.Close()
		return fmt.Errorf("instance %s: %w", id, err)
	}
	line := make(chan string, 1)
	go func() {
		defer stdout.Close()
		r := bufio.NewReader(stdout)
		l, _ := r.ReadString('\n')
		line <- l
		io.Copy(io.Discard, r)
	}()
	var l string
	select {
	case l = <-line:
	case <-time.After(30 * time.Second):
	}
	got, found := strings.CutPrefix(strings.TrimSpace(l), "listening on ")
	if !found {
		p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("instance %s did not say where it listens (%q); its log:\n%s", id, l, f.tail(id, 4000))
	}
	f.mu.Lock()
	f.procs[id] = p
	if f.Instances[id] == "" {
		f.Instances[id] = got // written once, in Start: readers need no lock
	}
	f.mu.Unlock()
	f.log.Info("instance started", "id", id, "addr", got, "pid", p.cmd.Process.Pid)
	return nil
}

// Kill stops instance id at once (SIGKILL), as a crash would.
func (f *Fleet) Kill(id string) error {
	p := f.running(id)
	if p == nil {
		return fmt.Errorf("instance %s is not running", id)
	}
	f.mu.Lock()
	f.killed[p.cmd.Process.Pid] = true
	f.mu.Unlock()
	p.cmd.Process.Kill()
	<-p.done
	f.log.Info("instance killed", "id", id, "pid", p.cmd.Process.Pid)
	return nil
}

// Stop asks instance id to drain (SIGTERM) and waits until it exited:
// readiness goes off, new requests are answered 503 (nginx tries the
// next instance), the legs in flight finish. An instance still running
// well past its drain timeout is killed.
func (f *Fleet) Stop(id string) error {
	p, err := f.drain(id)
	if err != nil {
		return err
	}
	f.waitExit(id, p)
	return nil
}

// drain sends SIGTERM to instance id.
func (f *Fleet) drain(id string) (*proc, error) {
	p := f.running(id)
	if p == nil {
		return nil, fmt.Errorf("instance %s is not running", id)
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	f.log.Info("instance draining", "id", id, "pid", p.cmd.Process.Pid)
	return p, nil
}

// waitExit waits for a draining instance to exit, and kills it when it
// runs well past its drain timeout.
func (f *Fleet) waitExit(id string, p *proc) {
	start := time.Now()
	limit := f.cfg.DrainTimeout
	if limit <= 0 {
		limit = 30 * time.Second
	}
	select {
	case <-p.done:
	case <-time.After(limit + 10*time.Second):
		f.log.Warn("instance did not stop after draining; killing it", "id", id)
		f.mu.Lock()
		f.killed[p.cmd.Process.Pid] = true
		f.mu.Unlock()
		p.cmd.Process.Kill()
		<-p.done
	}
	f.log.Info("instance stopped", "id", id, "waited", time.Since(start).Round(time.Millisecond).String(),
		"exit", p.cmd.ProcessState.String())
}

// RollingRestart restarts every instance in turn: drain it (SIGTERM),
// wait until the health loop took it out of nginx's pool and it exited,
// start it again, wait until it is back in the pool.
func (f *Fleet) RollingRestart(ctx context.Context) error {
	for _, id := range f.ids {
		p, err := f.drain(id)
		if err != nil {
			return err
		}
		if err := f.WaitPool(ctx, id, false); err != nil {
			return err
		}
		f.waitExit(id, p)
		if err := f.Restart(id); err != nil {
			return err
		}
		if err := f.WaitPool(ctx, id, true); err != nil {
			return err
		}
		f.log.Info("instance rolled", "id", id)
	}
	return nil
}

func (f *Fleet) running(id string) *proc {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p := f.procs[id]; p != nil && !p.exited() {
		return p
	}
	return nil
}

// PID is the process id of instance id's running incarnation (0 when it
// is not running).
func (f *Fleet) PID(id string) int {
	if p := f.running(id); p != nil {
		return p.cmd.Process.Pid
	}
	return 0
}

// Killed reports whether pid was an incarnation stopped with SIGKILL.
func (f *Fleet) Killed(pid int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.killed[pid]
}

// InPool reports whether instance id is in nginx's pool (not marked
// down) as nginx last loaded it.
func (f *Fleet) InPool(id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pool[id]
}

// Reloads is how often the health loop reloaded nginx.
func (f *Fleet) Reloads() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reloads
}

// WaitPool waits until instance id is in (or out of) nginx's pool.
func (f *Fleet) WaitPool(ctx context.Context, id string, in bool) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for f.InPool(id) != in {
		select {
		case <-ctx.Done():
			return fmt.Errorf("instance %s: not %s the pool within 30 s", id, map[bool]string{true: "back in", false: "out of"}[in])
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

// healthLoop polls /readyz and keeps nginx's pool to the ready instances.
func (f *Fleet) healthLoop(ctx context.Context) {
	defer close(f.checkDone)
	hc := &http.Client{Timeout: 500 * time.Millisecond, Transport: &http.Transport{DisableKeepAlives: true}}
	t := time.NewTicker(f.cfg.HealthInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		ready := f.probe(ctx, hc)
		f.mu.Lock()
		same := maps.Equal(ready, f.pool)
		f.mu.Unlock()
		if same || ctx.Err() != nil {
			continue
		}
		want := ready
		if !slices.ContainsFunc(f.ids, func(id string) bool { return ready[id] }) {
			// None is ready: marking every server down would only turn
			// each request into a 502. Keep them all and let nginx's
			// passive checks find the one that answers.
			f.log.Warn("no instance is ready; keeping every instance in the pool")
			want = map[string]bool{}
			for _, id := range f.ids {
				want[id] = true
			}
			f.mu.Lock()
			same = maps.Equal(want, f.pool)
			f.mu.Unlock()
			if same {
				continue
			}
		}
		if err := f.reload(ctx, want); err != nil {
			f.log.Error("nginx reload failed; the pool stays as it was", "err", err)
			continue
		}
		f.mu.Lock()
		f.pool = want
		f.reloads++
		f.mu.Unlock()
		f.log.Info("nginx pool changed", "pool", poolString(f.ids, want))
	}
}

// probe asks every instance's /readyz at once.
func (f *Fleet) probe(ctx context.Context, hc *http.Client) map[string]bool {
	f.mu.Lock()
	addrs := make(map[string]string, len(f.Instances))
	for id, a := range f.Instances {
		addrs[id] = a
	}
	f.mu.Unlock()
	var mu sync.Mutex
	var wg sync.WaitGroup
	ready := map[string]bool{}
	for id, addr := range addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/readyz", nil)
			if err != nil {
				return
			}
			resp, err := hc.Do(req)
			if err != nil {
				return
			}
			io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<10))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				mu.Lock()
				ready[id] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return ready
}

// reload writes the configuration with pool and has nginx load it,
// bounded in time.
func (f *Fleet) reload(ctx context.Context, pool map[string]bool) error {
	if err := f.writeConf(pool); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, nginxPath(), "-p", f.cfg.Dir, "-c", f.confFile, "-e", "stderr", "-s", "reload").CombinedOutput()
	if err != nil {
		return fmt.Errorf("nginx -s reload: %w: %s", err, bytes.TrimSpace(out))
	}
	return nil
}

// poolString shows a pool: "a b(down) c".
func poolString(ids []string, pool map[string]bool) string {
	var b strings.Builder
	for _, id := range ids {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(id)
		if !pool[id] {
			b.WriteString("(down)")
		}
	}
	return b.String()
}

// RotateKeys writes keys (sealing key first) to every instance's key file
// and tells each running instance to re-read it (SIGHUP): no restart.
// Each file is replaced whole (a rename), so a reader never sees half of
// it.
func (f *Fleet) RotateKeys(keys [][]byte) error {
	for _, id := range f.ids {
		if err := writeKeyFile(f.keyFile(id), keys); err != nil {
			return err
		}
		if p := f.running(id); p != nil {
			p.cmd.Process.Signal(syscall.SIGHUP)
		}
	}
	f.log.Info("key files rewritten; instances told to reload", "keyIDs", strings.Join(KeyIDs(keys), ","))
	return nil
}

// WaitKeys waits until every running instance logged that it uses keys
// (the last keys record in its log names them, sealing key first).
func (f *Fleet) WaitKeys(ctx context.Context, keys [][]byte) error {
	want := strings.Join(KeyIDs(keys), ",")
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for _, id := range f.ids {
		for f.running(id) != nil && lastKeyIDs(f.LogFile(id)) != want {
			select {
			case <-ctx.Done():
				return fmt.Errorf("instance %s did not load keys %s (it uses %s)", id, want, lastKeyIDs(f.LogFile(id)))
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	return nil
}

// KeyIDs are the ids of keys, as the instances log them.
func KeyIDs(keys [][]byte) []string {
	r, err := requeststate.NewKeyRing(keys...)
	if err != nil {
		return nil
	}
	return r.KeyIDs()
}

// lastKeyIDs reads the key ids of the last keys record in an instance's
// log.
func lastKeyIDs(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	ids := ""
	for _, line := range bytes.Split(b, []byte("\n")) {
		if !bytes.Contains(line, []byte(`"keyIDs"`)) {
			continue
		}
		var rec struct {
			Msg    string `json:"msg"`
			KeyIDs string `json:"keyIDs"`
		}
		if json.Unmarshal(line, &rec) == nil && strings.HasPrefix(rec.Msg, "request-state keys") {
			ids = rec.KeyIDs
		}
	}
	return ids
}

func writeKeyFile(path string, keys [][]byte) error {
	var b strings.Builder
	b.WriteString("# request-state keys: the first seals, every one verifies\n")
	for _, k := range keys {
		b.WriteString(base64.RawURLEncoding.EncodeToString(k))
		b.WriteByte('\n')
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(b.String()), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// tail is the last max bytes of what instance id (every incarnation)
// logged, or of nginx's log for "nginx".
func (f *Fleet) tail(id string, max int) string {
	path := f.LogFile(id)
	if id == "nginx" {
		path = filepath.Join(f.cfg.Dir, "logs", "nginx.log")
	}
	b, _ := os.ReadFile(path)
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return string(b)
}

// Logs is the tail of every log of the fleet: instances and nginx.
func (f *Fleet) Logs(max int) string {
	var b strings.Builder
	for _, id := range append(f.IDs(), "nginx") {
		fmt.Fprintf(&b, "---- %s ----\n%s\n", id, f.tail(id, max))
	}
	return b.String()
}

// Close stops the health loop, nginx, then every instance (SIGTERM, and
// SIGKILL for one that does not stop within a few seconds).
func (f *Fleet) Close() {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return
	}
	f.closed = true
	f.mu.Unlock()
	if f.stopCheck != nil {
		f.stopCheck()
		<-f.checkDone
	}
	stop := func(p *proc) {
		if p == nil || p.exited() {
			return
		}
		p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
			p.cmd.Process.Kill()
			<-p.done
		}
	}
	stop(f.nginx)
	var wg sync.WaitGroup
	for _, id := range f.ids {
		wg.Add(1)
		go func() { defer wg.Done(); stop(f.running(id)) }()
	}
	wg.Wait()
}

// writeConf writes nginx's configuration with the pool (ids not in it
// are marked down).
func (f *Fleet) writeConf(pool map[string]bool) error {
	var upstreams []string
	f.mu.Lock()
	for _, id := range f.ids {
		addr := f.Instances[id]
		down := ""
		if !pool[id] {
			down = " down"
		}
		upstreams = append(upstreams, fmt.Sprintf("    server %s max_fails=2 fail_timeout=2s%s;", addr, down))
	}
	f.mu.Unlock()
	dir := f.cfg.Dir
	conf := fmt.Sprintf(nginxConf, dir, f.AccessLog, dir, dir, dir, dir, dir,
		strings.Join(upstreams, "\n"), f.port)
	tmp := f.confFile + ".tmp"
	if err := os.WriteFile(tmp, []byte(conf), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, f.confFile)
}

// #region nginx
// nginxConf: one worker (2048 connections: a client's connection and its
// upstream one each, for the load run's 256 clients and more), plain
// round robin for every era (no affinity, no hash, no map on the session
// id): any instance serves any leg of a 2026-07-28 call, and any request
// of a 2025-era session, whose record is in the shared session store
// (serve's SessionStore). No buffering (SSE streams pass through as they
// are written), HTTP/1.1 keep-alive to the instances.
//
// Failures: passive checks (max_fails/fail_timeout on each server) take
// an instance that refuses or resets connections out for a moment; the
// controller's health loop marks an instance that is not ready down (and
// reloads). proxy_next_upstream sends a request that failed on one
// instance to the next, POSTs included (non_idempotent), at most three
// tries within 10 s. That is safe here, and only here because of how
// these instances answer:
//   - a 503 from a draining instance (or from one whose single-use store
//     is unreachable) means nothing of the request ran there;
//   - a connection error or a 502 means the request may have run; but a
//     leg that carries a requestState is guarded: the identical leg sent
//     again gets the recorded outcome (or waits for the running one),
//     never a second run. A first leg carries no state, and in this tool
//     it only asks a question, so running it twice has no effect.
//   - a request of a 2025-era session is retried only while nothing of
//     its answer reached nginx (once the SSE stream of a POST has begun,
//     nginx cannot start it again elsewhere): the tool then starts again
//     on the next instance, which, here too, first asks.
//
// A server with a tool whose first leg acts must not use non_idempotent.
const nginxConf = `worker_processes 1;
worker_shutdown_timeout 10s;
daemon off;
pid %s/nginx.pid;
error_log stderr warn;
events { worker_connections 2048; }
http {
  log_format fleet '$request_method $status $upstream_addr $upstream_http_x_fleet_instance';
  access_log %s fleet;
  client_body_temp_path %s/body;
  proxy_temp_path %s/proxy;
  fastcgi_temp_path %s/fastcgi;
  uwsgi_temp_path %s/uwsgi;
  scgi_temp_path %s/scgi;
  upstream mcp {
%s
    keepalive 16;
    keepalive_timeout 60s;
  }
  server {
    listen 127.0.0.1:%d;
    location /mcp {
      proxy_pass http://mcp;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $http_host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_buffering off;
      proxy_connect_timeout 2s;
      proxy_read_timeout 1h;
      proxy_next_upstream error timeout http_502 http_503 non_idempotent;
      proxy_next_upstream_tries 3;
      proxy_next_upstream_timeout 10s;
    }
  }
}
`

// #endregion nginx

func startProc(cmd *exec.Cmd) (*proc, error) {
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); close(p.done) }()
	return p, nil
}

// nginxPath finds nginx on PATH or where Debian puts it (/usr/sbin is not
// on every user's PATH).
func nginxPath() string {
	if p, err := exec.LookPath("nginx"); err == nil {
		return p
	}
	return "/usr/sbin/nginx"
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func waitFor(limit time.Duration, try func() error) error {
	deadline := time.Now().Add(limit)
	for {
		err := try()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}
