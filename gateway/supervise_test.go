package gateway

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// alive reports whether pid is a live process (a zombie is not).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

func callText(t *testing.T, c *mcp.Client, tool string) string {
	t.Helper()
	res, err := c.CallTool(context.Background(), tool, nil, nil)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	if res.IsError {
		t.Fatalf("%s: isError %q", tool, resultText(t, res))
	}
	return resultText(t, res)
}

func TestAStdioUpstreamKilledMidCallFailsThatCallAndIsRestarted(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc")
	}
	t.Parallel()
	bin := stdioUpstream(t)
	g, url := startGateway(t, []Upstream{
		{Name: "s", Command: bin},
		{Name: "web", URL: serveModern(t, upstreamServer("web"))},
	}, nil)
	c := downstream(t, url, "alice", mcp.ModeAuto, nil)
	pid, _ := strconv.Atoi(callText(t, c, "s__pid"))
	child, _ := strconv.Atoi(callText(t, c, "s__spawn"))
	if !alive(pid) || !alive(child) {
		t.Fatalf("upstream %d or its child %d not running", pid, child)
	}

	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := c.CallTool(context.Background(), "s__hang", nil, nil)
		if err != nil {
			res = mcp.ErrorResult("client error: " + err.Error())
		}
		done <- res
	}()
	eventually(t, "the call to be in flight upstream", func() bool { return g.Pool().Health()[0].InFlight == 1 })
	syscall.Kill(pid, syscall.SIGKILL)
	var res *mcp.CallToolResult
	select {
	case res = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the call in flight did not end when its upstream died")
	}
	if !res.IsError || !strings.Contains(resultText(t, res), `upstream s: tool "hang" failed`) {
		t.Fatalf("the interrupted call: isError=%v %q", res.IsError, resultText(t, res))
	}
	// The rest of the aggregate served on meanwhile.
	if got := callText(t, c, "web__echo"); got != "web:" {
		t.Fatalf("web__echo: %q", got)
	}
	eventually(t, "the upstream's restart", func() bool {
		h := g.Pool().Health()[0]
		return h.State == HealthUp && h.Restarts == 1
	})
	var pid2 int
	eventually(t, "a call after the restart", func() bool {
		res, err := c.CallTool(context.Background(), "s__pid", nil, nil)
		if err != nil || res.IsError {
			return false
		}
		pid2, _ = strconv.Atoi(resultText(t, res))
		return true
	})
	if pid2 == pid || pid2 == 0 {
		t.Fatalf("pid after restart %d (before %d)", pid2, pid)
	}
	eventually(t, "the dead upstream's child to be killed with its group", func() bool { return !alive(child) })
	child2, _ := strconv.Atoi(callText(t, c, "s__spawn"))

	g.Close()
	eventually(t, "no process left after Close", func() bool { return !alive(pid2) && !alive(child2) })
	if h := g.Pool().Health()[0]; h.State != HealthClosed {
		t.Errorf("after Close: %+v", h)
	}
}

