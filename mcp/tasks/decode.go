package tasks

import (
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// What the client reads of a server's answers about tasks.

func invalidResponse(method string, format string, args ...any) *mcp.InvalidResponseError {
	return &mcp.InvalidResponseError{Method: method, Err: fmt.Errorf(format, args...)}
}

// resultTypeOf reads the resultType of a result that must be complete:
// anything else is an invalid response.
func resultTypeOf(method string, raw []byte) (mcp.ResultType, error) {
	rt := mcp.ResultComplete
	var bad error
	_ = jsonrpc.Fields(raw, func(k, v []byte) error {
		if string(jsonrpc.Key(k)) != "resultType" {
			return nil
		}
		s, ok := jsonString(v)
		if !ok {
			bad = invalidResponse(method, "resultType is not a string")
			return errStop
		}
		rt = mcp.ResultType(s)
		return nil
	})
	switch {
	case bad != nil:
		return "", bad
	case rt == mcp.ResultComplete:
		return rt, nil
	case rt == mcp.ResultInputRequired:
		return "", &mcp.InvalidResponseError{Method: method, Err: mcp.ErrInputRequiredNotAllowed}
	}
	return "", &mcp.InvalidResponseError{Method: method, Err: fmt.Errorf("%w %q", mcp.ErrUnknownResultType, string(rt))}
}

// jsonString decodes a JSON string the way encoding/json does (invalid
// UTF-8 becoming U+FFFD).
func jsonString(raw []byte) (string, bool) {
	s, ok := jsonrpc.String(raw)
	if ok && !utf8.ValidString(s) {
		ok = json.Unmarshal(raw, &s) == nil
	}
	return s, ok
}

// decodeState decodes a task's seed (method tools/call) or a tasks/get
// result into a Task, checking what the client relies on: a taskId
// (equal to id when id is given), a known status, a result object when
// completed, an error object when failed, inputRequests an object.
// Timestamps that do not parse are left zero; a negative pollIntervalMs
// counts as none.
func decodeState(method, id string, raw []byte) (*Task, error) {
	var w struct {
		TaskID         *string         `json:"taskId"`
		Status         string          `json:"status"`
		StatusMessage  json.RawMessage `json:"statusMessage"`
		CreatedAt      json.RawMessage `json:"createdAt"`
		LastUpdatedAt  json.RawMessage `json:"lastUpdatedAt"`
		TTLMs          json.RawMessage `json:"ttlMs"`
		PollIntervalMs json.RawMessage `json:"pollIntervalMs"`
		InputRequests  json.RawMessage `json:"inputRequests"`
		Result         json.RawMessage `json:"result"`
		Error          json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, &mcp.InvalidResponseError{Method: method, Err: err}
	}
	if w.TaskID == nil || *w.TaskID == "" {
		return nil, invalidResponse(method, "task without a taskId")
	}
	if id != "" && *w.TaskID != id {
		return nil, invalidResponse(method, "taskId %q is not the task asked for", *w.TaskID)
	}
	t := &Task{TaskID: *w.TaskID, Status: Status(w.Status)}
	t.StatusMessage, _ = jsonString(w.StatusMessage)
	t.CreatedAt = parseTime(w.CreatedAt)
	t.LastUpdatedAt = parseTime(w.LastUpdatedAt)
	if n, ok := jsonInt(w.TTLMs); ok {
		t.TTLMs = &n
	}
	if n, ok := jsonInt(w.PollIntervalMs); ok && n > 0 {
		t.PollIntervalMs = n
	}
	switch t.Status {
	case Working, Cancelled:
	case InputRequired:
		switch jsonrpc.KindOf(w.InputRequests) {
		case jsonrpc.KindInvalid, jsonrpc.KindNull:
		case jsonrpc.KindObject:
			reqs := map[string]json.RawMessage{}
			err := jsonrpc.Fields(w.InputRequests, func(k, v []byte) error {
				reqs[string(jsonrpc.Key(k))] = json.RawMessage(v)
				return nil
			})
			if err != nil {
				return nil, &mcp.InvalidResponseError{Method: method, Err: err}
			}
			t.InputRequests = reqs
		default:
			return nil, invalidResponse(method, "inputRequests is not an object")
		}
	case Completed:
		if jsonrpc.KindOf(w.Result) != jsonrpc.KindObject {
			return nil, invalidResponse(method, "completed task without a result object")
		}
		t.Result = w.Result
	case Failed:
		e, err := jsonrpc.DecodeError(w.Error)
		if err != nil {
			return nil, invalidResponse(method, "failed task: %v", err)
		}
		t.Error = e
	default:
		return nil, invalidResponse(method, "unknown task status %q", w.Status)
	}
	return t, nil
}

func parseTime(raw []byte) time.Time {
	s, ok := jsonString(raw)
	if !ok {
		return time.Time{}
	}
	tm, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return tm
}

// jsonInt reads an integer that fits in an int64.
func jsonInt(raw []byte) (int64, bool) {
	if jsonrpc.KindOf(raw) != jsonrpc.KindNumber {
		return 0, false
	}
	var n int64
	if json.Unmarshal(raw, &n) != nil {
		return 0, false
	}
	return n, true
}
