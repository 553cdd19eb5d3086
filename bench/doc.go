// Package bench compares roundtrip with the other Go MCP SDKs and with a
// raw net/http + encoding/json baseline, all speaking protocol revision
// 2026-07-28. It is its own module so that the main module never depends
// on another SDK. The benchmarks are in bench_test.go; docs/performance.md
// explains the workloads and holds the latest results.
package bench
