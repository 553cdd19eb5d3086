package testutil

import (
	"testing"
	"time"
)

// Eventually waits until cond reports true, and fails the test with
// "timed out after TIMEOUT waiting for WHAT" when it has not within
// timeout. It checks cond at once, then again after a pause that starts
// at a millisecond and doubles up to 20ms, so a condition that holds
// soon is seen soon and one that takes long costs few checks. It is for
// the rare state a test cannot be told about (a count another goroutine
// updates, a session the server drops on its own); where the code under
// test can signal, wait on the signal instead. Call it from the test's
// goroutine: it stops the test with FailNow. Inside a testing/synctest
// bubble the pauses are the bubble's fake time.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	pause := time.Millisecond
	for !cond() {
		if !time.Now().Before(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(pause)
		pause = min(2*pause, 20*time.Millisecond)
	}
}
