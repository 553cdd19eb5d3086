package mcp

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
)

// One record per answered request, with its outcome; no argument values
// and no state in the log.
func TestLogRequests(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, nil))
	s := newTestServer(t, &ServerOptions{Middleware: []ServerMiddleware{LogRequests(logger)}})
	h := NewHTTPHandler(s, nil)
	post(t, h, req(1, MethodToolsCall, `"name":"echo","arguments":{"text":"secret-value"}`))
	post(t, h, req(2, MethodToolsCall, `"name":"ask","arguments":{}`))
	post(t, h, req(3, MethodToolsCall, `"name":"nope","arguments":{}`))
	post(t, h, req(4, MethodResourcesRead, `"uri":"test://static"`))

	var recs []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if m["msg"] == "mcp request" {
			recs = append(recs, m)
		}
	}
	if len(recs) != 4 {
		t.Fatalf("%d records:\n%s", len(recs), buf.String())
	}
	want := []struct{ id, target, outcome, level string }{
		{"1", "echo", "ok", "INFO"},
		{"2", "ask", "input_required", "INFO"},
		{"3", "nope", "error", "WARN"},
		{"4", "test://static", "ok", "INFO"},
	}
	for i, w := range want {
		r := recs[i]
		target := r["tool"]
		if target == nil {
			target = r["uri"]
		}
		if r["id"] != w.id || target != w.target || r["outcome"] != w.outcome || r["level"] != w.level || r["protocol"] != LatestProtocolVersion || r["duration"] == nil {
			t.Errorf("record %d: %v", i, r)
		}
	}
	if recs[1]["inputRequests"] != float64(1) {
		t.Errorf("input_required record: %v", recs[1])
	}
	if recs[2]["code"] == nil {
		t.Errorf("error record has no code: %v", recs[2])
	}
	if strings.Contains(buf.String(), "secret-value") || strings.Contains(buf.String(), "requestState") {
		t.Errorf("the log carries arguments or state:\n%s", buf.String())
	}
}
