package gateway_test

import (
	"agentgw/config"
	"bytes"
	"fmt"
	"slices"
	"testing"
	"time"
)

// BenchmarkEndpointInfo measures the gateway alone: one endpoint disco#info
// from the fake server's socket to the answer on it, p50 reported.
func BenchmarkEndpointInfo(b *testing.B) {
	// Unlimited: at this benchmark's rate the per-domain limit (500/s)
	// answered most requests with <resource-constraint/>, which was then
	// what it measured.
	e := startUnlimited(b)
	register(b, e.store, "a001", "Agent One", true)
	samples := make([]time.Duration, 0, b.N)
	for b.Loop() {
		t0 := time.Now()
		el := e.srv.iq(alice, "a001@"+domain, "get", `<query xmlns='http://jabber.org/protocol/disco#info'/>`)
		samples = append(samples, time.Since(t0))
		if typ, _ := el.AttrValue("type"); typ != "result" {
			b.Fatalf("answered %s", marshalTB(b, el))
		}
	}
	slices.Sort(samples)
	b.ReportMetric(float64(samples[len(samples)/2].Microseconds()), "p50-µs")
}

// BenchmarkFlood measures the gateway's ceiling in one process: the fake
// server keeps 64 endpoint disco#info in flight from 64 senders, sending
// the next as each answer arrives, and counts answers without parsing
// them. It reports answers per second (the two share the machine's cores).
// Every sender asks the same endpoint, so after the first round each
// answer comes from the read loop's memo (memo.go).
func BenchmarkFlood(b *testing.B) { flood(b, 1, 64) }

// BenchmarkFloodSpread is BenchmarkFlood spread as real traffic is: each
// request asks one of 300 endpoints from one of 199 senders, in turn, so
// that a (sender, endpoint) pair comes back only every 59,700 requests and
// no answer comes from the memo (256 entries a stream): every request
// takes the fast path from the start (fastpath.go).
//
//	cd gateway && go test -run XXX -bench 'Flood' -benchtime 50000x -benchmem .
func BenchmarkFloodSpread(b *testing.B) { flood(b, 300, 199) }

// flood keeps 64 endpoint disco#info in flight, each from the next of
// senders senders to the next of endpoints endpoints, and checks the
// first answer to each endpoint.
func flood(b *testing.B, endpoints, senders int) {
	e := startUnlimited(b)
	for i := range endpoints {
		register(b, e.store, fmt.Sprintf("a%03d", i+1), fmt.Sprintf("Agent %d", i+1), true)
	}
	for i := range endpoints {
		el := e.srv.iq(alice, fmt.Sprintf("a%03d@%s", i+1, domain), "get", `<query xmlns='http://jabber.org/protocol/disco#info'/>`)
		if typ, _ := el.AttrValue("type"); typ != "result" {
			b.Fatalf("answered %s", marshalTB(b, el))
		}
	}
	const inFlight = 64
	// One request per step of the cycle: sender i%senders to endpoint
	// i%endpoints, as many as it takes for the pairs to come back.
	var reqs [][]byte
	for i := range max(inFlight, senders*endpoints) {
		reqs = append(reqs, fmt.Appendf(nil, `<iq type='get' from='sender-%03d@home.example/r' to='a%03d@%s' id='f'><query xmlns='http://jabber.org/protocol/disco#info'/></iq>`, i%senders, i%endpoints+1, domain))
	}
	send := func(k int, seq *int) {
		var buf bytes.Buffer
		for range k {
			*seq++
			buf.Write(reqs[*seq%len(reqs)])
		}
		e.srv.conn.SetWriteDeadline(time.Now().Add(30 * time.Second))
		if _, err := e.srv.conn.Write(buf.Bytes()); err != nil {
			b.Fatal(err)
		}
	}
	end := []byte("</iq>")
	buf := make([]byte, 256<<10)
	var carry []byte
	seq := 0
	b.ResetTimer()
	start := time.Now()
	send(min(inFlight, b.N), &seq)
	sent, answered := min(inFlight, b.N), 0
	for answered < b.N {
		e.srv.conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		n, err := e.srv.conn.Read(buf)
		if err != nil {
			b.Fatal(err)
		}
		chunk := append(append([]byte(nil), carry...), buf[:n]...)
		got := bytes.Count(chunk, end) - bytes.Count(carry, end)
		carry = append([]byte(nil), chunk[max(len(chunk)-len(end)+1, 0):]...)
		answered += got
		if more := min(got, b.N-sent); more > 0 {
			send(more, &seq)
			sent += more
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "IQ/s")
}

// startUnlimited is start without the per-sender rate limit.
func startUnlimited(t testing.TB) *env {
	t.Helper()
	// All 64 senders share one domain: without lifting the domain limit
	// most answers were its <resource-constraint/>.
	return startWith(t, func(c *config.Config) { c.RateLimit, c.DomainRateLimit = 0, 0 })
}
