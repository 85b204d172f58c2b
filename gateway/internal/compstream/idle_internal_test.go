package compstream

import (
	"context"
	"testing"
	"time"

	"agentgw/internal/testclock"
)

// TestReleaseWhenIdle: memory is released once per quiet spell: not while
// stanzas keep coming, once after they stop, not again while it stays
// quiet, and once more after the next burst. Time is the test's clock,
// and the releaser looks only when the test ticks it: with the real clock,
// a busy machine that stalled the sender made a quiet spell of its own
// (issue 35).
func TestReleaseWhenIdle(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var idle Idle
	clock := testclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	const quiet = 200 * time.Millisecond
	releases := 0 // changed only by the releaser, while tick waits for it
	ticks := make(chan time.Time)
	done := make(chan struct{})
	go func() {
		defer close(done)
		idle.releaseOnTicks(ctx, ticks, clock.Now, quiet, func() { releases++ })
	}()
	// tick moves the clock by d and lets the releaser look; the second
	// send returns only once it has handled the first.
	tick := func(d time.Duration) {
		clock.Advance(d)
		ticks <- clock.Now()
		ticks <- clock.Now()
	}
	touch := func() { idle.last.Store(clock.Now().UnixNano()) }
	// busy: a stanza every quiet/8, for d, the releaser ticking between.
	busy := func(d time.Duration) {
		for elapsed := time.Duration(0); elapsed < d; elapsed += quiet / 8 {
			touch()
			tick(quiet / 8)
		}
	}
	check := func(when string, want int) {
		t.Helper()
		if releases != want {
			t.Fatalf("%s: %d releases, want %d", when, releases, want)
		}
	}

	touch()
	busy(4 * quiet)
	check("while busy", 0)
	tick(quiet - quiet/8 - time.Millisecond)
	check("just short of quiet", 0)
	tick(time.Millisecond)
	check("once quiet", 1)
	for range 10 {
		tick(quiet / 2)
	}
	check("staying quiet", 1)
	busy(2 * quiet)
	check("during the second burst", 1)
	tick(quiet)
	check("after the second burst", 2)
	cancel()
	<-done
}
