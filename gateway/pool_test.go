package gateway

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// An agent host uses the pool alone: calls by upstream and the
// upstream's own names, and answers a 2025 upstream's live questions
// itself.
func TestThePoolAloneAnswersLiveQuestionsWithItsHandlers(t *testing.T) {
	t.Parallel()
	p, err := NewPool([]Upstream{{Name: "legacy", URL: serveLegacyOnly(t, upstreamServer("legacy"))}}, &PoolOptions{
		Logger: quietLogger(),
		Elicitation: func(ctx context.Context, upstream string, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: map[string]any{"colour": upstream + "-blue"}}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	cat, ok := p.Catalog("legacy")
	if !ok || len(cat.Tools) == 0 || len(cat.Prompts) == 0 || len(cat.Resources) == 0 || len(cat.ResourceTemplates) == 0 {
		t.Fatalf("catalog %+v %v", cat, ok)
	}
	res, err := p.CallTool(context.Background(), "legacy", "ask", nil, nil)
	if err != nil || resultText(t, res) != "legacy:colour=legacy-blue" {
		t.Fatalf("%v %v", res, err)
	}
	if _, err := p.CallTool(context.Background(), "nosuch", "ask", nil, nil); err == nil {
		t.Fatal("an unknown upstream answered")
	}
}

func TestAFailingUpstreamOpensItsBreakerAndHealthSaysSo(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + l.Addr().String() + "/mcp"
	l.Close() // nothing listens there now: every connection is refused
	p, err := NewPool([]Upstream{
		{Name: "up", URL: serveModern(t, upstreamServer("up"))},
		{Name: "dead", URL: dead, Timeout: time.Second},
	}, &PoolOptions{Logger: quietLogger(), BackoffMin: time.Millisecond, BackoffMax: 5 * time.Millisecond, BreakerThreshold: 3, BreakerCooldown: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	eventually(t, "the breaker to open", func() bool { return p.Health()[1].State == HealthOpen })
	// The breaker can open (three refused connections a millisecond
	// apart) before the other upstream has connected and listed.
	eventually(t, "the other upstream to be up", func() bool { return p.Health()[0].State == HealthUp })
	h := p.Health()[1]
	if h.Failures != 3 || h.Error == "" {
		t.Errorf("health %+v", h)
	}
	_, err = p.CallTool(context.Background(), "dead", "echo", nil, nil)
	if err == nil || !strings.Contains(err.Error(), "dead is open") {
		t.Errorf("a call to an open breaker: %v", err)
	}
	ts := httptest.NewServer(p.HealthHandler())
	defer ts.Close()
	resp, err := http.Get(ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Ready     bool     `json:"ready"`
		Upstreams []Health `json:"upstreams"`
	}
	json.NewDecoder(resp.Body).Decode(&body)
	if resp.StatusCode != http.StatusServiceUnavailable || body.Ready || len(body.Upstreams) != 2 ||
		body.Upstreams[0].State != HealthUp || body.Upstreams[1].State != HealthOpen {
		t.Fatalf("%d %+v", resp.StatusCode, body)
	}
}

func TestCallsPastAnUpstreamsConcurrencyWaitWithinItsTimeout(t *testing.T) {
	t.Parallel()
	p, err := NewPool([]Upstream{{Name: "one", URL: serveModern(t, upstreamServer("one")), MaxConcurrency: 1, Timeout: time.Second}},
		&PoolOptions{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	p.WaitReady(context.Background())
	done := make(chan struct{})
	go func() {
		p.CallTool(context.Background(), "one", "hang", nil, nil)
		close(done)
	}()
	eventually(t, "the first call in flight", func() bool { return p.Health()[0].InFlight == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = p.CallTool(ctx, "one", "echo", nil, nil)
	if err == nil || !strings.Contains(err.Error(), "no free slot (1 calls in flight)") {
		t.Fatalf("the second call: %v", err)
	}
	<-done
	if res, err := p.CallTool(context.Background(), "one", "echo", json.RawMessage(`{"text":"x"}`), nil); err != nil || resultText(t, res) != "one:x" {
		t.Fatalf("after the slot is free: %v %v", res, err)
	}
}

func TestInvalidUpstreamConfigurationsAreRefused(t *testing.T) {
	t.Parallel()
	for _, ups := range [][]Upstream{
		nil,
		{{Name: "", URL: "http://x/mcp"}},
		{{Name: "a b", URL: "http://x/mcp"}},
		{{Name: strings.Repeat("a", 33), URL: "http://x/mcp"}},
		{{Name: "a", URL: "http://x/mcp", Command: "x"}},
		{{Name: "a"}},
		{{Name: "a", URL: "ftp://x"}},
		{{Name: "a", URL: "http://x/mcp", Transport: "ws"}},
		{{Name: "a", URL: "http://x/mcp"}, {Name: "a", URL: "http://y/mcp"}},
		{{Name: "a", URL: "http://x/mcp", Prefix: "bad prefix"}},
	} {
		if _, err := NewPool(ups, nil); err == nil {
			t.Errorf("%+v accepted", ups)
		}
	}
}

func TestAGatewayWhoseUpstreamsAreDownStillServesAndAdvertisesListChanged(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + l.Addr().String() + "/mcp"
	l.Close()
	_, url := startGateway(t, []Upstream{{Name: "dead", URL: dead}}, nil)
	c := downstream(t, url, "alice", mcp.ModeAuto, nil)
	d, err := c.Discover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if d.Capabilities.Tools == nil || !d.Capabilities.Tools.ListChanged || d.Capabilities.Resources == nil || !d.Capabilities.Resources.ListChanged {
		t.Fatalf("capabilities %+v", d.Capabilities)
	}
	if names := toolNames(t, c); len(names) != 0 {
		t.Fatalf("tools %v", names)
	}
}

func TestAStdioUpstreamThatKeepsCrashingOpensItsBreaker(t *testing.T) {
	t.Parallel()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	p, err := NewPool([]Upstream{{Name: "crash", Command: sh, Args: []string{"-c", "exit 3"}, Timeout: 2 * time.Second}},
		&PoolOptions{Logger: quietLogger(), BackoffMin: time.Millisecond, BackoffMax: 5 * time.Millisecond, BreakerThreshold: 3, BreakerCooldown: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	eventually(t, "the breaker to open", func() bool { return p.Health()[0].State == HealthOpen })
	if h := p.Health()[0]; h.Failures != 3 {
		t.Fatalf("%+v", h)
	}
}
