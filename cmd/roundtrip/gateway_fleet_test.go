package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/testutil"
	"github.com/roundtrip-mcp/roundtrip/mcp"
	"github.com/roundtrip-mcp/roundtrip/redis/redistest"
	"github.com/roundtrip-mcp/roundtrip/requeststate"
)

// gwFleetNginx: one worker, plain round robin over the gateways (no hash,
// no session affinity), keep-alive to them, no buffering; a request that
// could not connect goes to the next instance (never a POST that was
// sent).
const gwFleetNginx = `worker_processes 1;
daemon off;
pid %[1]s/nginx.pid;
error_log stderr warn;
events { worker_connections 256; }
http {
  log_format fleet '$request_method $status $upstream_addr';
  access_log %[1]s/access.log fleet;
  client_body_temp_path %[1]s/body;
  proxy_temp_path %[1]s/proxy;
  fastcgi_temp_path %[1]s/fastcgi;
  uwsgi_temp_path %[1]s/uwsgi;
  scgi_temp_path %[1]s/scgi;
  upstream gateways {
%[2]s
    keepalive 8;
  }
  server {
    listen 127.0.0.1:%[3]d;
    location / {
      proxy_pass http://gateways;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $http_host;
      proxy_buffering off;
      proxy_connect_timeout 2s;
      proxy_read_timeout 1h;
    }
  }
}
`

// accessLog reads nginx's access log: one line per request, written when
// the request ends (so after the client has its answer).
type accessLog string

