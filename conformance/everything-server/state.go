package main

import (
	"fmt"
	"os"
	"time"

	"github.com/roundtrip-mcp/roundtrip/mcp"
	"github.com/roundtrip-mcp/roundtrip/requeststate"
)

// The SDK seals every requestState the MRTR handlers produce (AES-256-GCM,
// bound to method, target, arguments and audience, with a TTL) and
// verifies it on the way back, so a tampered or foreign state never
// reaches a handler.

// stateOptions builds the sealing configuration from -state-keys (or
// ROUNDTRIP_STATE_KEYS): comma-separated base64url keys, the first seals
// and all verify; and -state-ttl.
func stateOptions(keys string, ttl time.Duration) (mcp.RequestStateOptions, error) {
	var o mcp.RequestStateOptions
	if keys == "" {
		keys = os.Getenv("ROUNDTRIP_STATE_KEYS")
	}
	k, err := requeststate.ParseKeys(keys)
	if err != nil {
		return o, fmt.Errorf("-state-keys: %w", err)
	}
	o.Keys = k
	if ttl < 0 {
		return o, fmt.Errorf("-state-ttl must be positive")
	}
	o.TTL = ttl
	return o, nil
}
