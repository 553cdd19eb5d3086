package interop

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/roundtrip-mcp/roundtrip/internal/testutil"
	"github.com/roundtrip-mcp/roundtrip/redis/redistest"
)

// 2025-era sessions in a fleet (issue 22, acceptance): three
// everything-server processes sharing one redis-server with
// -session-store, behind nginx doing plain round robin (no hashing, no
// session map, keep-alive to the instances). Any instance serves any
// request of any session; a GET stream resumes on another instance with
// Last-Event-ID; the instance holding a session's GET stream can die
// (kill -9) without ending the session. The same fleet without the shared
// store is the control: round robin then loses sessions.
//
// The tests need redis-server and nginx (the services step of
// scripts/check.sh installs them); the TypeScript ones the SDK of .tools
// (tsSDK); the conformance suite runs with FLEET_CONFORMANCE=1
// (scripts/conformance-fleet.sh sets it).

// fleetRev is the revision the raw-HTTP sessions of these tests speak.
const fleetRev = "2025-11-25"

// sessionFleet is a running fleet: its instances and nginx in front.
type sessionFleet struct {
	URL       string // nginx's /mcp
	Base      string // nginx's origin (for /sse)
	Instances []*fleetInstance
	Redis     *redis.Client
	AccessLog string
}

type fleetInstance struct {
	URL  string // the instance's own /mcp, bypassing nginx
	proc *testutil.Process
}

// kill stops the instance with SIGKILL, as a crash would, and waits for
// its end.
func (in *fleetInstance) kill(t *testing.T) {
	t.Helper()
	in.proc.Cmd.Process.Kill()
	select {
	case <-in.proc.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the killed instance did not exit")
	}
}

// startSessionFleet starts a redis-server, n everything-servers sharing
// request-state keys and the single-use guard in it and, with shared, the
// session store, and nginx doing plain round robin over them.
func startSessionFleet(t *testing.T, n int, shared bool) *sessionFleet {
	t.Helper()
	nginx := nginxBin(t)
	bin := serverBin(t)
	sock := redistest.Start(t)
	f := &sessionFleet{Redis: redistest.Client(t, sock)}
	key := make([]byte, 32)
	rand.Read(key)
	args := []string{"-http", "127.0.0.1:0", "-state-keys", base64.RawURLEncoding.EncodeToString(key), "-guard", "unix://" + sock}
	if shared {
		args = append(args, "-session-store", "unix://"+sock)
	}
	var servers []string
	for range n {
		p, u := testutil.Listen(t, bin, args...)
		f.Instances = append(f.Instances, &fleetInstance{URL: u, proc: p})
		servers = append(servers, fmt.Sprintf("    server %s max_fails=1 fail_timeout=5s;", strings.TrimSuffix(strings.TrimPrefix(u, "http://"), "/mcp")))
	}

	dir := t.TempDir()
	port := redistest.FreePort(t)
	f.AccessLog = filepath.Join(dir, "access.log")
	conf := filepath.Join(dir, "nginx.conf")
	text := fmt.Sprintf(fleetNginxConf, dir, f.AccessLog, dir, dir, dir, dir, dir, strings.Join(servers, "\n"), port)
	if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	p := testutil.Start(t, exec.Command(nginx, "-p", dir, "-c", conf, "-e", "stderr"))
	// Registered after Start's, so it runs first: a graceful stop, so that
	// the workers do not outlive a master killed with SIGKILL.
	t.Cleanup(func() {
		p.Cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.Done():
		case <-time.After(5 * time.Second):
		}
	})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	testutil.Eventually(t, 10*time.Second, "nginx listening on "+addr, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	f.Base = "http://" + addr
	f.URL = f.Base + "/mcp"
	return f
}

