// Package testclock is a settable clock for tests of timed code (it
// satisfies taskd.Clock): time moves only when the test calls Advance, and
// timers armed with After or Until fire as it passes their instant.
package testclock

import (
	"sync"
	"time"
)

// Clock is a settable clock. The zero value is not usable; use New.
type Clock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []waiter
}

type waiter struct {
	at time.Time
	ch chan time.Time
}

// New returns a clock that reads t until it is advanced.
func New(t time.Time) *Clock { return &Clock{now: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// After returns a channel that receives once the clock has moved d past
// its time now.
func (c *Clock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	at := c.now.Add(d)
	c.mu.Unlock()
	return c.Until(at)
}

// Until returns a channel that receives once the clock reaches at, at once
// if it already has.
func (c *Clock) Until(at time.Time) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if !at.After(c.now) {
		ch <- c.now
		return ch
	}
	c.waiters = append(c.waiters, waiter{at, ch})
	return ch
}

// Advance moves the clock forward by d and fires every timer now due.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if w.at.After(c.now) {
			kept = append(kept, w)
			continue
		}
		w.ch <- c.now
	}
	c.waiters = kept
}
