package mcp_test

import (
	"testing"

	"github.com/roundtrip-mcp/roundtrip/mcp"
	"github.com/roundtrip-mcp/roundtrip/mcptest/sessionstoretest"
)

// TestTheMemorySessionStoreKeepsTheContract runs the contract every
// SessionStore keeps (the Redis one runs it too) on the in-process store.
func TestTheMemorySessionStoreKeepsTheContract(t *testing.T) {
	t.Parallel()
	sessionstoretest.Run(t, func(t *testing.T) mcp.SessionStore { return mcp.NewMemorySessionStore() })
}
