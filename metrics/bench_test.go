package metrics_test

import (
	"testing"
	"time"

	"agentgw/metrics"

	"mellium.im/xmpp/stanza"
)

// BenchmarkIQ records an answered IQ: a known kind's result, a known
// kind's error and an unknown namespace, as the gateway does per stanza.
func BenchmarkIQ(b *testing.B) {
	// An error value, as the gateway passes it: boxing a stanza.Error in
	// the loop would count the caller's allocation.
	var notFound error = stanza.Error{Type: stanza.Cancel, Condition: stanza.ItemNotFound}
	b.ReportAllocs()
	for b.Loop() {
		metrics.IQ("http://jabber.org/protocol/disco#info", nil, time.Millisecond)
		metrics.IQ("http://jabber.org/protocol/disco#info", notFound, time.Millisecond)
		metrics.IQ("urn:example:unknown", nil, -1)
	}
}
