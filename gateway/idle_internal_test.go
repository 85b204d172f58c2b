package gateway

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// TestReleaseWhenIdle: memory is released once per quiet spell: not while
// stanzas keep coming, once after they stop, not again while it stays
// quiet, and once more after the next burst.
func TestReleaseWhenIdle(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := &session{ctx: ctx}
	s.touch()
	var n atomic.Int32
	const quiet = 200 * time.Millisecond
	go s.releaseWhenIdle(quiet, func() { n.Add(1) })

	busy := func(d time.Duration) {
		for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(quiet / 8) {
			s.touch()
		}
	}
	busy(4 * quiet)
	if got := n.Load(); got != 0 {
		t.Fatalf("%d releases while busy", got)
	}
	waitFor := func(want int32) {
		t.Helper()
		for end := time.Now().Add(5 * time.Second); n.Load() < want && time.Now().Before(end); {
			time.Sleep(quiet / 4)
		}
		if got := n.Load(); got != want {
			t.Fatalf("%d releases, want %d", got, want)
		}
	}
	waitFor(1)
	time.Sleep(5 * quiet)
	if got := n.Load(); got != 1 {
		t.Fatalf("%d releases in one quiet spell", got)
	}
	busy(2 * quiet)
	waitFor(2)
}