// fleetNginxConf: one worker, plain round robin over the instances (no
// hash, no map on the session id), HTTP/1.1 keep-alive to them, no
// buffering (SSE passes through as written). Passive checks take a dead
// instance out; a request that could not connect goes to the next one
// (nginx's default: never a POST that was sent).
const fleetNginxConf = `worker_processes 1;
daemon off;
pid %s/nginx.pid;
error_log stderr warn;
events { worker_connections 1024; }
http {
  log_format fleet '$request_method $status $upstream_addr';
  access_log %s fleet;
  client_body_temp_path %s/body;
  proxy_temp_path %s/proxy;
  fastcgi_temp_path %s/fastcgi;
  uwsgi_temp_path %s/uwsgi;
  scgi_temp_path %s/scgi;
  upstream fleet {
%s
    keepalive 16;
  }
  server {
    listen 127.0.0.1:%d;
    location / {
      proxy_pass http://fleet;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $http_host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_buffering off;
      proxy_connect_timeout 2s;
      proxy_read_timeout 1h;
    }
  }
}
`

// nginxBin is nginx on PATH or where Debian puts it.
func nginxBin(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("nginx"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/sbin/nginx"); err != nil {
		t.Fatalf("nginx is required (the services step of scripts/check.sh installs nginx-light): %v", err)
	}
	return "/usr/sbin/nginx"
}

// sessionKeys are the keys in Redis other than the single-use guard's
// (prefix mcp:rs:).
func (f *sessionFleet) sessionKeys(t *testing.T) []string {
	t.Helper()
	var keys []string
	it := f.Redis.Scan(context.Background(), 0, "*", 100).Iterator()
	for it.Next(context.Background()) {
		if !strings.HasPrefix(it.Val(), "mcp:rs:") {
			keys = append(keys, it.Val())
		}
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return keys
}

// upstreams are the distinct instances nginx's access log names.
func (f *sessionFleet) upstreams(t *testing.T) map[string]int {
	t.Helper()
	b, err := os.ReadFile(f.AccessLog)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, line := range strings.Split(string(b), "\n") {
		if fs := strings.Fields(line); len(fs) == 3 {
			seen[fs[2]]++
		}
	}
	return seen
}

// ------------------------------------------------- a raw 2025 session

// sseEvent is one event of an SSE stream.
type sseEvent struct{ ID, Data string }

// readSSE parses r's events into ch until r ends, then closes ch.
func readSSE(r io.Reader, ch chan<- sseEvent) {
	defer close(ch)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var ev sseEvent
	var data []string
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if ev.ID != "" || len(data) > 0 {
				ev.Data = strings.Join(data, "\n")
				ch <- ev
			}
			ev, data = sseEvent{}, nil
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			ev.ID = value
		case "data":
			data = append(data, value)
		}
	}
}

// rawSession is a 2025-11-25 session spoken in plain HTTP, so that each
// request goes where the test says.
type rawSession struct {
	t  *testing.T
	id string
	n  int
}

var fleetHTTP = &http.Client{Timeout: 20 * time.Second}

func newPost(url, session string, msg any) *http.Request {
	body, _ := json.Marshal(msg)
	r, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		r.Header.Set("Mcp-Session-Id", session)
		r.Header.Set("MCP-Protocol-Version", fleetRev)
	}
	return r
}

// rpcReply is a JSON-RPC response.
type rpcReply struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// reply reads the response to request id from resp (JSON or an SSE
// stream), or says what came instead.
func reply(resp *http.Response, id int) (*rpcReply, error) {
	defer resp.Body.Close()
	body := io.LimitReader(resp.Body, 4<<20)
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(body)
		return nil, fmt.Errorf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(b))
	}
	want := strconv.Itoa(id)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		ch := make(chan sseEvent, 16)
		go readSSE(body, ch)
		for ev := range ch {
			var r rpcReply
			if json.Unmarshal([]byte(ev.Data), &r) == nil && string(r.ID) == want && (r.Result != nil || r.Error != nil) {
				go func() {
					for range ch {
					}
				}()
				return &r, nil
			}
		}
		return nil, fmt.Errorf("the stream ended without the response to %d", id)
	}
	var r rpcReply
	if err := json.NewDecoder(body).Decode(&r); err != nil {
		return nil, err
	}
	return &r, nil
}

