package compstream

import (
	"context"
	"sync/atomic"
	"time"
)

// Idle is the stream's clock of inbound stanzas: when the last came in,
// for the keepalive and for the release of memory when the stream is
// quiet. The zero Idle is ready to use, and safe from any goroutine.
type Idle struct{ last atomic.Int64 }

// Touch records a stanza in now.
func (i *Idle) Touch() { i.last.Store(time.Now().UnixNano()) }

// Last is when the last stanza came in (Touch).
func (i *Idle) Last() time.Time { return time.Unix(0, i.last.Load()) }

// ReleaseWhenIdle calls release (ReleaseMemory, after whatever the
// gateway drops first) once no stanza has come in for quiet, and again
// after each later burst of traffic, until ctx ends. The runtime alone
// keeps up to a heap goal's worth of freed pages (at least 4 MB) resident
// for reuse, which for an appliance that idles most of the time is most
// of its anonymous memory. The cost is one collection of a small heap per
// quiet spell.
func (i *Idle) ReleaseWhenIdle(ctx context.Context, quiet time.Duration, release func()) {
	tick := time.NewTicker(quiet / 2)
	defer tick.Stop()
	i.releaseOnTicks(ctx, tick.C, time.Now, quiet, release)
}

// releaseOnTicks is ReleaseWhenIdle's loop: at each tick it calls release
// if no stanza has come in for quiet by now() and none since the last
// release. The test gives its own ticks and clock.
func (i *Idle) releaseOnTicks(ctx context.Context, ticks <-chan time.Time, now func() time.Time, quiet time.Duration, release func()) {
	released := int64(0) // i.last when memory was last released
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticks:
		}
		last := i.last.Load()
		if last == released || now().Sub(time.Unix(0, last)) < quiet {
			continue
		}
		release()
		released = last
	}
}
