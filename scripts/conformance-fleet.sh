#!/usr/bin/env bash
# 2025-era sessions in a fleet (issue 22's acceptance): three
# everything-servers sharing one redis-server with -session-store, behind
# nginx doing plain round robin, started by the Go tests of
# conformance/interop/fleet_sessions_test.go:
#   - TestFleetTypeScriptClientCompletesEveryMultiRoundTripTool: the
#     official TypeScript SDK v1 client (conformance/interop/ts/legacy-mrtr.mjs)
#     over Streamable HTTP and over HTTP+SSE through nginx;
#   - TestFleetPassesTheConformanceSuiteThroughRoundRobin: the official
#     conformance suite at 2025-11-25, 2025-06-18 and 2025-03-26 against
#     nginx's URL, with the baseline conformance/expected-failures.yml;
#   - the raw-HTTP ones (any instance serves any request, GET resumed with
#     Last-Event-ID on another instance, kill -9 of the stream holder) and
#     the control without the store, which `go test ./...` also runs.
# Installs the tools first (sourcing scripts/tools.sh); ROUNDTRIP_REQUIRE_TS_SDK
# turns a missing SDK into a failure. The suite's results go to
# .tools/runs/<timestamp>-fleet/.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# nginx lives in /usr/sbin, which not every shell has on its PATH.
export PATH="$PATH:/usr/sbin"

# shellcheck source=scripts/tools.sh
source scripts/tools.sh

RUN_DIR="$TOOLS_DIR/runs/$(date -u +%Y%m%dT%H%M%SZ)-$$-fleet"
mkdir -p "$RUN_DIR"
echo "conformance-fleet: suite results in ${RUN_DIR#"$PWD"/}"
cd conformance
TOOLS_DIR="$TOOLS_DIR" ROUNDTRIP_REQUIRE_TS_SDK=1 FLEET_CONFORMANCE=1 FLEET_CONFORMANCE_DIR="$RUN_DIR" \
  go test -count=1 -timeout 10m -v -run '^TestFleet' ./interop
