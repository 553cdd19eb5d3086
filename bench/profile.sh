#!/usr/bin/env bash
# Profiles of roundtrip in the side-by-side benchmarks, for
# docs/performance.md: CPU and allocations of the HTTP tools/call, CPU of
# the 1 MiB payload and of the pipe call. Writes the pprof text reports to
# results/profile-*.txt (the binary profiles stay in a temporary directory).
#
#   cd bench && ./profile.sh
set -euo pipefail
cd "$(dirname "$0")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go test -c -o "$tmp/bench.test" .
run() { # name bench-regexp benchtime extra-flags...
	local name=$1 re=$2 bt=$3
	shift 3
	(cd "$tmp" && ./bench.test -test.run '^$' -test.bench "$re" -test.benchtime "$bt" -test.benchmem "$@") | grep '^Benchmark'
}
report() { # name profile pprof-flags...
	local name=$1 prof=$2
	shift 2
	go tool pprof "$@" "$tmp/bench.test" "$tmp/$prof" 2>/dev/null
}

run cpu '^BenchmarkToolCall$/^subject=roundtrip$' 4s -test.cpuprofile "$tmp/toolcall.cpu" | tee "$tmp/toolcall.bench"
{
	cat "$tmp/toolcall.bench"
	echo
	echo '$ go tool pprof -top -nodecount 40 bench.test toolcall.cpu'
	report x toolcall.cpu -top -nodecount 40
	echo
	echo '$ go tool pprof -top -cum -nodecount 80 bench.test toolcall.cpu'
	report x toolcall.cpu -top -cum -nodecount 80
} > results/profile-toolcall-cpu.txt

run allocs '^BenchmarkToolCall$/^subject=roundtrip$' 20000x -test.memprofile "$tmp/toolcall.mem" -test.memprofilerate 1 | tee "$tmp/allocs.bench"
{
	cat "$tmp/allocs.bench"
	echo '(20000 iterations plus warm-up: divide alloc_objects by 20000 for allocations per call)'
	echo
	echo '$ go tool pprof -sample_index=alloc_objects -top -cum -nodecount 80 bench.test toolcall.mem'
	report x toolcall.mem -sample_index=alloc_objects -top -cum -nodecount 80
} > results/profile-toolcall-allocs.txt

run cpu '^BenchmarkPayload1MiB$/^subject=roundtrip$' 60x -test.cpuprofile "$tmp/1mib.cpu" | tee "$tmp/1mib.bench"
{
	cat "$tmp/1mib.bench"
	echo
	echo '$ go tool pprof -top -cum -nodecount 70 bench.test 1mib.cpu'
	report x 1mib.cpu -top -cum -nodecount 70
} > results/profile-1mib-cpu.txt

run cpu '^BenchmarkPipe$/^subject=roundtrip$' 3s -test.cpuprofile "$tmp/pipe.cpu" | tee "$tmp/pipe.bench"
{
	cat "$tmp/pipe.bench"
	echo
	echo '$ go tool pprof -top -cum -nodecount 70 bench.test pipe.cpu'
	report x pipe.cpu -top -cum -nodecount 70
	echo
	echo '$ go tool pprof -peek runtime.newstack$ bench.test pipe.cpu'
	report x pipe.cpu -peek 'runtime.newstack$'
} > results/profile-pipe-cpu.txt
