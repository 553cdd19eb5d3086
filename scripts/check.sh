#!/usr/bin/env bash
# The whole test run: gofmt, go vet, go test -race, and the MCP conformance
# suite. `make check` runs this; CI runs `make check` via .ci/run.
# Every step runs even if an earlier one fails; the exit status is non-zero if
# any step failed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

failed=()

section() {
  printf '\n==================== %s ====================\n' "$1"
}

# step NAME CMD...: run CMD, record NAME as failed if it exits non-zero.
step() {
  local name=$1; shift
  section "$name"
  local start=$SECONDS rc=0
  "$@" || rc=$?
  if [[ $rc -eq 0 ]]; then
    echo "--> $name: ok ($((SECONDS - start))s)"
  else
    echo "--> $name: FAILED (exit $rc, $((SECONDS - start))s)"
    failed+=("$name")
  fi
}

gofmt_check() {
  local files
  files=$(find . -type f -name '*.go' \
    -not -path './.git/*' -not -path './.tools/*' -not -path './bench/*' \
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

# Services the tests use: redis-server (Debian package) for the shared
# single-use guard; the tests start their own instance on a Unix socket.
ensure_services() {
  if command -v redis-server >/dev/null 2>&1; then
    redis-server --version
    return 0
  fi
  if [[ $(id -u) -ne 0 ]]; then
    echo "redis-server is missing; install the Debian package redis-server"
    return 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  local try
  for try in 1 2 3; do
    if apt-get install -y -q redis-server >/dev/null 2>&1 ||
       { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q redis-server >/dev/null 2>&1; }; then
      redis-server --version
      return 0
    fi
    sleep $((try * 5))
  done
  echo "could not install redis-server"
  return 1
}

step "services" ensure_services
step "gofmt" gofmt_check
step "go vet" go vet ./...
step "go test -race" go test -race -count=1 -timeout 20m ./...
# Allocation guards run without -race (the race detector changes counts).
step "alloc guards" go test -count=1 -run 'Allocs' ./...
step "conformance" bash scripts/conformance.sh

section "summary"
total=6
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "FAILED: ${failed[*]}"
  echo "check: $((total - ${#failed[@]})) passed, ${#failed[@]} failed"
  exit 1
fi
echo "all checks passed"
echo "check: $total passed, 0 failed"
