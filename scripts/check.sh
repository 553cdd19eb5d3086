#!/usr/bin/env bash
# The whole test run: gofmt, go vet, go test -race, and the MCP conformance
# suite. `make check` runs this; CI runs `make check` via .ci/run.
# Every step runs even if an earlier one fails; the exit status is non-zero if
# any step failed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# nginx lives in /usr/sbin, which not every shell has on its PATH.
export PATH="$PATH:/usr/sbin"

failed=()

# Quiet by default: the terminal gets one line per step, the notes a step
# leaves (figures, counts) and, for a step that fails, its failures; the
# whole output of every step goes to the log (CHECK_LOG, default
# .check.log at the root). CHECK_VERBOSE=1 prints each step's whole output
# as well.
LOG=${CHECK_LOG:-.check.log}
: >"$LOG"
NOTES=$(mktemp)
export NOTES
trap 'rm -f "$NOTES"' EXIT

section() {
  printf '\n==================== %s ====================\n' "$1"
}

# note LINE: a line for the terminal under the step's own line (a figure,
# a count); it is in the log too.
note() {
  echo "$*" >>"$NOTES"
  echo "$*"
}

# failures FILE: the lines of a step's output that say what failed (test
# names and their messages, compiler and vet positions, panics), or its
# last lines when none does.
failures() {
  local hits
  hits=$(grep -E -e '^(--- FAIL|FAIL|panic:|fatal error:|WARNING: DATA RACE)' \
    -e '^\s+[A-Za-z0-9_./-]+\.go:[0-9]+' -e '^[A-Za-z0-9_./-]+\.go:[0-9]+:[0-9]+' \
    -e '(FAILED|failed|error|Error):' "$1" | head -n 80) || true
  if [[ -n $hits ]]; then
    echo "$hits"
  else
    tail -n 40 "$1"
  fi
}

# step NAME CMD...: run CMD, record NAME as failed if it exits non-zero.
step() {
  local name=$1; shift
  local start=$SECONDS rc=0 out
  out=$(mktemp)
  : >"$NOTES"
  "$@" >"$out" 2>&1 || rc=$?
  { section "$name"; cat "$out"; } >>"$LOG"
  [[ -n ${CHECK_VERBOSE:-} ]] && { section "$name"; cat "$out"; }
  if [[ $rc -eq 0 ]]; then
    printf '%-26s ok      %4ss\n' "$name" "$((SECONDS - start))"
    echo "--> $name: ok ($((SECONDS - start))s)" >>"$LOG"
  else
    printf '%-26s FAILED  %4ss  (exit %s)\n' "$name" "$((SECONDS - start))" "$rc"
    echo "--> $name: FAILED (exit $rc, $((SECONDS - start))s)" >>"$LOG"
    failures "$out" | sed 's/^/    /'
    failed+=("$name")
  fi
  [[ -s $NOTES ]] && sed 's/^/    /' "$NOTES"
  rm -f "$out"
}

gofmt_check() {
  local files
  files=$(find . -type f -name '*.go' \
    -not -path './.git/*' -not -path './.tools/*' \
    -print0 | xargs -0 -r gofmt -l) || {
    echo "gofmt could not check every file (syntax error?):"
    echo "$files"
    return 1
  }
  if [[ -n "$files" ]]; then
    echo "gofmt would reformat these files (run: gofmt -w <file>):"
    echo "$files"
    return 1
  fi
  echo "all Go files are gofmt-clean"
}