// openSession initializes a session at url and sends its
// notifications/initialized there.
func openSession(t *testing.T, url string) *rawSession {
	t.Helper()
	s, err := tryOpenSession(t, url)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// tryOpenSession is openSession that returns the error of
// notifications/initialized (a failed initialize fails the test).
func tryOpenSession(t *testing.T, url string) (*rawSession, error) {
	t.Helper()
	resp, err := fleetHTTP.Do(newPost(url, "", map[string]any{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": map[string]any{
		"protocolVersion": fleetRev, "capabilities": map[string]any{"elicitation": map[string]any{}},
		"clientInfo": map[string]any{"name": "fleet-test", "version": "1"},
	}}))
	if err != nil {
		t.Fatal(err)
	}
	id := resp.Header.Get("Mcp-Session-Id")
	r, err := reply(resp, 0)
	if err != nil || r.Error != nil || id == "" {
		t.Fatalf("initialize: %+v %v (session %q)", r, err, id)
	}
	s := &rawSession{t: t, id: id}
	resp, err = fleetHTTP.Do(newPost(url, id, map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"}))
	if err != nil {
		return s, err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		return s, fmt.Errorf("notifications/initialized: HTTP %d", resp.StatusCode)
	}
	return s, nil
}

// call sends one request of the session to url and returns its reply.
func (s *rawSession) call(url, method string, params any) (*rpcReply, error) {
	s.n++
	resp, err := fleetHTTP.Do(newPost(url, s.id, map[string]any{"jsonrpc": "2.0", "id": s.n, "method": method, "params": params}))
	if err != nil {
		return nil, err
	}
	return reply(resp, s.n)
}

// must is call that fails the test on an error of any kind.
func (s *rawSession) must(url, method string, params any) json.RawMessage {
	s.t.Helper()
	r, err := s.call(url, method, params)
	if err != nil || r.Error != nil {
		s.t.Fatalf("%s at %s: %+v %v", method, url, r, err)
	}
	return r.Result
}

func (s *rawSession) tool(url, name string) json.RawMessage {
	s.t.Helper()
	return s.must(url, "tools/call", map[string]any{"name": name, "arguments": map[string]any{}})
}

// getStream is an open GET stream of a session.
type getStream struct {
	events chan sseEvent
	cancel context.CancelFunc
}

// openGET opens the session's GET stream at url, resuming after
// lastEventID when it is not empty.
func (s *rawSession) openGET(url, lastEventID string) *getStream {
	s.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	r.Header.Set("Accept", "text/event-stream")
	r.Header.Set("Mcp-Session-Id", s.id)
	r.Header.Set("MCP-Protocol-Version", fleetRev)
	if lastEventID != "" {
		r.Header.Set("Last-Event-ID", lastEventID)
	}
	resp, err := (&http.Client{}).Do(r)
	if err != nil {
		cancel()
		s.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		cancel()
		s.t.Fatalf("GET at %s (Last-Event-ID %q): HTTP %d: %s", url, lastEventID, resp.StatusCode, b)
	}
	g := &getStream{events: make(chan sseEvent, 64), cancel: cancel}
	go func() {
		defer resp.Body.Close()
		readSSE(resp.Body, g.events)
	}()
	s.t.Cleanup(cancel)
	return g
}

// next is the stream's next event that carries a message (priming
// events, with an id and no data, are skipped).
func (g *getStream) next(t *testing.T, within time.Duration) sseEvent {
	t.Helper()
	timer := time.NewTimer(within)
	defer timer.Stop()
	for {
		select {
		case ev, ok := <-g.events:
			if !ok {
				t.Fatal("the GET stream ended")
			}
			if ev.Data != "" {
				return ev
			}
		case <-timer.C:
			t.Fatalf("no event on the GET stream within %v", within)
		}
	}
}

// quiet fails the test if the stream carries a message within d.
func (g *getStream) quiet(t *testing.T, d time.Duration) {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case ev, ok := <-g.events:
			if ok && ev.Data != "" {
				t.Fatalf("an unexpected event %q: %s", ev.ID, ev.Data)
			}
			if !ok {
				return
			}
		case <-timer.C:
			return
		}
	}
}

