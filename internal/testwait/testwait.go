// Package testwait waits in tests for a condition that another goroutine
// or process brings about.
package testwait

import (
	"testing"
	"time"
)

// Until polls check until it holds, and fails t, naming what it waited
// for, if it does not within the given time. It polls every within/600,
// but at least every 100 ms and at most every 10 ms.
func Until(t testing.TB, within time.Duration, what string, check func() bool) {
	t.Helper()
	poll := min(max(within/600, 10*time.Millisecond), 100*time.Millisecond)
	deadline := time.Now().Add(within)
	for !check() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", within, what)
		}
		time.Sleep(poll)
	}
}
