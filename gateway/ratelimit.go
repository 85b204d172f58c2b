package gateway

import (
	"sync"
	"time"
)

// Rate limits: every sender's bare JID has a token bucket for IQ requests,
// as the ProtoXEP's §"Security Considerations" requires for enumeration,
// search, schema retrieval and invocation. A request past the limit is
// answered <resource-constraint/> without any work; hidden, visible and
// nonexistent targets are limited alike.
// The rate and burst come from [gateway] rate_limit and rate_burst.
const (
	// bucketIdle is how long an untouched bucket is kept.
	bucketIdle = time.Minute
)

// limiter is a set of token buckets keyed by sender.
type limiter struct {
	mu        sync.Mutex
	rate      float64
	burst     float64
	buckets   map[string]*bucket
	lastSweep time.Time
}

type bucket struct {
	tokens float64
	last   time.Time
}

// newLimiter returns a limiter; a rate of 0 or less disables it.
func newLimiter(rate, burst float64) *limiter {
	if burst < 1 {
		burst = 1
	}
	return &limiter{rate: rate, burst: burst, buckets: map[string]*bucket{}}
}

// allow takes one token from key's bucket at now.
func (l *limiter) allow(key string, now time.Time) bool {
	if l == nil || l.rate <= 0 {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.lastSweep) > bucketIdle {
		for k, b := range l.buckets {
			if now.Sub(b.last) > bucketIdle {
				delete(l.buckets, k)
			}
		}
		l.lastSweep = now
	}
	b, ok := l.buckets[key]
	if !ok {
		b = &bucket{tokens: l.burst, last: now}
		l.buckets[key] = b
	}
	b.tokens = min(l.burst, b.tokens+now.Sub(b.last).Seconds()*l.rate)
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}