// ended fails the test unless the stream ends within d, with no message.
func (g *getStream) ended(t *testing.T, d time.Duration) {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case ev, ok := <-g.events:
			if !ok {
				return
			}
			if ev.Data != "" {
				t.Errorf("an event on a stream that should end: %+v", ev)
			}
		case <-timer.C:
			t.Fatalf("the stream did not end within %v", d)
		}
	}
}

func method(t *testing.T, ev sseEvent) string {
	t.Helper()
	var m struct {
		Method string `json:"method"`
	}
	if err := json.Unmarshal([]byte(ev.Data), &m); err != nil {
		t.Fatalf("event %q: %v: %s", ev.ID, err, ev.Data)
	}
	return m.Method
}

// The three notifications the everything-server sends to a session's
// GET stream, one per tool: a resource update (the session subscribes
// to the watched resource), tool and prompt list changes.
var notifyingTools = []struct{ tool, method string }{
	{"test_update_watched_resource", "notifications/resources/updated"},
	{"test_trigger_tool_change", "notifications/tools/list_changed"},
	{"test_trigger_prompt_change", "notifications/prompts/list_changed"},
}

// ------------------------------------------------------------- the tests

// The control: without the shared store, round robin sends a session's
// requests to instances that never heard of it.
func TestFleetWithoutTheSessionStoreLosesSessionsUnderRoundRobin(t *testing.T) {
	f := startSessionFleet(t, 3, false)
	s, err := tryOpenSession(t, f.URL)
	lost := 0
	if err != nil {
		lost++
	}
	for range 6 {
		r, err := s.call(f.URL, "tools/call", map[string]any{"name": "test_simple_text", "arguments": map[string]any{}})
		if err != nil || r.Error != nil {
			lost++
		}
	}
	if lost == 0 {
		t.Fatal("every call of the session worked on every instance without a shared store: the fleet is not round robin, or the test proves nothing")
	}
	if keys := f.sessionKeys(t); len(keys) != 0 {
		t.Errorf("without -session-store Redis holds %v after a session's calls", keys)
	}
}

// With the store, every request of a session works wherever round robin
// sends it, and the session's record is in Redis.
func TestFleetServesEveryRequestOfASessionOnAnyInstance(t *testing.T) {
	f := startSessionFleet(t, 3, true)
	s := openSession(t, f.URL)
	if keys := f.sessionKeys(t); len(keys) == 0 {
		t.Fatal("the session store wrote nothing to Redis")
	}
	for i, in := range append(f.Instances, f.Instances...) {
		res := s.tool(in.URL, "test_simple_text")
		if !strings.Contains(string(res), "This is a simple text response for testing.") {
			t.Errorf("call %d at %s: %s", i, in.URL, res)
		}
	}
	for range 6 {
		s.tool(f.URL, "test_simple_text")
	}
	if seen := f.upstreams(t); len(seen) != 3 {
		t.Errorf("nginx sent the session's requests to %v, want all 3 instances", seen)
	}
	// A live question asked on one instance, answered on another.
	s.n++
	id := s.n
	resp, err := fleetHTTP.Do(newPost(f.Instances[0].URL, s.id, map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call",
		"params": map[string]any{"name": "test_elicitation", "arguments": map[string]any{"message": "who?"}}}))
	if err != nil || resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("test_elicitation: %v %v", resp, err)
	}
	defer resp.Body.Close()
	events := make(chan sseEvent, 16)
	go readSSE(resp.Body, events)
	var asked struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	for ev := range events {
		if json.Unmarshal([]byte(ev.Data), &asked) == nil && asked.Method != "" {
			break
		}
	}
	if asked.Method != "elicitation/create" || asked.ID == nil {
		t.Fatalf("the call's stream carried %+v, want elicitation/create", asked)
	}
	ans, err := fleetHTTP.Do(newPost(f.Instances[2].URL, s.id, map[string]any{"jsonrpc": "2.0", "id": asked.ID,
		"result": map[string]any{"action": "accept", "content": map[string]any{"username": "ada", "email": "ada@example.com"}}}))
	if err != nil {
		t.Fatal(err)
	}
	ans.Body.Close()
	if ans.StatusCode != http.StatusAccepted {
		t.Fatalf("the answer POSTed to another instance: HTTP %d", ans.StatusCode)
	}
	var result *rpcReply
	for ev := range events {
		var r rpcReply
		if json.Unmarshal([]byte(ev.Data), &r) == nil && string(r.ID) == strconv.Itoa(id) {
			result = &r
			break
		}
	}
	if result == nil || result.Error != nil || !strings.Contains(string(result.Result), "ada@example.com") {
		t.Fatalf("test_elicitation answered on another instance: %+v", result)
	}

	// DELETE on one instance ends the session on every one.
	r, _ := http.NewRequest(http.MethodDelete, f.Instances[1].URL, nil)
	r.Header.Set("Mcp-Session-Id", s.id)
	r.Header.Set("MCP-Protocol-Version", fleetRev)
	del, err := fleetHTTP.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	del.Body.Close()
	if del.StatusCode/100 != 2 {
		t.Fatalf("DELETE: HTTP %d", del.StatusCode)
	}
	for _, in := range f.Instances {
		if r, err := s.call(in.URL, "tools/call", map[string]any{"name": "test_simple_text", "arguments": map[string]any{}}); err == nil && r.Error == nil {
			t.Errorf("the deleted session still works at %s", in.URL)
		}
	}
}

