package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The 2025 clients of the chaos test: sessions of 2025-11-25 spoken in
// plain HTTP through nginx's round robin, each with a GET stream that
// receives the notifications of the resources it subscribed to (the
// database it provisions: fleet://databases/NAME) and resumes with
// Last-Event-ID wherever nginx sends it after its instance went away,
// and provision calls whose live questions (elicitation/create on the
// POST's stream) are answered by POSTs that round robin sends to any
// instance. They run through the kill -9, the rolling drain and the key
// rotation, and count: sessions lost (a 404: the fleet forgot the
// session), answers lost (a call that hangs after its answer was
// accepted), calls that failed in flight (their instance died: they
// must fail fast, and are made again), events seen twice on a resumed
// stream, notifications that never came.

const (
	legacySessions    = 3
	legacyRev         = "2025-11-25"
	legacyCallTimeout = 15 * time.Second // a call still running then lost an answer
	legacyFailFast    = 5 * time.Second  // a call that fails must fail within this
)

// legacyStats are the figures of one phase.
type legacyStats struct {
	calls, completed, failedInFlight, slowFailures, sessionsLost, answersLost atomic.Int64
	notified, notificationsMissing, resumes, duplicateEvents                  atomic.Int64
}

// legacyDriver runs the 2025 sessions against url until stopped.
type legacyDriver struct {
	url    string
	hc     *http.Client // no overall timeout: GET streams last
	phase  func() int
	eventf func(format string, args ...any)
	stats  [7]legacyStats
	stop   atomic.Bool
	cancel context.CancelFunc
	ctx    context.Context
	wg     sync.WaitGroup

	mu     sync.Mutex
	done   map[string]bool // names whose provision call completed
	failed map[string]bool // names with an attempt that failed in flight
}

func startLegacyDriver(url string, tr *http.Transport, phase func() int, eventf func(string, ...any)) *legacyDriver {
	ctx, cancel := context.WithCancel(context.Background())
	d := &legacyDriver{url: url, hc: &http.Client{Transport: tr}, phase: phase, eventf: eventf, ctx: ctx, cancel: cancel,
		done: map[string]bool{}, failed: map[string]bool{}}
	for i := range legacySessions {
		d.wg.Add(1)
		go d.session(i)
	}
	return d
}

// Stop ends the sessions and waits for them.
func (d *legacyDriver) Stop() {
	d.stop.Store(true)
	d.cancel()
	d.wg.Wait()
}

func (d *legacyDriver) st() *legacyStats { return &d.stats[d.phase()] }

// errSessionLost is a 404: the fleet no longer knows the session.
var errSessionLost = errors.New("session not found (404)")

// lsession is one 2025 session of the driver.
type lsession struct {
	d      *legacyDriver
	id     string
	n      atomic.Int64
	notes  chan string // the URIs of notifications/resources/updated
	seen   map[string]bool
	lastID string
}

func (d *legacyDriver) post(ctx context.Context, session string, msg any) (*http.Response, error) {
	body, _ := json.Marshal(msg)
	r, _ := http.NewRequestWithContext(ctx, http.MethodPost, d.url, bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		r.Header.Set("Mcp-Session-Id", session)
		r.Header.Set("MCP-Protocol-Version", legacyRev)
	}
	resp, err := d.hc.Do(r)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusNotFound {
		resp.Body.Close()
		return nil, errSessionLost
	}
	return resp, nil
}

// open initializes a session, retrying while the fleet is in turmoil.
func (d *legacyDriver) open() (*lsession, error) {
	var last error
	for try := 0; try < 20 && !d.stop.Load(); try++ {
		ctx, cancel := context.WithTimeout(d.ctx, 10*time.Second)
		resp, err := d.post(ctx, "", map[string]any{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": map[string]any{
			"protocolVersion": legacyRev, "capabilities": map[string]any{"elicitation": map[string]any{}},
			"clientInfo": map[string]any{"name": "chaos-legacy", "version": "1"},
		}})
		if err == nil {
			id := resp.Header.Get("Mcp-Session-Id")
			io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && id != "" {
				r, err := d.post(ctx, id, map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
				if err == nil {
					r.Body.Close()
					cancel()
					return &lsession{d: d, id: id, notes: make(chan string, 64), seen: map[string]bool{}}, nil
				}
				last = err
			} else {
				last = fmt.Errorf("initialize: HTTP %d", resp.StatusCode)
			}
		} else {
			last = err
		}
		cancel()
		time.Sleep(200 * time.Millisecond)
	}
	return nil, last
}

