// Package interop holds tests that build ./conformance/everything-server
// and drive the binary, a separate process, with mcp.Client over stdio and
// Streamable HTTP: every multi round-trip tool and prompt, the round
// limit, parallel calls, a call resumed by another process, and the
// legacy era (2025-11-25) on the same binary. It has no code of its own.
package interop
