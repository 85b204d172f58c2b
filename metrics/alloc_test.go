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
