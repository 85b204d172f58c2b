package metrics_test

import (
	"testing"
	"time"

	"agentgw/metrics"

	"mellium.im/xmpp/stanza"
)

// TestIQAllocatesNothing: recording an answered IQ, result or error, costs
// no allocation once its series exist: it runs for every stanza.
func TestIQAllocatesNothing(t *testing.T) {
	notFound := stanza.Error{Type: stanza.Cancel, Condition: stanza.ItemNotFound}
	for _, err := range []error{nil, notFound} {
		metrics.IQ("http://jabber.org/protocol/disco#info", err, time.Millisecond)
		if n := testing.AllocsPerRun(100, func() {
			metrics.IQ("http://jabber.org/protocol/disco#info", err, time.Millisecond)
			metrics.IQ("urn:example:unknown", err, -1)
		}); n != 0 {
			t.Errorf("IQ(%v) allocates %.1f times", err, n)
		}
	}
}

// TestIQSeries: a series found once records what IQ records, in the same
// series, with no allocation.
func TestIQSeries(t *testing.T) {
	notFound := stanza.Error{Type: stanza.Cancel, Condition: stanza.ItemNotFound}
	for _, c := range []struct {
		ns, kind, outcome string
		err               error
	}{
		{"urn:xmpp:ping", "ping", "result", nil},
		{"urn:example:made-up", "other", "item-not-found", notFound},
	} {
		s := metrics.IQSeriesOf(c.ns, c.err)
		reqs, durs := metrics.IQRequests.Value(c.kind, c.outcome), metrics.IQDuration.Count(c.kind)
		metrics.IQ(c.ns, c.err, time.Millisecond)
		s.Observe(time.Millisecond)
		if got := metrics.IQRequests.Value(c.kind, c.outcome); got != reqs+2 {
			t.Errorf("%s/%s: %d requests, want %d", c.kind, c.outcome, got, reqs+2)
		}
		if got := metrics.IQDuration.Count(c.kind); got != durs+2 {
			t.Errorf("%s: %d observations, want %d", c.kind, got, durs+2)
		}
		if n := testing.AllocsPerRun(100, func() { s.Observe(time.Millisecond) }); n != 0 {
			t.Errorf("%s: Observe allocates %.1f times", c.kind, n)
		}
	}
}
