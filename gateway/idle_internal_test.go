package gateway

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// TestReleaseWhenIdle: memory is released once per quiet spell: not while
// stanzas keep coming, once after they stop, not again while it stays
// quiet, and once more after the next burst. On a loaded machine a sleep
// of the "busy" sender may itself outlast the quiet time; such a gap is a
// quiet spell of its own, and the test allows the release it earns.
func TestReleaseWhenIdle(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := &session{ctx: ctx}
	s.touch()
	var n atomic.Int32
	const quiet = 200 * time.Millisecond
	go s.releaseWhenIdle(quiet, func() { n.Add(1) })

	// busy touches the session every quiet/8 for d and returns how many
	// gaps between touches reached the quiet time.
	busy := func(d time.Duration) int32 {
		var gaps int32
		last := time.Now()
		for end := last.Add(d); time.Now().Before(end); time.Sleep(quiet / 8) {
			s.touch()
			if now := time.Now(); now.Sub(last) >= quiet {
				gaps++
			}
			last = time.Now()
		}
		return gaps
	}
	allowed := busy(4 * quiet)
	if got := n.Load(); got > allowed {
		t.Fatalf("%d releases while busy, with %d quiet gaps", got, allowed)
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
	waitFor(n.Load() + 1)
	after := n.Load()
	time.Sleep(5 * quiet)
	if got := n.Load(); got != after {
		t.Fatalf("%d releases in one quiet spell", got-after+1)
	}
	gaps := busy(2 * quiet)
	if got := n.Load(); got > after+gaps {
		t.Fatalf("%d releases during the second burst, with %d quiet gaps", got-after, gaps)
	}
	waitFor(n.Load() + 1)
}