// session runs one session: its GET stream, and provision calls one
// after the other.
func (d *legacyDriver) session(i int) {
	defer d.wg.Done()
	s, err := d.open()
	if err != nil {
		d.eventf("legacy session %d: no session: %v", i, err)
		return
	}
	lost := make(chan struct{})
	go s.listen(lost)
	for n := 0; !d.stop.Load(); n++ {
		select {
		case <-lost:
			return
		default:
		}
		name := fmt.Sprintf("legacy%d-%04d", i, n)
		uri := "fleet://databases/" + name
		if err := s.simple("resources/subscribe", map[string]any{"uri": uri}); err != nil {
			if errors.Is(err, errSessionLost) {
				d.st().sessionsLost.Add(1)
				d.eventf("legacy session %d lost at subscribe: %v", i, err)
				return
			}
			n-- // the fleet is in turmoil: again
			time.Sleep(100 * time.Millisecond)
			continue
		}
		for attempt := 0; !d.stop.Load(); attempt++ {
			d.st().calls.Add(1)
			start := time.Now()
			err := s.provision(name)
			if err == nil {
				d.st().completed.Add(1)
				d.mu.Lock()
				d.done[name] = true
				d.mu.Unlock()
				s.await(uri)
				break
			}
			if d.stop.Load() {
				// Cut short by Stop: the call may have run all the same.
				d.mu.Lock()
				d.failed[name] = true
				d.mu.Unlock()
				return
			}
			switch {
			case errors.Is(err, errSessionLost):
				d.st().sessionsLost.Add(1)
				d.eventf("legacy session %d lost: %v", i, err)
				return
			case errors.Is(err, context.DeadlineExceeded):
				d.st().answersLost.Add(1)
				d.eventf("legacy %s: lost (no answer within %v)", name, legacyCallTimeout)
			default:
				d.st().failedInFlight.Add(1)
				if time.Since(start) > legacyFailFast {
					d.st().slowFailures.Add(1)
					d.eventf("legacy %s: failed after %v: %v", name, time.Since(start), err)
				}
			}
			d.mu.Lock()
			d.failed[name] = true
			d.mu.Unlock()
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// simple sends a request whose answer is a plain result.
func (s *lsession) simple(method string, params any) error {
	ctx, cancel := context.WithTimeout(s.d.ctx, 10*time.Second)
	defer cancel()
	id := s.n.Add(1)
	resp, err := s.d.post(ctx, s.id, map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK || !bytes.Contains(b, []byte(`"result"`)) {
		return fmt.Errorf("%s: HTTP %d: %s", method, resp.StatusCode, bytes.TrimSpace(b))
	}
	return nil
}

// provision calls the tool and answers its two live questions with POSTs
// of their own (round robin sends them anywhere).
func (s *lsession) provision(name string) error {
	ctx, cancel := context.WithTimeout(s.d.ctx, legacyCallTimeout)
	defer cancel()
	id := s.n.Add(1)
	resp, err := s.d.post(ctx, s.id, map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call",
		"params": map[string]any{"name": "provision", "arguments": map[string]any{"name": name}}})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("tools/call: HTTP %d", resp.StatusCode)
	}
	want := fmt.Sprint(id)
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 4<<20))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data:")
		if !ok {
			continue
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Message string `json:"message"`
			} `json:"params"`
			Result *struct {
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
				IsError bool `json:"isError"`
			} `json:"result"`
			Error json.RawMessage `json:"error"`
		}
		if json.Unmarshal([]byte(strings.TrimSpace(data)), &m) != nil {
			continue
		}
		switch {
		case m.Method == "elicitation/create":
			content := map[string]any{"gib": 20}
			if strings.HasPrefix(m.Params.Message, "Which engine") {
				content = map[string]any{"engine": "postgres", "region": "eu-west-1"}
			}
			ans, err := s.d.post(ctx, s.id, map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{"action": "accept", "content": content}})
			if err != nil {
				return fmt.Errorf("the answer: %w", err)
			}
			ans.Body.Close()
			if ans.StatusCode != http.StatusAccepted {
				return fmt.Errorf("the answer: HTTP %d", ans.StatusCode)
			}
		case string(m.ID) == want && m.Error != nil:
			return fmt.Errorf("tools/call: %s", m.Error)
		case string(m.ID) == want && m.Result != nil:
			wantText := fmt.Sprintf("Provisioned %s: postgres in eu-west-1, 20 GiB.", name)
			if m.Result.IsError || len(m.Result.Content) != 1 || m.Result.Content[0].Text != wantText {
				return fmt.Errorf("tools/call: got %+v, want %q", m.Result, wantText)
			}
			return nil
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := sc.Err(); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("the call's stream: %w", err)
	}
	return errors.New("the call's stream ended without its result")
}

