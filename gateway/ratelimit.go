package gateway

import (
	"sync"
	"time"

	"mellium.im/xmpp/jid"
)

// Rate limits: every sender's bare JID has a token bucket, and so does its
// domain, as the ProtoXEP's §"Security Considerations" requires for
// enumeration, search, schema retrieval and invocation: a thousand
// localparts of one domain share one domain budget. IQ requests, the
// presence the gateway acts on (subscribe, unsubscribe, probe) and
// messages all take a token. An IQ past either limit is answered
// <resource-constraint/> without any work; presence and messages past it
// are dropped unanswered (a bounce would be traffic we were asked not to
// send). Hidden, visible and nonexistent targets are limited alike. The
// gateway's own domain (its keepalive pings) is never limited.
// The rates and bursts come from [gateway] rate_limit and rate_burst (per
// bare JID) and domain_rate_limit and domain_rate_burst (per domain).
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

// allowSender takes a token for a stanza from 'from' at now: first from
// its bare JID's bucket, then from its domain's. A sender over its own
// limit does not spend its domain's budget.
func (g *Gateway) allowSender(from jid.JID, now time.Time) bool {
	return g.allow(g.senderOf(from), now)
}

// sender is a stanza's sender as the rate limits key it, for a caller
// that keys the same sender many times over (the answer memo).
type sender struct {
	self         bool // the gateway's own domain, never limited
	bare, domain string
}

func (g *Gateway) senderOf(from jid.JID) sender {
	if from.Equal(g.domain) {
		return sender{self: true}
	}
	return sender{bare: from.Bare().String(), domain: from.Domainpart()}
}

// allow is allowSender for a sender keyed already.
func (g *Gateway) allow(s sender, now time.Time) bool {
	if s.self {
		return true
	}
	if !g.limiter.allow(s.bare, now) {
		return false
	}
	return g.domainLimiter.allow(s.domain, now)
}
