package gateway_test

import (
	"slices"
	"testing"
	"time"
)

// BenchmarkEndpointInfo measures the gateway alone: one endpoint disco#info
// from the fake server's socket to the answer on it, p50 reported.
func BenchmarkEndpointInfo(b *testing.B) {
	e := start(b, "")
	register(b, e.store, "a001", "Agent One", true)
	samples := make([]time.Duration, 0, b.N)
	for b.Loop() {
		t0 := time.Now()
		e.srv.iq(alice, "a001@"+domain, "get", `<query xmlns='http://jabber.org/protocol/disco#info'/>`)
		samples = append(samples, time.Since(t0))
	}
	slices.Sort(samples)
	b.ReportMetric(float64(samples[len(samples)/2].Microseconds()), "p50-µs")
}
