#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance,
# pinned in scripts/tools.sh) against ./conformance/everything-server, one
# dual-era process serving every revision on one endpoint: 2026-07-28 (runs
# 1 and 2) and the legacy sessions' 2025-11-25 (runs 1b and 2b), 2025-06-18
# (2c) and 2025-03-26 (2d):
#
#   1. --requirements 2026-07-28: exactly the frozen set the revision requires.
#      Only required scenarios decide the exit code; extension (tasks-*) and
#      pending scenarios also run but are reported as "Not scored".
#   2. --suite all --spec-version 2026-07-28 with the expected-failures
#      baseline conformance/expected-failures.yml: everything applicable at
#      2026-07-28, including pending scenarios (extensions are never in it).
#      With a baseline, a WARNING counts as a failure, and a listed entry that
#      passes fails the run ("stale baseline").
#   1b. --requirements 2025-11-25: the set 2025-11-25 requires, at its wire
#      (initialize, sessions, server-to-client requests); the not-scored
#      scenarios (server-session-lifecycle, server-sse-polling,
#      json-schema-2020-12) run too.
#   2b. --suite all --spec-version 2025-11-25 with the same baseline: every
#      scenario applicable at 2025-11-25, a WARNING counts as a failure.
#   2c. --suite all --spec-version 2025-06-18, the earlier revision legacy
#      sessions also negotiate, with the same baseline.
#   2d. --suite all --spec-version 2025-03-26 (the suite has one scenario
#      there, server-session-lifecycle: initialize at 2025-03-26, the
#      session's notifications/initialized, DELETE, 404 after), with the same
#      baseline. 2024-11-05 has no scenario in the suite.
#   3. the client: ./conformance/everything-client under
#      `conformance client --requirements 2026-07-28` with the `client:`
#      baseline of the same file (run_client_suite), then scenario by
#      scenario: the 2025-11-25 core ones, the two 2025-03-26 OAuth
#      discovery ones (no protected resource metadata) and the extension
#      ones the client implements.
#   3b. a custom method of the everything-server's own extension
#      (io.roundtrip/echo) called by the official TypeScript SDK's 2.x
#      client, with the extension's notifications (run_ts_custom).
#   4. the HTTP+SSE transport (2024-11-05) against the official TypeScript
#      SDK v1, which the suite brings along, both ways: its
#      SSEClientTransport calling the everything-server's /sse, and
#      mcp.Client falling back against its SSEServerTransport
#      (conformance/interop/sse_test.go, run_ts_sse_interop). `go test`
#      skips them when .tools is not installed yet; here they must run.
#   3c. the Skills extension (SEP-2640): the sep-2640-skills-* server
#      scenarios, at the suite's default version and forced over the
#      2025-11-25 handshake (run_skills), and the sep-2640-client-*
#      client scenarios (in run_client_suite); a SKIPPED check fails
#      them (real_checks). Then the TypeScript SDK's 2.x SkillsClient
#      reads the everything-server's skills (run_ts_skills).
#   5. the MCP Apps extension: examples/apps read by the official
#      TypeScript packages, @modelcontextprotocol/ext-apps and the SDK's
#      2.x client it is built on (pinned in scripts/tools.sh), at
#      2026-07-28 and over the 2025-11-25 handshake
#      (TestOfficialTypeScriptHelpersReadTheApp, run_ts_apps).
#
# Results (checks.json per scenario, full logs, server output) go to
# .tools/runs/<timestamp>/.
#
# Environment:
#   EVERYTHING_SERVER_BIN  run this binary instead of building
#                          ./conformance/everything-server (it must accept
#                          `-http 127.0.0.1:0` and print
#                          `listening on http://HOST:PORT/mcp` as its first
#                          stdout line).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD

SPEC_VERSION=2026-07-28
LEGACY_SPEC_VERSION=2025-11-25 # served by the same binary (docs/design/legacy.md)
OLDER_SPEC_VERSION=2025-06-18  # also negotiated by legacy sessions
OLDEST_SPEC_VERSION=2025-03-26 # and this one (and 2024-11-05, which the suite does not cover)
EXPECTED_FAILURES=conformance/expected-failures.yml
SERVER_START_TIMEOUT=20 # seconds to wait for the "listening on" line
RUN_TIMEOUT=600         # seconds for one whole conformance invocation

