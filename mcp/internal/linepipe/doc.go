// Package linepipe is the byte-level machinery of the stdio framing
// (one JSON-RPC message a line) that package mcp's server and client
// share: a bounded line reader, and the in-memory pipe behind
// mcp.NewInMemoryTransports. It knows nothing of MCP.
package linepipe