// A GET stream closed on one instance and resumed with Last-Event-ID on
// another replays exactly the events after that id, byte for byte (ids
// and messages as the client saw them the first time), and goes on live
// there with the numbering the stream had.
func TestFleetGETStreamResumedOnAnotherInstanceReplaysWhatItMissed(t *testing.T) {
	f := startSessionFleet(t, 3, true)
	b, c := f.Instances[1].URL, f.Instances[2].URL
	s := openSession(t, f.URL)
	s.must(f.URL, "resources/subscribe", map[string]any{"uri": "test://watched-resource"})

	g := s.openGET(b, "")
	seen := notify(t, s, g, b)
	g.cancel()
	s.tool(f.Instances[0].URL, "test_simple_text") // the session goes on elsewhere meanwhile

	// Resumed after the first event: the client missed the other two.
	g2 := s.openGET(c, seen[0].ID)
	for i, want := range seen[1:] {
		if got := g2.next(t, 10*time.Second); got != want {
			t.Fatalf("replayed event %d: %+v, want the one the stream carried %+v", i+1, got, want)
		}
	}
	g2.quiet(t, 300*time.Millisecond)
	// Live on c now: c holds the stream.
	for _, ev := range notify(t, s, g2, c) {
		for _, old := range seen {
			if ev.ID == old.ID {
				t.Errorf("a live event after the resumption reuses the id %q of %+v", ev.ID, old)
			}
		}
	}
}

// Notifications sent while the session has no GET stream open are kept:
// the stream resumed on another instance with the last id the client
// saw gets them first, in order, as it would from the one process.
func TestFleetNotificationsSentWhileNoGETStreamIsOpenReachTheStreamResumedElsewhere(t *testing.T) {
	f := startSessionFleet(t, 3, true)
	b, c := f.Instances[1].URL, f.Instances[2].URL
	s := openSession(t, f.URL)
	s.must(f.URL, "resources/subscribe", map[string]any{"uri": "test://watched-resource"})
	g := s.openGET(b, "")
	s.tool(b, "test_update_watched_resource")
	last := g.next(t, 10*time.Second)
	g.cancel()
	// On b, whose hub has the session's listener: sent while no GET
	// stream is open anywhere.
	for _, n := range notifyingTools {
		s.tool(b, n.tool)
	}
	g2 := s.openGET(c, last.ID)
	for _, n := range notifyingTools {
		ev := g2.next(t, 5*time.Second)
		if got := method(t, ev); got != n.method || ev.ID == last.ID {
			t.Fatalf("the stream resumed on another instance: %q (id %q), want %s", got, ev.ID, n.method)
		}
	}
	g2.quiet(t, 300*time.Millisecond)
}

