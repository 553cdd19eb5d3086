// Command fleet runs one MCP server as a fleet of three processes behind
// nginx, a real load balancer doing plain round robin: no sticky
// sessions, no affinity for any era. A multi round-trip tool
// call still completes, each of its legs served by whichever instance
// nginx picks, because everything a leg needs travels with it in the
// sealed requestState. The instances share two things only: the
// request-state keys (a key file on each machine) and a Redis server (or
// a Sentinel group), which makes each state single-use across the fleet
// (a replayed leg is refused wherever it lands, the identical leg retried
// after a lost answer gets the recorded outcome) and carries change
// notifications between instances (mcp/redisfanout). A 2025-11-25 client
// works through the same round robin too: its session lives in Redis
// (redis/redissessions), so any instance serves any of its requests.
//
//	cd examples/fleet && go run .     # needs nginx and redis-server (Debian packages nginx-light, redis-server)
//
// With no arguments the program is a short demo: it starts redis-server
// on a Unix socket, three instances of itself in serve mode, and nginx in
// front of them, all in a temporary directory; then it calls the tool
// through nginx, shows which instance served each leg, replays one leg,
// and stops everything.
//
// In up mode (fleet up -instances N) it starts redis-server, N instances
// and nginx as the demo does and keeps them up for an outside client
// until standard input ends or SIGINT/SIGTERM, printing nginx's MCP
// endpoint first (scripts/load-fleet.sh loads it).
//
// In serve mode it is one instance of the fleet, the way an operator runs
// it (see docs/design/fleet.md):
//
//	fleet serve -id a -addr 127.0.0.1:8001 -redis redis://127.0.0.1:6379/0 \
//	    -state-key-file /etc/fleet/state.keys -state-ttl 10m -drain-timeout 30s
//	fleet serve -id a -sentinels 10.0.0.1:26379,10.0.0.2:26379 -master mymaster -guard-replicas 1 ...
//
// It serves MCP at /mcp and health at /livez and /readyz, logs JSON to
// stderr, re-reads the key file on SIGHUP (and when it changes), and on
// SIGTERM drains: readiness goes off, new requests get 503 (nginx sends
// them to another instance), the requests in flight finish, then it
// exits.
package main

import (
	"errors"
	"io"
	"log"
	"os"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("fleet: ")
	if err := run(os.Args[1:], os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// run is the program: the demo without arguments, one instance with
// "serve" and its flags.
func run(args []string, out io.Writer) error {
	switch {
	case len(args) == 0:
		self, err := os.Executable()
		if err != nil {
			return err
		}
		return demo(self, out)
	case args[0] == "serve":
		return serve(args[1:], out)
	case args[0] == "up":
		return up(args[1:], os.Stdin, out)
	}
	return errors.New("usage: fleet [up -instances N | serve -id ID -redis URL | -sentinels ADDRS -master NAME ...] (fleet serve -h lists the flags)")
}