# shellcheck source=scripts/tools.sh
source scripts/tools.sh

RUN_DIR="$TOOLS_DIR/runs/$(date -u +%Y%m%dT%H%M%SZ)-$$"
mkdir -p "$RUN_DIR"
echo "conformance: results in ${RUN_DIR#"$ROOT"/}"

strip_ansi() { sed 's/\x1b\[[0-9;]*m//g'; }

# ---------------------------------------------------------------- the server

if [[ -n "${EVERYTHING_SERVER_BIN:-}" ]]; then
  SERVER_BIN=$EVERYTHING_SERVER_BIN
  echo "conformance: using EVERYTHING_SERVER_BIN=$SERVER_BIN (not building)"
else
  SERVER_BIN="$TOOLS_DIR/bin/everything-server"
  echo "conformance: go build ./everything-server (module conformance)"
  mkdir -p "$TOOLS_DIR/bin"
  (cd conformance && go build -o "$SERVER_BIN" ./everything-server)
fi

SERVER_OUT="$RUN_DIR/server.stdout"
SERVER_ERR="$RUN_DIR/server.stderr"
SERVER_PID=

stop_server() {
  [[ -n "$SERVER_PID" ]] || return 0
  if kill -0 "$SERVER_PID" 2>/dev/null; then
    kill "$SERVER_PID" 2>/dev/null || true
    local i
    for i in $(seq 1 50); do # up to 5 s for a graceful exit
      kill -0 "$SERVER_PID" 2>/dev/null || break
      sleep 0.1
    done
    kill -9 "$SERVER_PID" 2>/dev/null || true
  fi
  wait "$SERVER_PID" 2>/dev/null || true
  SERVER_PID=
}
trap stop_server EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

show_server_output() {
  echo "--- server stdout (last 20 lines) ---"
  tail -n 20 "$SERVER_OUT" 2>/dev/null || true
  echo "--- server stderr (last 40 lines) ---"
  tail -n 40 "$SERVER_ERR" 2>/dev/null || true
}

"$SERVER_BIN" -http 127.0.0.1:0 >"$SERVER_OUT" 2>"$SERVER_ERR" &
SERVER_PID=$!