// A response stream that the server closes before its first event
// (test_reconnection, SEP-1699), resumed at once with the priming event's
// id on another instance, gets the call's result there: the suite's
// server-sse-polling scenario, through round robin.
func TestFleetResponseStreamResumedElsewhereFromItsPrimingEvent(t *testing.T) {
	f := startSessionFleet(t, 3, true)
	a, b := f.Instances[0].URL, f.Instances[1].URL
	s := openSession(t, f.URL)
	s.n++
	resp, err := fleetHTTP.Do(newPost(a, s.id, map[string]any{"jsonrpc": "2.0", "id": s.n, "method": "tools/call",
		"params": map[string]any{"name": "test_reconnection", "arguments": map[string]any{}}}))
	if err != nil {
		t.Fatal(err)
	}
	events := make(chan sseEvent, 16)
	go readSSE(resp.Body, events)
	var prime string
	for ev := range events {
		if ev.Data != "" {
			t.Fatalf("the stream carried %+v before it closed", ev)
		}
		prime = ev.ID
	}
	resp.Body.Close()
	if prime == "" {
		t.Fatal("the response stream closed without a priming event")
	}
	g := s.openGET(b, prime)
	ev := g.next(t, 10*time.Second)
	var r rpcReply
	if err := json.Unmarshal([]byte(ev.Data), &r); err != nil || string(r.ID) != strconv.Itoa(s.n) || !strings.Contains(string(r.Result), "Reconnection test completed successfully") {
		t.Fatalf("the resumed stream: %+v", ev)
	}
}

// notify calls each notifying tool at url, which holds g, and returns
// the events g gets, one per tool, checked.
func notify(t *testing.T, s *rawSession, g *getStream, url string) []sseEvent {
	t.Helper()
	var evs []sseEvent
	ids := map[string]bool{}
	for _, n := range notifyingTools {
		s.tool(url, n.tool)
		ev := g.next(t, 10*time.Second)
		if got := method(t, ev); got != n.method || ev.ID == "" || ids[ev.ID] {
			t.Fatalf("after %s the stream got %q (id %q, seen before: %v), want %s", n.tool, got, ev.ID, ids[ev.ID], n.method)
		}
		ids[ev.ID] = true
		evs = append(evs, ev)
	}
	return evs
}

// kill -9 of the instance holding a session's GET stream, with a request
// of the session in flight there: that request fails fast (a connection
// error, not a hang), the stream ends, the next request works through
// nginx, and the stream resumes on another instance after the last event
// it got, live from then on.
func TestFleetKillOfTheStreamHolderMidSession(t *testing.T) {
	f := startSessionFleet(t, 3, true)
	a, b := f.Instances[0], f.Instances[1]
	s := openSession(t, f.URL)
	s.must(f.URL, "resources/subscribe", map[string]any{"uri": "test://watched-resource"})
	g := s.openGET(a.URL, "")
	s.tool(a.URL, "test_update_watched_resource")
	first := g.next(t, 10*time.Second)

	// A call waiting for the client's answer to a live question, on a.
	inflight := make(chan error, 1)
	go func() {
		_, err := s.call(a.URL, "tools/call", map[string]any{"name": "test_elicitation", "arguments": map[string]any{"message": "hold on"}})
		inflight <- err
	}()
	time.Sleep(300 * time.Millisecond)
	killed := time.Now()
	a.kill(t)
	select {
	case err := <-inflight:
		if err == nil {
			t.Error("the call in flight on the killed instance succeeded")
		}
		if d := time.Since(killed); d > 5*time.Second {
			t.Errorf("the call in flight failed %v after the kill", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the call in flight on the killed instance hangs")
	}
	g.ended(t, 5*time.Second)

	// The next requests, through nginx and straight to b.
	for range 3 {
		if res := s.tool(f.URL, "test_simple_text"); !strings.Contains(string(res), "simple text") {
			t.Fatalf("after the kill: %s", res)
		}
	}
	g2 := s.openGET(b.URL, first.ID)
	g2.quiet(t, 300*time.Millisecond) // nothing was missed
	s.tool(b.URL, "test_update_watched_resource")
	if ev := g2.next(t, 10*time.Second); method(t, ev) != "notifications/resources/updated" || ev.ID == first.ID {
		t.Fatalf("the resumed stream: %+v", ev)
	}
}

// The official TypeScript SDK's v1 client completes every multi
// round-trip tool and the prompt through the round robin, over Streamable
// HTTP and over HTTP+SSE, exactly as against one process (legacy-mrtr.mjs
// checks each answer): its answers to live questions land on whichever
// instance nginx picks.
func TestFleetTypeScriptClientCompletesEveryMultiRoundTripTool(t *testing.T) {
	node, modules := tsSDK(t)
	f := startSessionFleet(t, 3, true)
	sdk := filepath.Join(modules, "@modelcontextprotocol", "sdk")
	for _, tc := range []struct{ name, flag, url string }{
		{"streamable-http", "--http", f.URL},
		{"http+sse", "--sse", f.Base + "/sse"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, filepath.Join("ts", "legacy-mrtr.mjs"), "--sdk", sdk, tc.flag, tc.url)
			var stderr testutil.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("legacy-mrtr.mjs %s %s: %v\n%s\n%s", tc.flag, tc.url, err, out, stderr.String())
			}
			var sum struct {
				Summary bool `json:"summary"`
				Passed  int  `json:"passed"`
				Failed  int  `json:"failed"`
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil || !sum.Summary || sum.Failed != 0 || sum.Passed != 9 {
				t.Fatalf("summary %+v (%v):\n%s", sum, err, out)
			}
		})
	}
	if seen := f.upstreams(t); len(seen) != 3 {
		t.Errorf("nginx sent the clients' requests to %v, want all 3 instances", seen)
	}
}

