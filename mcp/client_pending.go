package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
)

// pendingWire is the JSON form of a PendingCall:
//
//	{"method":"tools/call","name":"provision","arguments":{...},
//	 "inputRequests":{"region":{"method":"elicitation/create","params":{...}}},
//	 "requestState":"...","meta":{"traceparent":"..."}}
type pendingWire struct {
	Method        string                     `json:"method"`
	Name          string                     `json:"name,omitempty"`
	URI           string                     `json:"uri,omitempty"`
	Arguments     json.RawMessage            `json:"arguments,omitempty"`
	InputRequests map[string]json.RawMessage `json:"inputRequests,omitempty"`
	RequestState  json.RawMessage            `json:"requestState,omitempty"`
	Meta          Meta                       `json:"meta,omitempty"`
}

// MarshalJSON writes the call, its input requests as the server sent
// them, and requestState as the exact JSON string received.
func (p *PendingCall) MarshalJSON() ([]byte, error) {
	w := pendingWire{Method: p.Method, Name: p.Name, URI: p.URI, Arguments: p.Arguments, RequestState: p.stateToken(), Meta: p.Meta}
	if len(p.InputRequests) > 0 {
		w.InputRequests = make(map[string]json.RawMessage, len(p.InputRequests))
		for k, r := range p.InputRequests {
			if raw, ok := p.rawRequests[k]; ok {
				w.InputRequests[k] = raw
				continue
			}
			b, err := marshalInputRequest(r)
			if err != nil {
				return nil, fmt.Errorf("mcp: PendingCall input request %q: %w", k, err)
			}
			w.InputRequests[k] = b
		}
	}
	return marshalAppend(nil, &w)
}

// UnmarshalJSON reads what MarshalJSON wrote. Every input request must
// be of a known kind and the method one that can need input.
func (p *PendingCall) UnmarshalJSON(b []byte) error {
	var w pendingWire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	if !isInputRequiredMethod(w.Method) {
		return fmt.Errorf("mcp: PendingCall: %q cannot need input", w.Method)
	}
	*p = PendingCall{Method: w.Method, Name: w.Name, URI: w.URI, Meta: w.Meta}
	if jsonrpc.KindOf(w.Arguments) == jsonrpc.KindObject {
		p.Arguments = w.Arguments
	}
	if len(w.InputRequests) > 0 {
		p.InputRequests = make(map[string]InputRequest, len(w.InputRequests))
		p.rawRequests = w.InputRequests
		for k, raw := range w.InputRequests {
			r, err := decodeKnownInputRequest(raw)
			if err != nil {
				return fmt.Errorf("mcp: PendingCall input request %q: %w", k, err)
			}
			p.InputRequests[k] = r
		}
	}
	if w.RequestState != nil && jsonrpc.KindOf(w.RequestState) != jsonrpc.KindNull {
		s, ok := jsonString(w.RequestState)
		if !ok {
			return errors.New("mcp: PendingCall: requestState is not a string")
		}
		p.RequestState, p.rawState = s, w.RequestState
	}
	return nil
}

// stateToken returns the JSON string to echo: the raw token received
// when it still says RequestState, otherwise RequestState encoded (nil
// when there is none).
func (p *PendingCall) stateToken() []byte {
	if p.rawState != nil {
		if s, ok := jsonString(p.rawState); ok && s == p.RequestState {
			return p.rawState
		}
	}
	if p.RequestState == "" {
		return nil
	}
	return jsonrpc.AppendString(nil, p.RequestState)
}

// jsonString decodes a JSON string the way encoding/json does, invalid
// UTF-8 becoming U+FFFD on every path (jsonrpc.String's fast path keeps
// raw bytes), so that a state reads the same from any of its encodings.
func jsonString(raw []byte) (string, bool) {
	s, ok := jsonrpc.String(raw)
	if ok && !utf8.ValidString(s) {
		ok = json.Unmarshal(raw, &s) == nil
	}
	return s, ok
}
