// Command fleet runs one MCP server as a fleet of three processes behind
// nginx, a real load balancer doing plain round robin: no sticky
// sessions, no affinity for 2026-07-28 traffic. A multi round-trip tool
// call still completes,
// each of its legs served by whichever instance nginx picks, because
// everything a leg needs travels with it in the sealed requestState. The
// instances share two things only: the request-state keys (an environment
// variable) and a Redis server, which makes each state single-use across
// the fleet (a replayed leg is refused wherever it lands) and carries
// change notifications between instances (mcp/redisfanout). A 2025-11-25
// client works through the same nginx too: its session's id names the
// instance that holds it, and an nginx map routes it there.
//
//	go run ./examples/fleet     # needs nginx and redis-server (Debian packages nginx-light, redis-server)
//
// The demo starts redis-server on a Unix socket, three instances of this
// program ("fleet serve ID SOCKET"), and nginx in front of them, all in a
// temporary directory; then it calls the tool through nginx, shows which
// instance served each leg, replays one leg, and stops everything.
package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/roundtrip-mcp/roundtrip/mcp"
	"github.com/roundtrip-mcp/roundtrip/mcp/redisfanout"
	"github.com/roundtrip-mcp/roundtrip/requeststate"
	"github.com/roundtrip-mcp/roundtrip/requeststate/redisguard"
)

// keysEnv carries the shared request-state keys to every instance:
// comma-separated base64url keys, the first seals, all verify.
const keysEnv = "ROUNDTRIP_STATE_KEYS"

// instanceHeader names the instance that answered an HTTP request.
const instanceHeader = "X-Fleet-Instance"