# Services the tests use, from Debian packages: redis-server for the shared
# single-use guard, redis-sentinel for the Sentinel groups that the guard's
# and the fleet's failover tests start, nginx (nginx-light) as the load
# balancer in front of the fleet example, chromium (headless) for the
# screenshot test of the MCP Apps example's page. The tests start their own
# instances in temporary directories (Unix socket, loopback ports).
ensure_services() {
  local missing=() wanted=(chromium redis-server redis-sentinel nginx-light)
  command -v chromium >/dev/null 2>&1 || missing+=(chromium)
  command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
  command -v redis-sentinel >/dev/null 2>&1 || missing+=(redis-sentinel)
  command -v nginx >/dev/null 2>&1 || [[ -x /usr/sbin/nginx ]] || missing+=(nginx-light)
  if [[ ${#missing[@]} -gt 0 ]]; then
    if [[ $(id -u) -ne 0 ]]; then
      echo "missing: ${missing[*]}; install these Debian packages"
      return 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    local try ok=""
    for try in 1 2 3; do
      if apt-get install -y -q "${missing[@]}" >/dev/null 2>&1 ||
         { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q "${missing[@]}" >/dev/null 2>&1; }; then
        ok=1
        break
      fi
      sleep $((try * 5))
    done
    if [[ -z $ok ]]; then
      echo "could not install: ${missing[*]}"
      return 1
    fi
  fi
  if [[ ${#missing[@]} -gt 0 ]]; then
    note "Debian packages: ${wanted[*]} (installed now: ${missing[*]})"
  else
    note "Debian packages: ${wanted[*]} (all present)"
  fi
  # The package may start a system nginx on port 80; the tests use their own.
  redis-server --version
  redis-sentinel --version
  nginx -v
  chromium --version 2>/dev/null
}

step "services" ensure_services
step "gofmt" gofmt_check
# The modules of the tree: the library (the main module), the Redis
# adapters, the OpenTelemetry hooks, the command-line client, the
# conformance fixtures and the fleet example (modules of their own, so
# that go-redis and the OpenTelemetry SDK stay out of the library's
# graph), and the bench module (other SDKs).
MODULES=(. redis otel cmd/roundtrip conformance examples/fleet bench)

# in_modules CMD...: run CMD in every module, each one's failures shown.
in_modules() {
  local m rc=0
  for m in "${MODULES[@]}"; do
    (cd "$m" && "$@") || { echo "  (in module $m)"; rc=1; }
  done
  return $rc
}

step "go vet" in_modules go vet ./...
# staticcheck, pinned, run through the module proxy so that it stays out
# of every module's graph.
step "staticcheck" in_modules go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
# Every module but bench (its tests talk to the other SDKs: below).
# The fleet's chaos test writes its figures to FLEET_CHAOS_REPORT.
race_tests() {
  local m rc=0 report
  report=$(mktemp)
  for m in "${MODULES[@]}"; do
    [[ $m == bench ]] && continue
    (cd "$m" && FLEET_CHAOS_REPORT=$report go test -race -count=1 -timeout 20m ./...) || { echo "  (in module $m)"; rc=1; }
  done
  if [[ -s $report ]]; then
    note "fleet under chaos (kill -9, drain, key rotation by reload, Redis restarted empty, Sentinel failover):"
    while IFS= read -r line; do note "  $line"; done <"$report"
  fi
  rm -f "$report"
  return $rc
}
step "go test -race" race_tests
# Allocation guards run without -race (the race detector changes counts).
step "alloc guards" go test -count=1 -run 'Allocs' ./...
step "conformance" bash scripts/conformance.sh
# 2025 sessions through three everything-servers sharing one Redis session
# store behind a plain round-robin nginx: the TypeScript SDK v1 client over
# Streamable HTTP and HTTP+SSE, the conformance suite at 2025-11-25,
# 2025-06-18 and 2025-03-26, GET resumption and kill -9 of the stream
# holder (scripts/conformance-fleet.sh).
step "conformance (fleet)" bash scripts/conformance-fleet.sh
# roundtrip gateway between real peers (cmd/roundtrip's TestGatewayInterop):
# server-everything over stdio, Streamable HTTP and HTTP+SSE,
# server-filesystem, server-memory and a TypeScript SDK v2 server behind it;
# the TypeScript SDK v2 client pinned to 2026-07-28, the v1 client and
# roundtrip's own in front; and three gateways sharing Redis behind nginx
# round robin (TestGatewayFleet). About 15 s.
gateway_interop() {
  # shellcheck source=scripts/tools.sh
  source scripts/tools.sh || return 1
  (cd cmd/roundtrip && TOOLS_DIR="$TOOLS_DIR" ROUNDTRIP_GATEWAY_INTEROP=1 go test -count=1 -v -run '^(TestGatewayInterop|TestGatewayFleet)$' .) |
    grep -E '^(=== RUN|\s*--- |PASS|FAIL|ok)|_test\.go:[0-9]+:|[a-z]\.go:[0-9]+: ' ; return "${PIPESTATUS[0]}"
}
step "interop (gateway)" gateway_interop
# The MCP Apps example's page in headless Chromium (examples/apps): the
# demo host loads it through its sandbox proxy, feeds it the tool result
# over postMessage, relays its tools/call; the test reads the page's DOM
# and checks a screenshot. `go test` skips it without ROUNDTRIP_CHROMIUM.
apps_chromium() {
  local bin out rc=0
  bin=$(command -v chromium) || { echo "chromium not found (the services step installs it)"; return 1; }
  out=$(ROUNDTRIP_CHROMIUM=$bin go test -count=1 -v \
    -run '^TestTheViewRendersTheToolResultInHeadlessChromium$' ./examples/apps 2>&1) || rc=$?
  grep -v 'dbus' <<<"$out" || true
  [[ $rc -eq 0 ]] && grep -q -- '--- PASS: TestTheViewRendersTheToolResultInHeadlessChromium' <<<"$out"
}
step "apps in chromium" apps_chromium
# The documentation site (scripts/docs.sh): build, includes, every page in
# headless Chromium, a planted broken link that must fail, the example count.
step "docs" bash scripts/docs.sh test
# The bench module (its own go.mod, with go-sdk and mcp-go): its tests cross
# the SDKs (every client against every server, both eras) and check that the
# benchmark subjects work; the benchmarks themselves run with `make bench`.
bench_tests() { (cd bench && go test -race -count=1 ./...); }
step "interop (bench module)" bench_tests

total=12
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "FAILED: ${failed[*]}"
  echo "check: $((total - ${#failed[@]})) passed, ${#failed[@]} failed (the whole output: $LOG)"
  { echo "FAILED: ${failed[*]}"; echo "check: $((total - ${#failed[@]})) passed, ${#failed[@]} failed"; } >>"$LOG"
  exit 1
fi
echo "check: $total passed, 0 failed (the whole output: $LOG)"
echo "check: $total passed, 0 failed" >>"$LOG"
