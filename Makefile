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
# (bench/, its own module; see docs/performance.md). Writes bench/results/:
# latest.txt (go test -bench output), benchstat.txt, ratios.md, chart.png.
# A quick run: make bench BENCH_COUNT=1 BENCH_TIME=200ms
BENCH_COUNT ?= 6
BENCH_TIME ?= 1s
bench:
	mkdir -p bench/results
	cd bench && bash -o pipefail -c "go test -run '^$$' -bench . -benchmem -count $(BENCH_COUNT) -benchtime $(BENCH_TIME) -timeout 60m . | tee results/latest.txt"
	cd bench && go tool benchstat -col /subject results/latest.txt | tee results/benchstat.txt
	cd bench && go run ./cmd/ratios results/latest.txt | tee results/ratios.md
	cd bench && go run ./cmd/chart -o results/chart.png results/latest.txt