URL=
deadline=$((SECONDS + SERVER_START_TIMEOUT))
while [[ $SECONDS -lt $deadline ]]; do
  line=$(head -n 1 "$SERVER_OUT" 2>/dev/null || true)
  if [[ "$line" =~ ^listening\ on\ (http://[^[:space:]]+) ]]; then
    URL=${BASH_REMATCH[1]}
    break
  fi
  if ! kill -0 "$SERVER_PID" 2>/dev/null; then
    echo "conformance: everything-server exited before it was listening" >&2
    show_server_output >&2
    exit 1
  fi
  sleep 0.1
done
if [[ -z "$URL" ]]; then
  echo "conformance: no 'listening on http://...' line from everything-server within ${SERVER_START_TIMEOUT}s" >&2
  show_server_output >&2
  exit 1
fi
echo "conformance: everything-server (pid $SERVER_PID) listening on $URL"

# ------------------------------------------------------------------ the runs

failed=()

# failing_checks DIR [SKIP...]: one line per FAILURE/WARNING check in
# DIR/*/checks.json, except for the scenarios named in SKIP (the suite prints
# only per-scenario counts when it runs many scenarios).
failing_checks() {
  "$NODE22" - "$@" <<'JS'
const fs = require("fs"), path = require("path");
const [dir, ...skipList] = process.argv.slice(2);
const skip = new Set(skipList);
let dirs = [];
try { dirs = fs.readdirSync(dir).sort(); } catch { process.exit(0); }
for (const d of dirs) {
  let checks;
  try { checks = JSON.parse(fs.readFileSync(path.join(dir, d, "checks.json"), "utf8")); } catch { continue; }
  const scenario = d.replace(/^server-/, "").replace(/-\d{4}-\d{2}-\d{2}T[\d-]+Z$/, "");
  for (const c of checks) {
    if (skip.has(scenario) || (c.status !== "FAILURE" && c.status !== "WARNING")) continue;
    const msg = String(c.errorMessage ?? c.description ?? "").replace(/\s+/g, " ");
    console.log(`${scenario}: [${c.id}] ${c.status}: ${msg.length > 300 ? msg.slice(0, 300) + "..." : msg}`);
  }
}
JS
}

# run_suite NAME ARGS...: one `conformance server` invocation, full output to
# $RUN_DIR/NAME.log and checks.json files under $RUN_DIR/NAME/.
run_suite() {
  local name=$1; shift
  local log="$RUN_DIR/$name.log" rc=0 start=$SECONDS
  local cmd=("$NODE22" "$CONFORMANCE_JS" server --url "$URL" "$@" -o "$RUN_DIR/$name")
  printf '\n---------- conformance: %s ----------\n' "$name"
  echo "\$ conformance server --url $URL $* -o ${RUN_DIR#"$ROOT"/}/$name"
  timeout "$RUN_TIMEOUT" "${cmd[@]}" >"$log" 2>&1 || rc=$?

  # The summary: per-scenario verdicts, totals, not-scored / baseline report.
  # (Everything from "=== SUMMARY ==="; the whole log's tail if it never got there.)
  local summary
  summary=$(strip_ansi <"$log" | awk '/^=== SUMMARY ===/ {p=1} p')
  if [[ -n "$summary" ]]; then
    echo "$summary" | tail -n 200
  else
    strip_ansi <"$log" | tail -n 40
  fi

  if [[ $rc -eq 0 ]]; then
    echo "conformance: $name passed ($((SECONDS - start))s)"
    return 0
  fi
  if [[ $rc -eq 124 ]]; then
    echo "conformance: $name TIMED OUT after ${RUN_TIMEOUT}s"
  else
    echo "conformance: $name FAILED (exit $rc, $((SECONDS - start))s)"
  fi
  echo "--- failing / warning checks (full log: ${log#"$ROOT"/}) ---"
  # Scenarios the requirements run lists as "Not scored" cannot fail it: omit them.
  local not_scored=()
  mapfile -t not_scored < <(strip_ansi <"$log" |
    awk '/^Not scored for / {p=1; next} p && /^  (✓|✗) / {print $2; next} p {p=0}')
  [[ ${#not_scored[@]} -eq 0 ]] || echo "(omitting ${#not_scored[@]} not-scored scenarios)"
  failing_checks "$RUN_DIR/$name" "${not_scored[@]}" | head -n 200 || true
  failed+=("$name")
}

# run_client_suite: the client conformance run. Builds
# ./conformance/everything-client to $TOOLS_DIR/bin and runs
#   conformance client --command <it> --requirements 2026-07-28 \
#     --expected-failures $EXPECTED_FAILURES
# (the suite starts one mock server per scenario and runs the client against
# it). Only the scenarios 2026-07-28 requires are checked against the
# `client:` list of the baseline; the not-scored extension scenarios run for
# visibility. Full output in $RUN_DIR/client.log, checks.json files (and the
# client's stdout/stderr) under $RUN_DIR/client/.
# Then the client's legacy era: the 2025-11-25 core scenarios, one
#   conformance client --command <it> --spec-version 2025-11-25 --scenario S
# each (`--suite core` also holds the auth/* scenarios); a failure or a
# warning in any of them fails the run. Logs in $RUN_DIR/client-2025-11-25-S.log,
# checks under $RUN_DIR/client-2025-11-25/. Then the two 2025-03-26 OAuth
# scenarios (a server without protected resource metadata: authorization
# server metadata at its origin, or the default endpoints there; see
# docs/design/auth.md), at --spec-version 2025-03-26, which the requirements
# run never selects. Last, the extension scenarios the client implements
# (machine-to-machine OAuth grants, enterprise-managed authorization, DPoP),
# one by one.
run_client_suite() {
  local name=client log="$RUN_DIR/client.log" rc=0 start=$SECONDS
  local bin="$TOOLS_DIR/bin/everything-client"
  printf '\n---------- conformance: %s ----------\n' "$name"
  echo "conformance: go build ./everything-client (module conformance)"
  mkdir -p "$TOOLS_DIR/bin"
  (cd conformance && go build -o "$bin" ./everything-client) || return 1
  if [[ "$bin" == *" "* ]]; then
    # The suite splits the command on spaces.
    echo "conformance: the client path must not contain spaces: $bin" >&2
    return 1
  fi
  local cmd=("$NODE22" "$CONFORMANCE_JS" client --command "$bin" --requirements "$SPEC_VERSION"
    --expected-failures "$EXPECTED_FAILURES" -o "$RUN_DIR/$name")
  echo "\$ conformance client --command ${bin#"$ROOT"/} --requirements $SPEC_VERSION --expected-failures $EXPECTED_FAILURES -o ${RUN_DIR#"$ROOT"/}/$name"
  timeout "$RUN_TIMEOUT" "${cmd[@]}" >"$log" 2>&1 || rc=$?

  # Per-scenario verdicts, totals, not-scored list and the baseline report.
  local summary
  summary=$(strip_ansi <"$log" | awk '/^=== SUITE SUMMARY ===/ {p=1} p')
  if [[ -n "$summary" ]]; then
    echo "$summary" | tail -n 200
  else
    strip_ansi <"$log" | tail -n 40
  fi

  local ok=1
  if [[ $rc -eq 0 ]]; then
    echo "conformance: $name passed ($((SECONDS - start))s)"
  else
    if [[ $rc -eq 124 ]]; then
      echo "conformance: $name TIMED OUT after ${RUN_TIMEOUT}s"
    else
      echo "conformance: $name FAILED (exit $rc, $((SECONDS - start))s)"
    fi
    echo "--- failing / warning checks outside auth/* (full log: ${log#"$ROOT"/}) ---"
    local not_scored=()
    mapfile -t not_scored < <(strip_ansi <"$log" |
      awk '/^Not scored for / {p=1; next} p && /^  (✓|✗) / {print $2; next} p {p=0}')
    failing_checks "$RUN_DIR/$name" "${not_scored[@]}" | head -n 200 || true
    ok=0
  fi

  client_scenarios 2025-11-25 initialize tools_call elicitation-sep1034-client-defaults sse-retry || ok=0
  client_scenarios 2025-03-26 auth/2025-03-26-oauth-metadata-backcompat auth/2025-03-26-oauth-endpoint-fallback || ok=0
  # Extension scenarios the client implements (not scored for 2026-07-28,
  # so the requirements run does not hold them to anything): checked one
  # by one so that they stay passing.
  client_scenarios extension auth/client-credentials-basic auth/client-credentials-jwt auth/wif-jwt-bearer auth/enterprise-managed-authorization auth/dpop auth/dpop-nonce || ok=0
  # The Skills extension's (SEP-2640) client scenarios, in a folder of
  # their own so that real_checks holds every check to a pass (a SKIPPED
  # one fails).
  local ext_dir="$RUN_DIR/client-extension"
  RUN_DIR_CLIENT_SUFFIX=-skills
  client_scenarios extension sep-2640-client-no-prefetch sep-2640-client-verify-digest sep-2640-client-verify-size sep-2640-client-verify-frontmatter || ok=0
  RUN_DIR_CLIENT_SUFFIX=
  real_checks "$ext_dir-skills" || ok=0
  [[ $ok -eq 1 ]]
}

# client_scenarios VERSION S...: one `conformance client --scenario S` run
# each at VERSION ("extension": scenarios off the spec timeline, run with
# the suite's default version); a failure or a warning in any of them fails.
client_scenarios() {
  local version=$1 s slog verdict rc ok=1 dir
  shift
  local vflag=(--spec-version "$version")
  [[ $version == extension ]] && vflag=()
  local bin="$TOOLS_DIR/bin/everything-client"
  dir="$RUN_DIR/client-$version${RUN_DIR_CLIENT_SUFFIX:-}"
  printf '\n---------- conformance: client at %s: %s ----------\n' "$version" "$*"
  for s in "$@"; do
    slog="$dir-${s//\//_}.log" rc=0
    echo "\$ conformance client --command ${bin#"$ROOT"/} ${vflag[*]} --scenario $s -o ${dir#"$ROOT"/}"
    timeout "$RUN_TIMEOUT" "$NODE22" "$CONFORMANCE_JS" client --command "$bin" "${vflag[@]}" \
      --scenario "$s" -o "$dir" >"$slog" 2>&1 || rc=$?
    verdict=$(strip_ansi <"$slog" | grep -E '^Passed: ' | tail -n 1)
    echo "$s: ${verdict:-no result} (exit $rc)"
    if [[ $rc -ne 0 || -z "$verdict" || "$verdict" != *" 0 failed, 0 warnings"* ]]; then
      echo "--- $s: failing / warning checks (full log: ${slog#"$ROOT"/}) ---"
      strip_ansi <"$slog" | grep -E '(FAILURE|WARNING|Error|ERROR)' | head -n 40 || true
      ok=0
    fi
  done
  if [[ $ok -eq 1 ]]; then
    echo "conformance: client at $version passed"
  else
    echo "conformance: client at $version FAILED"
  fi
  [[ $ok -eq 1 ]]
}

run_suite requirements --requirements "$SPEC_VERSION"
run_suite suite-all --suite all --spec-version "$SPEC_VERSION" \
  --expected-failures "$EXPECTED_FAILURES"
run_suite legacy-requirements --requirements "$LEGACY_SPEC_VERSION"
run_suite legacy-suite-all --suite all --spec-version "$LEGACY_SPEC_VERSION" \
  --expected-failures "$EXPECTED_FAILURES"
run_suite older-suite-all --suite all --spec-version "$OLDER_SPEC_VERSION" \
  --expected-failures "$EXPECTED_FAILURES"
run_suite oldest-suite-all --suite all --spec-version "$OLDEST_SPEC_VERSION" \
  --expected-failures "$EXPECTED_FAILURES"

# The official TypeScript SDK's v1 client (installed with the suite),
# which speaks the revisions before 2026-07-28, completes every multi
# round-trip tool and the prompt of the everything-server, over Streamable
# HTTP and over stdio: the server asks it with live requests, including
# the questions a low-level handler builds itself.
run_ts_interop() {
  local name=ts-sdk-v1-legacy rc=0 log="$RUN_DIR/ts-sdk-v1-legacy.log"
  local sdk="$TOOLS_DIR/node_modules/@modelcontextprotocol/sdk"
  local script=conformance/interop/ts/legacy-mrtr.mjs
  printf '\n---------- conformance: %s ----------\n' "$name"
  echo "\$ node $script --http $URL   (TypeScript SDK $("$NODE22" -p "require('$sdk/package.json').version"))"
  timeout 120 "$NODE22" "$script" --sdk "$sdk" --http "$URL" >"$log" 2>&1 || rc=$?
  echo "\$ node $script --stdio everything-server"
  timeout 120 "$NODE22" "$script" --sdk "$sdk" --stdio "$SERVER_BIN" >>"$log" 2>&1 || rc=$?
  grep -E '"summary"|"ok":false' "$log" || tail -n 20 "$log"
  [[ $rc -eq 0 ]]
}
run_ts_interop || failed+=("ts-sdk-v1-legacy")

# run_ts_custom: the official TypeScript SDK's 2.x client
# (@modelcontextprotocol/client, pinned in scripts/tools.sh) calls the
# everything-server's custom method io.roundtrip/echo/say under the
# extension it advertises, with its notifications, at 2026-07-28 over
# Streamable HTTP and stdio and over the 2025-11-25 handshake
# (conformance/interop/ts/custom-method.mjs; docs/design/extensions.md).
run_ts_custom() {
  local name=ts-sdk-v2-custom-method rc=0 log="$RUN_DIR/ts-sdk-v2-custom-method.log"
  local modules="$TOOLS_DIR/node_modules" script=conformance/interop/ts/custom-method.mjs
  printf '\n---------- conformance: %s ----------\n' "$name"
  if [[ ! -f "$modules/@modelcontextprotocol/client/package.json" ]]; then
    echo "conformance: $name: @modelcontextprotocol/client is not installed in ${modules#"$ROOT"/} (scripts/tools.sh)"
    return 1
  fi
  echo "\$ node $script --http $URL --stdio everything-server   (client $("$NODE22" -p "require('$modules/@modelcontextprotocol/client/package.json').version"))"
  timeout 60 "$NODE22" "$script" --modules "$modules" --http "$URL" --stdio "$SERVER_BIN" >"$log" 2>&1 || rc=$?
  grep -E '"summary"|"ok":false' "$log" || tail -n 20 "$log"
  [[ $rc -eq 0 ]]
}
run_ts_custom || failed+=("ts-sdk-v2-custom-method")

# real_checks DIR [ALLOWED_SKIP...]: fails unless every checks.json under
# DIR holds at least one check and none is FAILURE, WARNING or SKIPPED
# (but the check ids named): extension scenarios SKIP everything when
# nothing declares the extension, and a skip must not pass for a pass.
real_checks() {
  "$NODE22" - "$@" <<'JS'
const fs = require("fs"), path = require("path");
const [dir, ...allowed] = process.argv.slice(2);
let bad = 0, n = 0, files = 0;
const walk = (d) => { for (const e of fs.readdirSync(d, { withFileTypes: true })) {
  const p = path.join(d, e.name);
  if (e.isDirectory()) walk(p);
  else if (e.name === "checks.json") {
    files++;
    for (const c of JSON.parse(fs.readFileSync(p, "utf8"))) {
      if (c.status === "INFO") continue;
      n++;
      if (c.status === "SUCCESS" || (c.status === "SKIPPED" && allowed.includes(c.id))) continue;
      bad++;
      console.log(`${path.relative(dir, d)}: [${c.id}] ${c.status}: ${String(c.errorMessage ?? "").slice(0, 200)}`);
    }
  }
} };
try { walk(dir); } catch (e) { console.log(String(e)); process.exit(1); }
console.log(`${files} scenario runs, ${n} checks, ${n - bad} passed${allowed.length ? " (or skipped as allowed)" : ""}, ${bad} not`);
process.exit(files > 0 && n > 0 && bad === 0 ? 0 : 1);
JS
}

# run_skills: the Skills extension's (SEP-2640) server scenarios, which
# the suite runs only when named: at the suite's default version and,
# forced, over the 2025-11-25 handshake (where the two caching-attribute
# checks are SKIPPED by the suite: 2025-11-25 has no ttlMs/cacheScope).
# Every check must pass: a SKIPPED one fails the run (real_checks).
run_skills() {
  local s rc ok=1 dir="$RUN_DIR/skills" log="$RUN_DIR/skills.log"
  printf '\n---------- conformance: %s ----------\n' "skills (SEP-2640), server"
  : >"$log"
  for s in sep-2640-skills-enumeration sep-2640-skills-directory sep-2640-skills-manifest; do
    rc=0
    echo "\$ conformance server --url $URL --scenario $s -o ${dir#"$ROOT"/}"
    timeout "$RUN_TIMEOUT" "$NODE22" "$CONFORMANCE_JS" server --url "$URL" --scenario "$s" -o "$dir" >>"$log" 2>&1 || rc=$?
    [[ $rc -eq 0 ]] || { echo "$s: exit $rc"; ok=0; }
    rc=0
    echo "\$ conformance server --url $URL --force --spec-version $LEGACY_SPEC_VERSION --scenario $s -o ${dir#"$ROOT"/}-$LEGACY_SPEC_VERSION"
    timeout "$RUN_TIMEOUT" "$NODE22" "$CONFORMANCE_JS" server --url "$URL" --force --spec-version "$LEGACY_SPEC_VERSION" \
      --scenario "$s" -o "$dir-$LEGACY_SPEC_VERSION" >>"$log" 2>&1 || rc=$?
    [[ $rc -eq 0 ]] || { echo "$s at $LEGACY_SPEC_VERSION: exit $rc"; ok=0; }
  done
  real_checks "$dir" || ok=0
  real_checks "$dir-$LEGACY_SPEC_VERSION" sep-2640-skills-list-cache-attributes sep-2640-skills-get-cache-attributes || ok=0
  [[ $ok -eq 1 ]] && echo "conformance: skills (server) passed" || echo "conformance: skills (server) FAILED (log: ${log#"$ROOT"/})"
  [[ $ok -eq 1 ]]
}
run_skills || failed+=("skills-server")

if ! kill -0 "$SERVER_PID" 2>/dev/null; then
  echo "conformance: everything-server died during the run" >&2
  show_server_output >&2
  failed+=("server-died")
fi
stop_server

run_client_suite || failed+=("client")

# run_ts_sse_interop: the TypeScript SDK's HTTP+SSE client and server
# against ours (conformance/interop/sse_test.go), with the SDK just
# installed; ROUNDTRIP_REQUIRE_TS_SDK turns a missing SDK into a failure.
run_ts_sse_interop() {
  printf '\n---------- conformance: %s ----------\n' "TypeScript SDK over HTTP+SSE (2024-11-05)"
  local start=$SECONDS
  if (cd conformance && TOOLS_DIR="$TOOLS_DIR" ROUNDTRIP_REQUIRE_TS_SDK=1 go test -count=1 -v \
    -run '^(TestTypeScriptSSEClientCallsTools|TestClientFallsBackAgainstATypeScriptSSEServer)$' ./interop); then
    echo "conformance: TypeScript SDK over HTTP+SSE passed ($((SECONDS - start))s)"
    return 0
  fi
  echo "conformance: TypeScript SDK over HTTP+SSE FAILED ($((SECONDS - start))s)"
  return 1
}
run_ts_sse_interop || failed+=("ts-sse-interop")

# run_ts_skills: the official TypeScript SDK's 2.x SkillsClient
# (@modelcontextprotocol/client/ext/skills, TS_CLIENT_VERSION) reads the
# everything-server's skills, every file verified
# (conformance/interop/ts/skills.mjs, driven by
# TestTypeScriptSkillsClientReadsTheSkills); ROUNDTRIP_REQUIRE_TS_SDK turns
# a missing package into a failure.
run_ts_skills() {
  printf '\n---------- conformance: %s ----------\n' "Skills (SEP-2640) read by the TypeScript SkillsClient (client $TS_CLIENT_VERSION)"
  local start=$SECONDS
  if (cd conformance && TOOLS_DIR="$TOOLS_DIR" ROUNDTRIP_REQUIRE_TS_SDK=1 go test -count=1 -v \
    -run '^TestTypeScriptSkillsClientReadsTheSkills$' ./interop); then
    echo "conformance: TypeScript SkillsClient passed ($((SECONDS - start))s)"
    return 0
  fi
  echo "conformance: TypeScript SkillsClient FAILED ($((SECONDS - start))s)"
  return 1
}
run_ts_skills || failed+=("ts-skills")

# run_ts_apps: the MCP Apps example (examples/apps) read by the official
# @modelcontextprotocol/ext-apps helpers and schemas with the SDK's 2.x
# client (examples/apps/ts/read-app.mjs, driven by a Go test that serves
# the example on loopback); ROUNDTRIP_REQUIRE_TS_SDK turns missing
# packages into a failure.
run_ts_apps() {
  printf '\n---------- conformance: %s ----------\n' "MCP Apps (ext-apps $EXT_APPS_VERSION, client $TS_CLIENT_VERSION)"
  local start=$SECONDS
  if TOOLS_DIR="$TOOLS_DIR" ROUNDTRIP_REQUIRE_TS_SDK=1 go test -count=1 -v \
    -run '^TestOfficialTypeScriptHelpersReadTheApp$' ./examples/apps; then
    echo "conformance: MCP Apps passed ($((SECONDS - start))s)"
    return 0
  fi
  echo "conformance: MCP Apps FAILED ($((SECONDS - start))s)"
  return 1
}
run_ts_apps || failed+=("ts-ext-apps")

echo
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "conformance: FAILED: ${failed[*]} (results: ${RUN_DIR#"$ROOT"/})"
  exit 1
fi
echo "conformance: all runs passed (results: ${RUN_DIR#"$ROOT"/})"
