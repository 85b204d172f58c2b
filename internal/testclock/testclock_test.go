package testclock

import (
	"testing"
	"time"
)

func TestTimersFireAsTheClockPasses(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := New(t0)
	after := c.After(2 * time.Second)
	until := c.Until(t0.Add(time.Second))
	past := c.Until(t0.Add(-time.Second))
	fired := func(ch <-chan time.Time) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	if !fired(past) {
		t.Error("a past instant did not fire at once")
	}
	if fired(after) || fired(until) {
		t.Fatal("fired before the clock moved")
	}
	c.Advance(time.Second)
	if !fired(until) || fired(after) {
		t.Error("after 1s: want only the 1s timer")
	}
	c.Advance(time.Second)
	if !fired(after) {
		t.Error("after 2s: the 2s timer did not fire")
	}
	if got := c.Now(); !got.Equal(t0.Add(2 * time.Second)) {
		t.Errorf("Now = %v", got)
	}
}