func main() {
	log.SetFlags(0)
	log.SetPrefix("fleet: ")
	if err := run(os.Args[1:], os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(args []string, out io.Writer) error {
	switch {
	case len(args) == 0:
		self, err := os.Executable()
		if err != nil {
			return err
		}
		return demo(self, out)
	case args[0] == "serve" && len(args) == 3:
		return serve(args[1], args[2], out)
	}
	return errors.New("usage: fleet [serve ID REDIS_SOCKET]")
}

// ---- one instance ----

// Database is the first question; Size the second, asked once the engine
// is known.
type Database struct {
	Engine string `json:"engine" mcp:"enum=postgres|mysql"`
	Region string `json:"region" mcp:"enum=eu-west-1|us-east-1"`
}

type Size struct {
	GiB int `json:"gib" jsonschema:"storage in GiB"`
}

// ProvisionArgs are the tool's arguments.
type ProvisionArgs struct {
	Name string `json:"name" jsonschema:"the database name"`
}

// provision asks two dependent questions (two rounds), then answers. The
// body runs again on every leg, on whichever instance gets it.
func provision(ctx context.Context, req *mcp.CallToolRequest, in ProvisionArgs) (*mcp.CallToolResult, error) {
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
	return mcp.TextResult(fmt.Sprintf("Provisioned %s: %s in %s, %d GiB.", in.Name, d.Engine, d.Region, s.GiB)), nil
}

// serve runs one instance on a loopback port until interrupted; the
// first line on out is "listening on ADDR".
func serve(id, redisSocket string, out io.Writer) error {
	keys, err := parseKeys(os.Getenv(keysEnv))
	if err != nil {
		return err
	}
	rdb := redis.NewClient(&redis.Options{Network: "unix", Addr: redisSocket})
	defer rdb.Close()
	srv := mcp.NewServer(mcp.Implementation{Name: "fleet-db", Version: "1.0.0"}, &mcp.ServerOptions{
		RequestState: mcp.RequestStateOptions{
			Keys:  keys,
			TTL:   2 * time.Minute,
			Guard: redisguard.New(rdb),
		},
		// A resource updated through one instance reaches the listen
		// streams held by all of them.
		Fanout: redisfanout.New(rdb, ""),
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "provision", Description: "Provision a database; asks which engine and region, then how much storage."}, provision)
	// 2025-11-25 sessions live in the process that made them: their ids
	// name the instance, and nginx routes them home (see nginxConf).
	h := mcp.NewHTTPHandler(srv, &mcp.HTTPOptions{Legacy: mcp.LegacyHTTPOptions{SessionIDPrefix: id + "."}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	hs := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(instanceHeader, id)
		h.ServeHTTP(w, r)
	})}
	fmt.Fprintf(out, "listening on %s\n", ln.Addr())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() { <-ctx.Done(); hs.Close() }()
	if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func parseKeys(s string) ([][]byte, error) {
	keys, err := requeststate.ParseKeys(s)
	if err == nil && len(keys) == 0 {
		err = errors.New(keysEnv + " is empty: a fleet needs shared keys")
	}
	return keys, err
}

// ---- the demo: redis, three instances, nginx, a client ----

// Fleet is what the demo started; Close stops it all.
type Fleet struct {
	URL       string            // nginx's MCP endpoint
	Instances map[string]string // id -> address
	AccessLog string            // nginx's access log: method, status, upstream
	dir       string
	procs     []*exec.Cmd
}

// Start starts redis-server, n instances of self and nginx in dir.
func Start(self, dir string, n int) (*Fleet, error) {
	f := &Fleet{dir: dir, Instances: map[string]string{}, AccessLog: filepath.Join(dir, "access.log")}
	ok := false
	defer func() {
		if !ok {
			f.Close()
		}
	}()
	sock := filepath.Join(dir, "redis.sock")
	if err := f.start(exec.Command("redis-server", "--port", "0", "--unixsocket", sock, "--save", "", "--appendonly", "no", "--dir", dir)); err != nil {
		return nil, fmt.Errorf("redis-server: %w", err)
	}
	if err := waitFor(func() error {
		c, err := net.Dial("unix", sock)
		if err == nil {
			c.Close()
		}
		return err
	}); err != nil {
		return nil, fmt.Errorf("redis-server did not come up: %w", err)
	}
	key := make([]byte, 32)
	rand.Read(key)
	env := append(os.Environ(), keysEnv+"="+base64.RawURLEncoding.EncodeToString(key))
	var upstreams, homes, routes []string
	for i := range n {
		id := string(rune('a' + i))
		cmd := exec.Command(self, "serve", id, sock)
		cmd.Env = env
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		if err := f.start(cmd); err != nil {
			return nil, err
		}
		line, err := bufio.NewReader(stdout).ReadString('\n')
		addr, found := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
		if err != nil || !found {
			return nil, fmt.Errorf("instance %s did not say where it listens: %q %v", id, line, err)
		}
		f.Instances[id] = addr
		upstreams = append(upstreams, "    server "+addr+";")
		homes = append(homes, fmt.Sprintf("  upstream home_%s { server %s; }", id, addr))
		routes = append(routes, fmt.Sprintf("    ~^%s\\. home_%s;", id, id))
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	conf := fmt.Sprintf(nginxConf, dir, f.AccessLog, dir, dir, dir, dir, dir,
		strings.Join(upstreams, "\n"), strings.Join(homes, "\n"), strings.Join(routes, "\n"), port)
	confFile := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(confFile, []byte(conf), 0o600); err != nil {
		return nil, err
	}
	if err := f.start(exec.Command(nginxPath(), "-p", dir, "-c", confFile, "-e", "stderr")); err != nil {
		return nil, fmt.Errorf("nginx: %w", err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	if err := waitFor(func() error {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err
	}); err != nil {
		return nil, fmt.Errorf("nginx did not come up: %w", err)
	}
	f.URL = "http://" + addr + "/mcp"
	ok = true
	return f, nil
}

// nginxConf: one worker, plain round robin for 2026-07-28 traffic (no
// affinity: any instance serves any leg), and a map that sends a
// 2025-11-25 session (an Mcp-Session-Id header "ID.…") to the instance
// that made it. No buffering (SSE streams pass through as they are
// written), HTTP/1.1 keep-alive to the instances.
const nginxConf = `worker_processes 1;
daemon off;
pid %s/nginx.pid;
error_log stderr warn;
events { worker_connections 256; }
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
    keepalive 8;
  }
%s
  map $http_mcp_session_id $mcp_backend {
    default mcp;
%s
  }
  server {
    listen 127.0.0.1:%d;
    location /mcp {
      proxy_pass http://$mcp_backend;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $http_host;
      proxy_buffering off;
      proxy_read_timeout 1h;
    }
  }
}
`

func (f *Fleet) start(cmd *exec.Cmd) error {
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	f.procs = append(f.procs, cmd)
	return nil
}

// Close stops every process, nginx first.
func (f *Fleet) Close() {
	for i := len(f.procs) - 1; i >= 0; i-- {
		p := f.procs[i]
		p.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { p.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			p.Process.Kill()
			<-done
		}
	}
	f.procs = nil
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

func waitFor(try func() error) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := try()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// legs records which instance answered each tools/call leg (the client
// sends Mcp-Method on every 2026-07-28 request), or every request when
// all is set.
type legs struct {
	mu  sync.Mutex
	ids []string
	rt  http.RoundTripper
	all bool
}

func (l *legs) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := l.rt.RoundTrip(r)
	if err == nil && (l.all || r.Header.Get("Mcp-Method") == "tools/call") {
		l.mu.Lock()
		l.ids = append(l.ids, resp.Header.Get(instanceHeader))
		l.mu.Unlock()
	}
	return resp, err
}

func (l *legs) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	ids := l.ids
	l.ids = nil
	return ids
}

// answer plays the user.
func answer(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	switch {
	case strings.HasPrefix(r.Message, "Which engine"):
		return &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: map[string]any{"engine": "postgres", "region": "eu-west-1"}}, nil
	case strings.HasPrefix(r.Message, "How much"):
		return &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: map[string]any{"gib": 50}}, nil
	}
	return &mcp.ElicitResult{Action: mcp.ElicitDecline}, nil
}

// demo starts the fleet, makes one call through nginx with the automatic
// answer-and-retry loop, then replays a leg by hand.
func demo(self string, out io.Writer) error {
	dir, err := os.MkdirTemp("", "fleet-example-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	f, err := Start(self, dir, 3)
	if err != nil {
		return err
	}
	defer f.Close()
	for _, id := range slices.Sorted(maps.Keys(f.Instances)) {
		fmt.Fprintf(out, "instance %s on %s\n", id, f.Instances[id])
	}
	fmt.Fprintf(out, "nginx on %s (round robin; a 2025-11-25 session is routed to its instance)\n", f.URL)

	return callThrough(f.URL, out)
}

// callThrough makes one call through url with the automatic
// answer-and-retry loop, then replays a leg by hand.
func callThrough(url string, out io.Writer) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rec := &legs{rt: http.DefaultTransport}
	c := mcp.NewClient(mcp.NewHTTPClientTransport(url, &mcp.HTTPClientOptions{HTTPClient: &http.Client{Transport: rec}}),
		&mcp.ClientOptions{Elicitation: answer})
	defer c.Close()

	res, err := c.CallTool(ctx, "provision", ProvisionArgs{Name: "orders"}, nil)
	if err != nil {
		return fmt.Errorf("provision: %w", err)
	}
	fmt.Fprintf(out, "result: %s\n", textOf(res))
	fmt.Fprintf(out, "legs served by: %s\n", strings.Join(rec.take(), " "))

	// Replays. The identical leg sent again (an answer lost on the way
	// back) is answered wherever it lands with the outcome Redis
	// recorded, without running the handler twice; the same state with
	// other answers is refused by whichever instance gets it, because
	// Redis remembers the token for the whole fleet.
	_, err = c.CallTool(ctx, "provision", ProvisionArgs{Name: "audit"}, &mcp.CallOptions{Manual: true})
	var pending *mcp.PendingCallError
	if !errors.As(err, &pending) {
		return fmt.Errorf("expected a question, got %v", err)
	}
	reply := func(engine string) mcp.InputResponses {
		b, _ := json.Marshal(map[string]any{"action": "accept", "content": map[string]any{"engine": engine, "region": "us-east-1"}})
		responses := mcp.InputResponses{}
		for key := range pending.Call.InputRequests {
			responses[key] = b
		}
		return responses
	}
	rec.take()
	for i, engine := range []string{"mysql", "mysql", "postgres"} {
		_, err := c.Resume(ctx, pending.Call, reply(engine), &mcp.CallOptions{Manual: true})
		var next *mcp.PendingCallError
		switch {
		case errors.As(err, &next):
			fmt.Fprintf(out, "replay %d (%s): answered by %s (next question: %s)\n", i+1, engine, lastOf(rec.take()), next.Call.InputRequests[firstKey(next.Call.InputRequests)].(*mcp.ElicitRequest).Message)
		default:
			fmt.Fprintf(out, "replay %d (%s): refused by %s: %v\n", i+1, engine, lastOf(rec.take()), err)
		}
	}
	return legacyCall(ctx, url, out)
}

// legacyCall makes the same call as a 2025-11-25 client through the same
// nginx. Its session lives on one instance: initialize lands anywhere,
// then the live question (elicitation/create, on the SSE stream of the
// POST), the client's answer (a POST of its own) and every other request
// of the session carry the session id, which nginx routes home.
func legacyCall(ctx context.Context, url string, out io.Writer) error {
	rec := &legs{rt: http.DefaultTransport, all: true}
	c := mcp.NewClient(mcp.NewHTTPClientTransport(url, &mcp.HTTPClientOptions{HTTPClient: &http.Client{Transport: rec}}),
		&mcp.ClientOptions{Mode: mcp.ModeLegacy, Elicitation: answer})
	defer c.Close()
	res, err := c.CallTool(ctx, "provision", ProvisionArgs{Name: "reports"}, nil)
	if err != nil {
		return fmt.Errorf("legacy provision: %w", err)
	}
	fmt.Fprintf(out, "legacy (%s) result: %s\n", c.ProtocolVersion(), textOf(res))
	fmt.Fprintf(out, "legacy requests served by: %s\n", strings.Join(rec.take(), " "))
	return nil
}

func textOf(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

func lastOf(ids []string) string {
	if len(ids) == 0 {
		return "?"
	}
	return ids[len(ids)-1]
}

func firstKey[V any](m map[string]V) string {
	for k := range m {
		return k
	}
	return ""
}
