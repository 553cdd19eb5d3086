#!/usr/bin/env bash
# The documentation site (docs/site, VitePress; docs/design/site.md):
#
#   bash scripts/docs.sh build   npm ci (pinned by docs/site/package-lock.json)
#                                and vitepress build into docs/site/.vitepress/dist
#   bash scripts/docs.sh test    build, then: the include check (every `<<<`
#                                names a Go file and region that exist), the
#                                browser test (every page in headless Chromium,
#                                every internal link followed), its self-test
#                                (a planted broken link must fail it), and the
#                                example count
#   bash scripts/docs.sh count   only the example count
#
# `make docs` runs build, `make docs-test` and check.sh's "docs" step run test.
# Node 22 is the one scripts/tools.sh installs into .tools/ (reused when
# there). Chromium: CHROMIUM, default /usr/bin/chromium (Debian's chromium).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
SITE=$ROOT/docs/site
DIST=$SITE/.vitepress/dist
EXAMPLES_MIN=25 # the floor the example count must reach

# note LINE: print LINE and, under check.sh (which exports NOTES), leave
# it for the terminal under the step's own line.
note() {
  echo "$*"
  if [[ -n ${NOTES:-} ]]; then echo "$*" >>"$NOTES"; fi
}

use_node() {
  # shellcheck source=scripts/tools.sh
  source scripts/tools.sh
  # npm (the machine's) and everything it starts run on Node 22.
  PATH="$(dirname "$NODE22"):$PATH"
  export PATH
}

build() {
  use_node
  local start=$SECONDS try
  for try in 1 2 3; do
    if (cd "$SITE" && npm ci --no-audit --no-fund --loglevel=error); then break; fi
    [[ $try -lt 3 ]] || { echo "docs: npm ci failed after 3 tries" >&2; return 1; }
    sleep $((try * 5))
  done
  echo "docs: npm ci in $((SECONDS - start))s"
  start=$SECONDS
  rm -rf "$DIST"
  (cd "$SITE" && node node_modules/vitepress/bin/vitepress.js build)
  echo "docs: built $(find "$DIST" -name '*.html' | wc -l) pages into ${DIST#"$ROOT"/} in $((SECONDS - start))s"
}

# browser_test [DIST [--only PAGE]...]: the browser test against a build.
browser_test() {
  (cd "$SITE" && node test/site.test.mjs "${@:-$DIST}")
}

# site_test: the browser test of the build, its summary line noted.
site_test() {
  local out rc=0
  out=$(browser_test 2>&1) || rc=$?
  echo "$out"
  note "$(grep '^site: ' <<<"$out" || echo 'site: the browser test printed no summary')"
  return $rc
}

# self_test: a copy of the build with a link to a page that does not exist
# must fail the browser test, and for that reason.
self_test() {
  local tmp out rc=0
  tmp=$(mktemp -d)
  cp -r "$DIST" "$tmp/dist"
  sed -i 's|</body>|<a href="/guide/no-such-page.html">planted</a></body>|' "$tmp/dist/guide/quickstart.html"
  out=$(browser_test "$tmp/dist" --only /guide/quickstart.html 2>&1) || rc=$?
  rm -rf "$tmp"
  if [[ $rc -eq 0 ]] || ! grep -q 'broken link: /guide/no-such-page.html' <<<"$out"; then
    echo "docs self-test: a planted broken link did not fail the browser test (exit $rc):"
    echo "$out"
    return 1
  fi
  echo "docs self-test: a planted broken link fails the browser test (exit $rc)"
}

# count_examples: the godoc examples with output that ran (go test -v
# prints a PASS line only for those), in every package that has examples,
# whichever module it is in, and the example programs that have a test
# running them (examples/*/main_test.go; those run in the go test step).
count_examples() {
  local d m n godoc=0 programs out
  declare -A pkgs=()
  while read -r d; do
    m=$d
    until [[ -f $m/go.mod ]]; do m=$(dirname "$m"); done
    if [[ $d == "$m" ]]; then pkgs[$m]+=" ."; else pkgs[$m]+=" ./${d#"$m"/}"; fi
  done < <(grep -rlE --include='*_test.go' --exclude-dir=node_modules --exclude-dir=.tools --exclude-dir=bench \
    '^func Example' . | xargs -r -n1 dirname | sort -u)
  for m in "${!pkgs[@]}"; do
    # shellcheck disable=SC2086 # the package list splits on purpose
    out=$(cd "$m" && go test -count=1 -run '^Example' -v ${pkgs[$m]} 2>&1) || { echo "$out"; echo "examples: failed in module $m"; return 1; }
    n=$(grep -c '^--- PASS: Example' <<<"$out" || true)
    godoc=$((godoc + n))
  done
  programs=$(find examples -mindepth 2 -maxdepth 2 -name main_test.go | wc -l)
  note "examples: $((godoc + programs)) ($godoc godoc examples with output, $programs example programs with tests)"
  if [[ $((godoc + programs)) -lt $EXAMPLES_MIN ]]; then
    echo "examples: fewer than $EXAMPLES_MIN"
    return 1
  fi
}

case "${1:-test}" in
  build) build ;;
  test)
    build
    go test -count=1 ./internal/doccheck
    site_test
    self_test
    count_examples
    ;;
  count) count_examples ;;
  *) echo "usage: $0 [build|test|count]" >&2; exit 2 ;;
esac
