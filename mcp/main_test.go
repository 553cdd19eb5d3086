package mcp

import (
	"flag"
	"os"
	"runtime"
	"strconv"
	"testing"
)

// TestMain runs the parallel tests four to a CPU (at least eight at
// once) unless -test.parallel says otherwise: most of them wait on
// sockets, timers and other goroutines, not on the CPU, so the default
// of one per CPU leaves the CPUs idle while they wait. Under -race,
// where a test costs several times the CPU, two to a CPU (at least
// four), so that the tests bounded by a timer do not wait for a CPU.
func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		n := max(8, 4*runtime.GOMAXPROCS(0))
		if raceEnabled {
			n = max(4, 2*runtime.GOMAXPROCS(0))
		}
		flag.Set("test.parallel", strconv.Itoa(n))
	}
	os.Exit(m.Run())
}
