package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// The MRTR tools keep their progress in requestState as plain JSON. The
// SDK's request-state boundary seals it on the way out (AES-256-GCM,
// bound to tool, arguments and audience, with a TTL) and verifies it on
// the way back, so a tampered or replayed-elsewhere state never reaches
// a handler: there is no hand-made integrity check here.

// flowState is what an MRTR tool keeps between rounds.
type flowState struct {
	Tool string `json:"t"`
	Step int    `json:"s"`
	Name string `json:"n,omitempty"`
}

type stateCodec struct{}

// issue encodes f as the plaintext state of the next round.
func (stateCodec) issue(f flowState) string {
	b, err := json.Marshal(f)
	if err != nil {
		panic(err) // flowState always marshals
	}
	return string(b)
}

// read decodes the (already verified) plaintext state of a retry. It
// returns nil when the request carried no state or a state of another
// flow.
func (stateCodec) read(state, tool string) (*flowState, error) {
	if state == "" {
		return nil, nil
	}
	var f flowState
	if json.Unmarshal([]byte(state), &f) != nil || f.Tool != tool {
		return nil, nil
	}
	return &f, nil
}

// stateOptions builds the sealing configuration from -state-keys (or
// ROUNDTRIP_STATE_KEYS): comma-separated base64url keys, the first seals
// and all verify; and -state-ttl.
func stateOptions(keys string, ttl time.Duration) (mcp.RequestStateOptions, error) {
	var o mcp.RequestStateOptions
	if keys == "" {
		keys = os.Getenv("ROUNDTRIP_STATE_KEYS")
	}
	for _, k := range strings.Split(keys, ",") {
		k = strings.TrimSpace(k)
		if k == "" {
			continue
		}
		b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(k, "="))
		if err != nil {
			return o, fmt.Errorf("state key %q is not base64url: %w", k, err)
		}
		o.Keys = append(o.Keys, b)
	}
	if ttl < 0 {
		return o, fmt.Errorf("-state-ttl must be positive")
	}
	o.TTL = ttl
	return o, nil
}
