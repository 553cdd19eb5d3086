#!/usr/bin/env bash
# The load run through a fleet behind nginx: for 1, 2 and 3 instances
# (FLEET_SIZES), `fleet up` (examples/fleet: redis-server, the instances,
# nginx in front, all on loopback) and then bench's BenchmarkLoad with
# -load.url at nginx's endpoint (the generator refuses any non-loopback
# target). Needs nginx and redis-server. Output: bench/results/load-fleet-N.txt
# per size N (go test -bench lines, Load/clients=C/subject=S, S naming the
# client; the server is always the fleet) and cmd/ratios' load table per
# size on stdout.
#
#   scripts/load-fleet.sh                       # 1, 2, 3 instances, 10000 calls per run
#   FLEET_SIZES="1 4 8" LOAD_CALLS=50000 scripts/load-fleet.sh   # a larger machine
#
# The instances, nginx, redis and the load generator share this machine's
# cores: on 2 cores more instances cannot add throughput (see
# docs/performance.md, "Load").
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
sizes=${FLEET_SIZES:-1 2 3}
calls=${LOAD_CALLS:-10000}
subjects=${LOAD_SUBJECTS:-roundtrip,raw}
count=${BENCH_COUNT:-1}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$root/examples/fleet" && go build -o "$tmp/fleet" .)
(cd "$root/bench" && go test -c -o "$tmp/bench.test" .)
for n in $sizes; do
	out="$root/bench/results/load-fleet-$n.txt"
	mkfifo "$tmp/in.$n"
	# The fleet runs until its standard input ends: the fifo, held open
	# by fd 3 until the run is done.
	"$tmp/fleet" up -instances "$n" < "$tmp/in.$n" > "$tmp/url.$n" 2> "$tmp/fleet.$n.log" &
	pid=$!
	exec 3> "$tmp/in.$n"
	for _ in $(seq 100); do
		[ -s "$tmp/url.$n" ] && break
		sleep 0.1
	done
	url=$(head -n1 "$tmp/url.$n")
	if [ -z "$url" ]; then
		echo "load-fleet: the fleet of $n did not come up:" >&2
		cat "$tmp/fleet.$n.log" >&2
		exec 3>&-
		wait "$pid" || true
		exit 1
	fi
	echo "# fleet of $n instance(s) behind nginx at $url" | tee "$out"
	(cd "$root/bench" && "$tmp/bench.test" -test.run '^$' -test.bench '^BenchmarkLoad' -test.benchtime 1x \
		-test.count "$count" -load.url "$url" -load.subjects "$subjects" -load.calls "$calls") \
		| tee -a "$out"
	exec 3>&-
	wait "$pid" || true
	echo "## fleet of $n"
	(cd "$root/bench" && go run ./cmd/ratios "results/load-fleet-$n.txt" | sed -n '/^| load/,/^$/p')
done
