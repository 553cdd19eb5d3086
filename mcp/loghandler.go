package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"math"
	"strconv"
	"sync"
)

// A slog.Handler that sends a handler's log records to the client of the
// request they are logged for, as notifications/message: the record's
// context says which request (the handler's ctx, or one derived from
// it), and the level is the one that request asked for (_meta logLevel
// on 2026-07-28, logging/setLevel on a session). Records are queued per
// request and sent by a goroutine of the request's, so a slow client
// never blocks the code that logs: when the queue is full a record is
// dropped, and the request's end waits for the queue to drain before
// its response goes out (the notifications belong before it).

// LogHandlerOptions configure NewLogHandler. The zero value is valid.
type LogHandlerOptions struct {
	// Logger is the logger name sent with every message; empty sends
	// none.
	Logger string
	// QueueSize bounds the records waiting to be sent for one request;
	// beyond it a record is dropped, and once the queue is drained the
	// client is told how many were (a warning, when it asked for
	// warnings). Zero means 64.
	QueueSize int
}

// NewLogHandler returns a slog.Handler that sends each record logged with
// the context of a request (slog.Logger.InfoContext(ctx, ...) and the
// like) to that request's client as notifications/message, when the
// client asked for logs at the record's level or above; records without
// a request, or below that level, are discarded (Enabled reports false).
// The message's data is the record as a JSON object: "msg" and the
// attributes, groups nested, without time or level (the level is the
// notification's: slog's Debug, Info, Warn and Error are debug, info,
// warning and error; Info+2 is notice; Error+4, +8, +12 are critical,
// alert and emergency). Combine it with the server's own handler to log
// to both. It never blocks the caller (see LogHandlerOptions.QueueSize).
//
// Deprecated: logging to the client is deprecated in 2026-07-28
// (SEP-2577) and may be removed from a revision after 2027-07-28; it
// still works with every client that asks for logs. New servers should
// log to their own handler (Server.Logger, OpenTelemetry) and report a
// call's progress with ReportProgress.
func NewLogHandler(opts *LogHandlerOptions) slog.Handler {
	h := &logHandler{size: 64}
	if opts != nil {
		h.logger = opts.Logger
		if opts.QueueSize > 0 {
			h.size = opts.QueueSize
		}
	}
	return h
}

type logHandler struct {
	logger string
	size   int
	ops    []logOp // WithAttrs and WithGroup, in order
}

type logOp struct {
	group string
	attrs []slog.Attr
}

// mcpLevel maps a slog level to the protocol's.
func mcpLevel(l slog.Level) LoggingLevel {
	switch {
	case l < slog.LevelInfo:
		return LevelDebug
	case l < slog.LevelInfo+2:
		return LevelInfo
	case l < slog.LevelWarn:
		return LevelNotice
	case l < slog.LevelError:
		return LevelWarning
	case l < slog.LevelError+4:
		return LevelError
	case l < slog.LevelError+8:
		return LevelCritical
	case l < slog.LevelError+12:
		return LevelAlert
	}
	return LevelEmergency
}

// logScope returns the scope of the request ctx belongs to when it wants
// records at level.
func logScope(ctx context.Context, level LoggingLevel) *requestScope {
	if ctx == nil {
		return nil
	}
	sc := scopeFrom(ctx)
	if sc == nil || sc.meta == nil || sc.meta.LogLevel == "" || sc.out == nil || level.rank() < sc.meta.LogLevel.rank() {
		return nil
	}
	return sc
}

func (h *logHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return logScope(ctx, mcpLevel(l)) != nil
}

func (h *logHandler) Handle(ctx context.Context, r slog.Record) error {
	level := mcpLevel(r.Level)
	sc := logScope(ctx, level)
	if sc == nil {
		return nil
	}
	data, err := h.render(ctx, r)
	if err != nil {
		return err
	}
	sc.logQueue(h.size).push(logItem{level: level, logger: h.logger, data: data})
	return nil
}

// render writes the record as a JSON object, without time and level.
func (h *logHandler) render(ctx context.Context, r slog.Record) (json.RawMessage, error) {
	var buf bytes.Buffer
	var jh slog.Handler = slog.NewJSONHandler(&buf, &slog.HandlerOptions{
		Level: slog.Level(math.MinInt),
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && (a.Key == slog.TimeKey || a.Key == slog.LevelKey) {
				return slog.Attr{}
			}
			return a
		},
	})
	for _, op := range h.ops {
		if op.group != "" {
			jh = jh.WithGroup(op.group)
		} else {
			jh = jh.WithAttrs(op.attrs)
		}
	}
	if err := jh.Handle(ctx, r); err != nil {
		return nil, err
	}
	return json.RawMessage(bytes.TrimRight(buf.Bytes(), "\n")), nil
}

func (h *logHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return h
	}
	cp := *h
	cp.ops = append(append([]logOp(nil), h.ops...), logOp{attrs: append([]slog.Attr(nil), attrs...)})
	return &cp
}

func (h *logHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	cp := *h
	cp.ops = append(append([]logOp(nil), h.ops...), logOp{group: name})
	return &cp
}

// ---- the per-request queue ----

type logItem struct {
	level  LoggingLevel
	logger string
	data   json.RawMessage
}

// logQueue holds a request's records until its sender goroutine has sent
// them. The sender starts with the first record and ends when the
// request ends (end) and the queue is empty, or at the first failed
// send (the client went away: the rest is dropped).
type logQueue struct {
	out outbound
	// level is the level the request asked for (for the drop notice).
	level LoggingLevel

	mu      sync.Mutex
	ch      chan logItem
	closed  bool
	dropped int
	done    chan struct{}
}

// logQueue returns the request's queue, making it on first use.
func (sc *requestScope) logQueue(size int) *logQueue {
	if q := sc.logs.Load(); q != nil {
		return q
	}
	q := &logQueue{out: sc.out, level: sc.meta.LogLevel, ch: make(chan logItem, size), done: make(chan struct{})}
	if !sc.logs.CompareAndSwap(nil, q) {
		return sc.logs.Load()
	}
	go q.run()
	return q
}

// endLogs lets what a LogHandler queued for the request go out, before
// its response.
func (sc *requestScope) endLogs() {
	if q := sc.logs.Load(); q != nil {
		q.end()
	}
}

func (q *logQueue) push(it logItem) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return // logged after the response: nowhere to send it
	}
	select {
	case q.ch <- it:
	default:
		q.dropped++
	}
}

func (q *logQueue) run() {
	defer close(q.done)
	failed := false
	for it := range q.ch {
		if failed {
			continue
		}
		if q.out.notify(notificationMessage, &LoggingMessageParams{Level: it.level, Logger: it.logger, Data: it.data}) != nil {
			failed = true
		}
	}
	q.mu.Lock()
	dropped := q.dropped
	q.mu.Unlock()
	if !failed && dropped > 0 && LevelWarning.rank() >= q.level.rank() {
		msg := strconv.Itoa(dropped) + " log messages were dropped: the client did not read them fast enough"
		data, _ := json.Marshal(map[string]string{"msg": msg})
		_ = q.out.notify(notificationMessage, &LoggingMessageParams{Level: LevelWarning, Data: json.RawMessage(data)})
	}
}

// end closes the queue and waits until its records are sent.
func (q *logQueue) end() {
	q.mu.Lock()
	if !q.closed {
		q.closed = true
		close(q.ch)
	}
	q.mu.Unlock()
	<-q.done
}
