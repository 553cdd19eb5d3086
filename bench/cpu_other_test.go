//go:build !unix

package bench

import "time"

// processCPU is not measured here: benchCalls reports no cpu-ns/op.
func processCPU() time.Duration { return 0 }