// failingChecks lists the FAILURE and WARNING checks of the suite's
// checks.json files under dir.
func failingChecks(dir string) string {
	var lines []string
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "checks.json" {
			return nil
		}
		b, _ := os.ReadFile(path)
		var checks []struct {
			ID, Status, ErrorMessage string
		}
		json.Unmarshal(b, &checks)
		for _, c := range checks {
			if c.Status == "FAILURE" || c.Status == "WARNING" {
				lines = append(lines, fmt.Sprintf("  %s: [%s] %s: %.300s", filepath.Base(filepath.Dir(path)), c.ID, c.Status, c.ErrorMessage))
			}
		}
		return nil
	})
	return strings.Join(lines, "\n")
}

// The official conformance suite at 2025-11-25, 2025-06-18 and
// 2025-03-26 through the round robin, with the baseline of expected
// failures that a single process is held to.
func TestFleetPassesTheConformanceSuiteThroughRoundRobin(t *testing.T) {
	if os.Getenv("FLEET_CONFORMANCE") == "" {
		t.Skip("set FLEET_CONFORMANCE=1 (scripts/conformance-fleet.sh does) to run the suite through the fleet")
	}
	node, modules := tsSDK(t)
	suite := filepath.Join(modules, "@modelcontextprotocol", "conformance", "dist", "index.js")
	if _, err := os.Stat(suite); err != nil {
		t.Fatalf("the conformance suite: %v", err)
	}
	out := os.Getenv("FLEET_CONFORMANCE_DIR")
	if out == "" {
		out = t.TempDir()
	}
	f := startSessionFleet(t, 3, true)
	baseline, _ := filepath.Abs(filepath.Join("..", "expected-failures.yml"))
	for _, v := range []string{"2025-11-25", "2025-06-18", "2025-03-26"} {
		t.Run(v, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, suite, "server", "--url", f.URL, "--suite", "all", "--spec-version", v,
				"--expected-failures", baseline, "-o", filepath.Join(out, "fleet-"+v))
			b, err := cmd.CombinedOutput()
			if err != nil {
				log := string(b)
				if i := strings.Index(log, "=== SUMMARY ==="); i >= 0 {
					log = log[i:]
				}
				t.Fatalf("the suite at %s through the fleet: %v\n%s\nfailing checks:\n%s", v, err, log, failingChecks(filepath.Join(out, "fleet-"+v)))
			}
		})
	}
	if seen := f.upstreams(t); len(seen) != 3 {
		t.Errorf("nginx sent the suite's requests to %v, want all 3 instances", seen)
	}
}
