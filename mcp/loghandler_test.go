package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// metaWithLevel is metaJSON asking for logs at level.
func metaWithLevel(level string) string {
	m := metaJSON(testCaps)
	return m[:len(m)-1] + `,"` + metaLogLevel + `":"` + level + `"}`
}

func logTool(s *Server, h slog.Handler, n int) {
	log := slog.New(h)
	s.AddTool(&Tool{Name: "work"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		log.InfoContext(ctx, "starting", "n", n)
		l := log.With("job", "j1").WithGroup("step")
		l.WarnContext(ctx, "slow", "ms", 1500)
		log.ErrorContext(ctx, "failed", slog.Group("err", "code", 7))
		log.Info("no context: nowhere to send it")
		return TextResult("done"), nil
	})
}

// The handler's records reach the client as notifications/message at
// the level the request asked for (_meta logLevel on 2026-07-28), before
// the response, as JSON objects of msg and attributes.
func TestLogHandlerSendsRecordsAtTheRequestedLevel(t *testing.T) {
	t.Parallel()
	s := NewServer(Implementation{Name: "t", Version: "1"}, nil)
	logTool(s, NewLogHandler(&LogHandlerOptions{Logger: "app"}), 1)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":` + metaWithLevel("warning") + `,"name":"work","arguments":{}}}`
	res := post(t, NewHTTPHandler(s, nil), body)
	var got []string
	for _, m := range res.messages[:len(res.messages)-1] {
		var v struct {
			Method string `json:"method"`
			Params struct {
				Level  LoggingLevel    `json:"level"`
				Logger string          `json:"logger"`
				Data   json.RawMessage `json:"data"`
			} `json:"params"`
		}
		if err := json.Unmarshal(m, &v); err != nil || v.Method != notificationMessage {
			t.Fatalf("not a log message: %s", m)
		}
		got = append(got, string(v.Params.Level)+" "+v.Params.Logger+" "+string(v.Params.Data))
	}
	want := []string{
		`warning app {"msg":"slow","job":"j1","step":{"ms":1500}}`,
		`error app {"msg":"failed","err":{"code":7}}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if text(t, res.last(t)) != "done" {
		t.Fatalf("response %s", res.messages[len(res.messages)-1])
	}

	// Without a requested level nothing is sent, and the answer stays a
	// plain JSON body.
	res = post(t, NewHTTPHandler(s, nil), req(2, MethodToolsCall, `"name":"work","arguments":{}`))
	if len(res.messages) != 1 {
		t.Fatalf("no level asked, yet %d messages", len(res.messages))
	}
}

// On a session the level is the one logging/setLevel set.
func TestLogHandlerFollowsSetLevelOnASession(t *testing.T) {
	t.Parallel()
	s := NewServer(Implementation{Name: "t", Version: "1"}, nil)
	logTool(s, NewLogHandler(nil), 1)
	c := newStreamClient(t, s)
	c.send(legacyInitLine(`{}`))
	c.next()
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	c.send(`{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"error"}}`)
	c.next()
	c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"work","arguments":{}}}`)
	n := c.next()
	if n["method"] != notificationMessage || n["params"].(map[string]any)["level"] != "error" {
		t.Fatalf("first message %v", n)
	}
	if r := c.next(); r["id"] != 2.0 {
		t.Fatalf("then %v", r)
	}
}

// A client that does not read never blocks the code that logs: records
// beyond the queue are dropped, the queued ones go out before the
// response, and the client is told how many were dropped.
func TestLogHandlerNeverBlocksOnASlowClient(t *testing.T) {
	t.Parallel()
	const records, queue = 500, 8
	s := NewServer(Implementation{Name: "t", Version: "1"}, nil)
	log := slog.New(NewLogHandler(&LogHandlerOptions{QueueSize: queue}))
	logged := make(chan struct{})
	s.AddTool(&Tool{Name: "chatty"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		for i := range records {
			log.DebugContext(ctx, "line", "i", i)
		}
		close(logged)
		return TextResult("done"), nil
	})
	// Unbuffered pipes (io.Pipe: every write waits for its reader), so
	// that a client that does not read holds up the server's writes.
	sr, cw := io.Pipe()
	cr, sw := io.Pipe()
	defer cw.Close()
	defer cr.Close()
	go func() { _ = s.ServeStream(context.Background(), sr, sw, nil); sw.Close() }()
	line := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":` + metaWithLevel("debug") + `,"name":"chatty","arguments":{}}}` + "\n"
	if _, err := cw.Write([]byte(line)); err != nil {
		t.Fatal(err)
	}
	// Nobody reads the connection while the handler logs.
	select {
	case <-logged:
	case <-time.After(10 * time.Second):
		t.Fatal("the handler is blocked by its logging")
	}
	sc := bufio.NewScanner(cr)
	sc.Buffer(nil, 1<<20)
	var lines, dropNotice int
	for sc.Scan() {
		var v struct {
			ID     any                  `json:"id"`
			Method string               `json:"method"`
			Params LoggingMessageParams `json:"params"`
		}
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatal(err)
		}
		if v.ID != nil {
			break
		}
		data, _ := json.Marshal(v.Params.Data)
		if strings.Contains(string(data), "dropped") {
			if dropNotice = lines; !strings.Contains(string(data), itoa(records-lines)+" log messages") {
				t.Fatalf("drop notice %s after %d lines", data, lines)
			}
			continue
		}
		lines++
	}
	if lines == 0 || lines > queue+1 || dropNotice != lines {
		t.Fatalf("%d log lines (queue %d), drop notice after %d", lines, queue, dropNotice)
	}
}

// mcpLevel maps slog's levels onto the protocol's eight.
func TestSlogLevelsMapOntoProtocolLevels(t *testing.T) {
	t.Parallel()
	for l, want := range map[slog.Level]LoggingLevel{
		slog.LevelDebug - 4: LevelDebug, slog.LevelDebug: LevelDebug, slog.LevelInfo: LevelInfo,
		slog.LevelInfo + 2: LevelNotice, slog.LevelWarn: LevelWarning, slog.LevelError: LevelError,
		slog.LevelError + 4: LevelCritical, slog.LevelError + 8: LevelAlert, slog.LevelError + 12: LevelEmergency,
	} {
		if got := mcpLevel(l); got != want {
			t.Errorf("%v: %s, want %s", l, got, want)
		}
	}
}