// await waits for the notification of uri on the GET stream.
func (s *lsession) await(uri string) {
	timer := time.NewTimer(10 * time.Second)
	defer timer.Stop()
	for {
		select {
		case got := <-s.notes:
			if got == uri {
				s.d.st().notified.Add(1)
				return
			}
		case <-timer.C:
			s.d.st().notificationsMissing.Add(1)
			s.d.eventf("legacy session %s: no notification for %s", s.id, uri)
			return
		case <-s.d.ctx.Done():
			return
		}
	}
}

// listen keeps the session's GET stream open: through nginx, resumed
// after the last event it got whenever it ends. It closes lost when the
// fleet forgot the session.
func (s *lsession) listen(lost chan<- struct{}) {
	for first := true; !s.d.stop.Load(); first = false {
		if !first {
			s.d.st().resumes.Add(1)
			time.Sleep(100 * time.Millisecond)
		}
		r, _ := http.NewRequestWithContext(s.d.ctx, http.MethodGet, s.d.url, nil)
		r.Header.Set("Accept", "text/event-stream")
		r.Header.Set("Mcp-Session-Id", s.id)
		r.Header.Set("MCP-Protocol-Version", legacyRev)
		if s.lastID != "" {
			r.Header.Set("Last-Event-ID", s.lastID)
		}
		resp, err := s.d.hc.Do(r)
		if err != nil {
			continue
		}
		if resp.StatusCode == http.StatusNotFound {
			resp.Body.Close()
			if !s.d.stop.Load() {
				s.d.st().sessionsLost.Add(1)
				s.d.eventf("legacy session %s: GET 404", s.id)
				close(lost)
			}
			return
		}
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			continue
		}
		s.read(resp.Body)
		resp.Body.Close()
	}
}

// read takes the stream's events until it ends.
func (s *lsession) read(body io.Reader) {
	sc := bufio.NewScanner(io.LimitReader(body, 64<<20))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var id, data string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if id != "" && data != "" {
				if s.seen[id] {
					s.d.st().duplicateEvents.Add(1)
					s.d.eventf("legacy session %s: event %s again", s.id, id)
				}
				s.seen[id] = true
			}
			if id != "" {
				s.lastID = id
			}
			var m struct {
				Method string `json:"method"`
				Params struct {
					URI string `json:"uri"`
				} `json:"params"`
			}
			if data != "" && json.Unmarshal([]byte(data), &m) == nil && m.Method == "notifications/resources/updated" {
				select {
				case s.notes <- m.Params.URI:
				default:
				}
			}
			id, data = "", ""
		case strings.HasPrefix(line, "id:"):
			id = strings.TrimSpace(strings.TrimPrefix(line, "id:"))
		case strings.HasPrefix(line, "data:"):
			data += strings.TrimSpace(strings.TrimPrefix(line, "data:"))
		}
	}
}

// figures is one line per phase that ran sessions, and the totals.
func (d *legacyDriver) figures(phases []string) (lines []string, total *legacyStats) {
	total = &legacyStats{}
	for i := range d.stats {
		s := &d.stats[i]
		if s.calls.Load() == 0 && s.resumes.Load() == 0 {
			continue
		}
		lines = append(lines, fmt.Sprintf("2025 sessions, phase %-32s calls %4d  completed %4d  failed in flight (made again) %3d  slow failures %d  "+
			"answers lost %d  sessions lost %d  GET streams resumed %3d  events seen twice %d  notifications %4d  notifications missing %d",
			phases[i], s.calls.Load(), s.completed.Load(), s.failedInFlight.Load(), s.slowFailures.Load(), s.answersLost.Load(),
			s.sessionsLost.Load(), s.resumes.Load(), s.duplicateEvents.Load(), s.notified.Load(), s.notificationsMissing.Load()))
		for _, p := range []struct{ sum, v *atomic.Int64 }{
			{&total.calls, &s.calls}, {&total.completed, &s.completed}, {&total.failedInFlight, &s.failedInFlight},
			{&total.slowFailures, &s.slowFailures}, {&total.answersLost, &s.answersLost}, {&total.sessionsLost, &s.sessionsLost},
			{&total.resumes, &s.resumes}, {&total.duplicateEvents, &s.duplicateEvents}, {&total.notified, &s.notified},
			{&total.notificationsMissing, &s.notificationsMissing},
		} {
			p.sum.Add(p.v.Load())
		}
	}
	return lines, total
}
