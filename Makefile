# The one command that runs every test is `make check` (CI runs it via .ci/run).
.DEFAULT_GOAL := check

.PHONY: check conformance demo tools bench docs docs-test

# gofmt, go vet, go test -race and the official MCP conformance suite.
check:
	bash scripts/check.sh

# Only the conformance suite (installs Node 22 + the suite into .tools/ on first use).
conformance:
	bash scripts/conformance.sh

# Install Node 22 and the conformance suite into .tools/.
tools:
	bash scripts/tools.sh

demo:
	go run ./examples/provision

# The documentation site (docs/site, VitePress): npm ci and vitepress build
# into docs/site/.vitepress/dist, a static site (serve that folder).
docs:
	bash scripts/docs.sh build

# Build the site, check its includes, load every page in headless Chromium
# (links, console, requests), prove a planted broken link fails, and count
# the examples that ran.
docs-test:
	bash scripts/docs.sh test

# Side-by-side benchmarks against go-sdk, mcp-go and a raw net/http baseline
# (bench/, its own module; see docs/performance.md): the 2026-07-28 and the
# 2025-11-25 (session) workloads with -count BENCH_COUNT and -benchtime
# BENCH_TIME, then the scale benchmarks (SCALE_N idle sessions and open SSE
# streams) and the bounded loopback load run (LOAD_CALLS calls at 16, 64 and
# 256 clients), once per count each. Writes bench/results/: latest.txt (go
# test -bench output), benchstat.txt, ratios.md (with the targets and
# whether each holds), one PNG chart per group of workloads.
# A quick run: make bench BENCH_COUNT=1 BENCH_TIME=100ms SCALE_N=2000 LOAD_CALLS=2000
# The load run through nginx and 1, 2, 3 fleet instances: scripts/load-fleet.sh.
BENCH_COUNT ?= 6
BENCH_TIME ?= 1s
SCALE_N ?= 10000
LOAD_CALLS ?= 10000
BENCH_TIMED = ^Benchmark(ToolCall|GatewayHop|Payload10KB|Payload1MiB|TwoLegMRTR|Pipe|InMemory|Handler|Parallel|LegacyToolCall|LegacyElicit|LegacyPipe)$$
bench:
	mkdir -p bench/results
	cd bench && bash -o pipefail -c "go test -run '^$$' -bench '$(BENCH_TIMED)' -benchmem -count $(BENCH_COUNT) -benchtime $(BENCH_TIME) -timeout 60m . | tee results/latest.txt"
	cd bench && bash -o pipefail -c "go test -run '^$$' -bench '^Benchmark(Scale|Load)' -count $(BENCH_COUNT) -benchtime 1x -timeout 60m . -scale.n $(SCALE_N) -load.calls $(LOAD_CALLS) | tee -a results/latest.txt"
	cd bench && go tool benchstat -col /subject results/latest.txt | tee results/benchstat.txt
	cd bench && go run ./cmd/ratios results/latest.txt | tee results/ratios.md
	cd bench && go run ./cmd/chart -dir results results/latest.txt
