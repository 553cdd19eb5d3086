// Package bench compares roundtrip with the other Go MCP SDKs and with a
// raw net/http + encoding/json baseline: on protocol revision 2026-07-28
// (bench_test.go), on 2025-11-25 sessions (legacy_test.go), at scale
// (scale_test.go: memory per idle session and per open SSE stream) and
// under load (load_test.go: a bounded, loopback-only load run). It is its
// own module so that the main module never depends on another SDK;
// docs/performance.md explains the workloads and holds the latest results.
package bench