func TestOneUpstreamDownRemovesOnlyItsEntriesWithListChanged(t *testing.T) {
	t.Parallel()
	bsrv := upstreamServer("b")
	bts := httptest.NewServer(mcp.NewHTTPHandler(bsrv, nil))
	g, url := startGateway(t, []Upstream{
		{Name: "a", URL: serveModern(t, upstreamServer("a"))},
		{Name: "b", URL: bts.URL},
	}, nil)
	c := downstream(t, url, "alice", mcp.ModeAuto, nil)
	if names := toolNames(t, c); !slices.Contains(names, "b__echo") || !slices.Contains(names, "a__echo") {
		t.Fatalf("tools %v", names)
	}
	var mu sync.Mutex
	changes := 0
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	acked := make(chan struct{})
	go c.Listen(ctx, mcp.SubscriptionFilter{ToolsListChanged: true}, func(n *mcp.ListenNotification) {
		if n.Method == mcp.NotificationSubscriptionsAck {
			close(acked)
			return
		}
		if n.Method == mcp.NotificationToolListChanged {
			mu.Lock()
			changes++
			mu.Unlock()
		}
	})
	<-acked

	bsrv.Close()
	bts.Close()
	eventually(t, "b down", func() bool { return g.Pool().Health()[1].State != HealthUp })
	eventually(t, "list_changed downstream", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return changes > 0
	})
	names := toolNames(t, c)
	if slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "b__") }) {
		t.Fatalf("b's tools still listed: %v", names)
	}
	if !slices.Contains(names, "a__echo") {
		t.Fatalf("a's tools gone too: %v", names)
	}
	if got := callText(t, c, "a__echo"); got != "a:" {
		t.Fatalf("a__echo: %q", got)
	}
	res, err := c.CallTool(context.Background(), "b__echo", nil, nil)
	if err == nil && !res.IsError {
		t.Fatal("b__echo still answered")
	}

	// b comes back at the same address: reconnected, listed again.
	mu.Lock()
	before := changes
	mu.Unlock()
	l, err := net.Listen("tcp", bts.Listener.Addr().String())
	if err != nil {
		t.Skipf("cannot listen on b's address again: %v", err)
	}
	b2 := upstreamServer("b")
	back := &httptest.Server{Listener: l, Config: &http.Server{Handler: mcp.NewHTTPHandler(b2, nil)}}
	back.Start()
	t.Cleanup(func() { back.Close(); b2.Close() })
	eventually(t, "b reconnected", func() bool { return g.Pool().Health()[1].State == HealthUp })
	eventually(t, "list_changed for b's return", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return changes > before
	})
	// Its entries are added one by one, each with its list_changed.
	eventually(t, "b__echo listed again", func() bool { return slices.Contains(toolNames(t, c), "b__echo") })
	if got := callText(t, c, "b__echo"); got != "b:" {
		t.Fatalf("b__echo after b came back: %q", got)
	}
}

func TestAnUpstreamThatNeverAnswersIsCutAtItsTimeout(t *testing.T) {
	t.Parallel()
	_, url := startGateway(t, []Upstream{
		{Name: "slow", URL: serveModern(t, upstreamServer("slow")), Timeout: 300 * time.Millisecond},
	}, nil)
	c := downstream(t, url, "alice", mcp.ModeAuto, nil)
	start := time.Now()
	res, err := c.CallTool(context.Background(), "slow__hang", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Fatalf("cut after %v", el)
	}
	if !res.IsError || !strings.Contains(resultText(t, res), "did not answer within 300ms") {
		t.Fatalf("isError=%v %q", res.IsError, resultText(t, res))
	}
}

func TestAnExpiredUpstreamSessionIsReopened(t *testing.T) {
	t.Parallel()
	// A 2025 upstream that forgets a session (as after a restart): the
	// next request of that session gets 404, and the call goes on in a new
	// session without the downstream noticing.
	srv := upstreamServer("l")
	t.Cleanup(func() { srv.Close() })
	h := mcp.NewHTTPHandler(srv, nil)
	var mu sync.Mutex
	expire := false // forget the session of the next request
	forgotten := "" // the session forgotten
	inits := 0
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		sid := r.Header.Get("Mcp-Session-Id")
		isInit := bytes.Contains(body, []byte(`"initialize"`))
		mu.Lock()
		if isInit {
			inits++
		}
		if expire && sid != "" && r.Method == http.MethodPost {
			expire, forgotten = false, sid
		}
		gone := forgotten != "" && sid == forgotten
		mu.Unlock()
		switch {
		case gone:
			http.Error(w, "session not found", http.StatusNotFound)
		case r.Method == http.MethodPost && sid == "" && !isInit:
			http.Error(w, "Bad Request: No valid session ID provided", http.StatusBadRequest)
		default:
			h.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(ts.Close)
	_, gwURL := startGateway(t, []Upstream{{Name: "l", URL: ts.URL}}, nil)
	c := downstream(t, gwURL, "alice", mcp.ModeAuto, nil)
	if got := callText(t, c, "l__echo"); got != "l:" {
		t.Fatal(got)
	}
	mu.Lock()
	before := inits
	expire = true
	mu.Unlock()
	if got := callText(t, c, "l__echo"); got != "l:" {
		t.Fatalf("after the session expired: %q", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if forgotten == "" || inits != before+1 {
		t.Fatalf("forgot session %q; initialize sent %d times, then %d", forgotten, before, inits)
	}
}