func (l accessLog) lines(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(string(l))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// after waits for the lines past the first n and returns the instance
// (host:port) that answered the last one: the last of the addresses
// nginx tried.
func (l accessLog) after(t *testing.T, n int) string {
	t.Helper()
	var lines []string
	testutil.Eventually(t, 5*time.Second, "nginx's access log line", func() bool {
		lines = l.lines(t)
		return len(lines) > n
	})
	f := strings.Fields(lines[len(lines)-1])
	if len(f) < 3 {
		t.Fatalf("access log line %q", lines[len(lines)-1])
	}
	return f[len(f)-1]
}

// TestGatewayFleet: three "roundtrip gateway" processes sharing request-state
// keys and a Redis (sessions, single use) behind nginx round robin. A
// 2026-07-28 client's rounds to a 2026-07-28 upstream go on on the other
// instance after the one that served round 1 is killed; a call translated
// for a 2025 upstream, held by the instance that is killed, ends with the
// request-state error (start again) on the other.
func TestGatewayFleet(t *testing.T) {
	if os.Getenv("ROUNDTRIP_GATEWAY_INTEROP") == "" {
		t.Skip("set ROUNDTRIP_GATEWAY_INTEROP=1 (the interop (gateway) step of scripts/check.sh does) to run the gateway fleet behind nginx")
	}
	nginx, err := exec.LookPath("nginx")
	if err != nil {
		nginx = "/usr/sbin/nginx"
	}
	sock := redistest.Start(t)
	modern, _ := httpServer(t)
	legacy := gwUpstreamLegacyOnly(t)
	dir := t.TempDir()
	keys := writeFile(t, filepath.Join(dir, "keys"), base64.RawURLEncoding.EncodeToString(requeststate.GenerateKey())+"\n")
	cfg := writeFile(t, filepath.Join(dir, "gw.json"), fmt.Sprintf(`{"mcpServers": {"m": {"url": %q}, "old": {"url": %q}},
	  "gateway": {"stateKeysFile": %q, "redis": "unix://%s", "drainTimeout": "1s"}}`, modern, legacy, keys, sock))
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	procs := map[string]*testutil.Process{}
	var servers []string
	for range 3 {
		p, u := testutil.Listen(t, self, "run-cli", "gateway", "-c", cfg, "--http", "127.0.0.1:0")
		addr := strings.TrimSuffix(strings.TrimPrefix(u, "http://"), "/mcp")
		procs[addr] = p
		servers = append(servers, "    server "+addr+" max_fails=1 fail_timeout=30s;")
		(&gatewayRun{base: "http://" + addr}).waitUp(t)
	}
	port := redistest.FreePort(t)
	conf := writeFile(t, filepath.Join(dir, "nginx.conf"), fmt.Sprintf(gwFleetNginx, dir, strings.Join(servers, "\n"), port))
	ng := testutil.Start(t, exec.Command(nginx, "-p", dir, "-c", conf, "-e", "stderr"))
	t.Cleanup(func() {
		ng.Cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-ng.Done():
		case <-time.After(5 * time.Second):
		}
	})
	front := "127.0.0.1:" + strconv.Itoa(port)
	testutil.Eventually(t, 10*time.Second, "nginx listening", func() bool {
		c, err := net.Dial("tcp", front)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	kill := func(addr string) {
		p := procs[addr]
		if p == nil {
			t.Fatalf("nginx names %s, not a gateway instance", addr)
		}
		p.Cmd.Process.Kill()
		<-p.Done()
		delete(procs, addr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The client declares elicitation (its handler is never called: every
	// call is manual, each round answered here).
	c := gwConnect(t, "http://"+front+"/mcp", &mcp.ClientOptions{Elicitation: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return nil, errors.New("manual")
	}}, nil)
	manual := &mcp.CallOptions{Manual: true}
	answer := func(p *mcp.PendingCall, content map[string]any) mcp.InputResponses {
		var r mcp.InputResponses
		for key := range p.InputRequests {
			if err := r.SetElicit(key, &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: content}); err != nil {
				t.Fatal(err)
			}
		}
		return r
	}

	// A 2026-07-28 upstream: round 1 on one instance, that instance
	// killed, round 2 and the result on the other.
	log := accessLog(filepath.Join(dir, "access.log"))
	n := len(log.lines(t))
	_, err = c.CallTool(ctx, "m__provision", map[string]any{"name": "db"}, manual)
	var round *mcp.PendingCallError
	if !errors.As(err, &round) {
		t.Fatalf("round 1: %v, want input_required", err)
	}
	first := log.after(t, n)
	kill(first)
	n = len(log.lines(t))
	out, err := c.Resume(ctx, round.Call, answer(round.Call, map[string]any{"region": "us-east-1"}), manual)
	if !errors.As(err, &round) {
		t.Fatalf("round 2 after %s was killed: %v %v, want input_required", first, out, err)
	}
	if second := log.after(t, n); second == first {
		t.Fatalf("round 2 was served by the killed instance %s", first)
	}
	out, err = c.Resume(ctx, round.Call, answer(round.Call, map[string]any{"gb": 4}), manual)
	if res, ok := out.(*mcp.CallToolResult); err != nil || !ok || !strings.Contains(resultJSON(t, res), "Provisioned db in us-east-1 with 4 GB.") {
		t.Fatalf("the result on the other instance: %v %v", err, out)
	}

	// A 2025 upstream: the call is held open by the instance that served
	// round 1; that instance killed, the next leg, on another, is refused
	// with the request-state error (the client starts the call again),
	// and the call started again completes.
	n = len(log.lines(t))
	_, err = c.CallTool(ctx, "old__provision", map[string]any{"name": "db2"}, manual)
	if !errors.As(err, &round) {
		t.Fatalf("translated round 1: %v, want input_required", err)
	}
	holder := log.after(t, n)
	kill(holder)
	n = len(log.lines(t))
	_, err = c.Resume(ctx, round.Call, answer(round.Call, map[string]any{"region": "eu-west-1"}), manual)
	if !errors.Is(err, mcp.ErrInvalidRequestState) {
		t.Fatalf("the leg after the holder %s died: %v, want the request-state error", holder, err)
	}
	if other := log.after(t, n); other == holder {
		t.Fatalf("the leg went to the killed instance %s", holder)
	}
	t.Logf("the leg after the holder died: %v", err)
	_, err = c.CallTool(ctx, "old__provision", map[string]any{"name": "db2"}, manual)
	if !errors.As(err, &round) {
		t.Fatalf("started again: %v, want input_required", err)
	}
	_, err = c.Resume(ctx, round.Call, answer(round.Call, map[string]any{"region": "eu-west-1"}), manual)
	if !errors.As(err, &round) {
		t.Fatalf("started again, round 2: %v, want input_required", err)
	}
	out, err = c.Resume(ctx, round.Call, answer(round.Call, map[string]any{"gb": 8}), manual)
	if res, ok := out.(*mcp.CallToolResult); err != nil || !ok || !strings.Contains(resultJSON(t, res), "Provisioned db2 in eu-west-1 with 8 GB.") {
		t.Fatalf("started again: %v %v", err, out)
	}
}
