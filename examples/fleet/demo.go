package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// ---- the demo: redis, three instances, nginx, a client ----

// startRedis starts redis-server on a Unix socket in dir, without
// persistence, and returns the socket's path and a func that stops it.
func startRedis(dir string) (sock string, stop func(), err error) {
	sock = filepath.Join(dir, "redis.sock")
	cmd := exec.Command("redis-server", "--port", "0", "--unixsocket", sock, "--save", "", "--appendonly", "no", "--dir", dir)
	p, err := startProc(cmd)
	if err != nil {
		return "", nil, fmt.Errorf("redis-server: %w", err)
	}
	stop = func() {
		p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
			p.cmd.Process.Kill()
			<-p.done
		}
	}
	if err := waitFor(10*time.Second, func() error {
		if p.exited() {
			return errors.New("redis-server exited")
		}
		c, err := net.Dial("unix", sock)
		if err == nil {
			c.Close()
		}
		return err
	}); err != nil {
		stop()
		return "", nil, fmt.Errorf("redis-server did not come up: %w", err)
	}
	return sock, stop, nil
}

// startDemo starts redis-server and a fleet of three instances of self
// behind nginx in dir; stop stops it all.
func startDemo(self, dir string) (f *Fleet, stop func(), err error) {
	sock, stopRedis, err := startRedis(dir)
	if err != nil {
		return nil, nil, err
	}
	f, err = Start(Config{Self: self, Dir: dir, Instances: 3, Redis: "unix://" + sock})
	if err != nil {
		stopRedis()
		return nil, nil, err
	}
	return f, func() { f.Close(); stopRedis() }, nil
}

// demo starts the fleet, makes one call through nginx with the automatic
// answer-and-retry loop, then replays a leg by hand.
func demo(self string, out io.Writer) error {
	dir, err := os.MkdirTemp("", "fleet-example-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	f, stop, err := startDemo(self, dir)
	if err != nil {
		return err
	}
	defer stop()
	for _, id := range slices.Sorted(maps.Keys(f.Instances)) {
		fmt.Fprintf(out, "instance %s on %s\n", id, f.Instances[id])
	}
	fmt.Fprintf(out, "nginx on %s (plain round robin for every era)\n", f.URL)

	return callThrough(f.URL, out)
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
// nginx. Its session's record is in the shared session store, so each of
// its requests (initialize, the tools/call whose SSE stream carries the
// live question elicitation/create, the client's answer, a POST of its
// own) lands on whichever instance round robin picks; the answer reaches
// the instance whose handler asked over Redis.
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
