package search_test

import (
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"slices"
	"testing"
	"time"

	"agentgw/db"
	"agentgw/policy"
	"agentgw/search"
	"agentgw/surface"
	"agentgw/wire"

	"mellium.im/xmlstream"
	"mellium.im/xmpp/jid"
	"mellium.im/xmpp/stanza"
)

// benchRare is the number of endpoints whose title also says "Météo", at
// every directory size.
const benchRare = 100

// benchStore activates n endpoints a000000…, titled "Agent NNNNNN", every
// (n/benchRare)th "Agent NNNNNN Météo".
func benchStore(b *testing.B, n int) *db.Store {
	b.Helper()
	s := openStore(b)
	vs := make([]db.Version, n)
	for i := range vs {
		title := fmt.Sprintf("Agent %06d", i)
		if i%(n/benchRare) == 0 {
			title += " Météo"
		}
		vs[i] = endpoint(fmt.Sprintf("a%06d", i), fmt.Sprintf("a%06d", i), title)
	}
	start := time.Now()
	if err := s.ImportVersions(context.Background(), vs, true); err != nil {
		b.Fatal(err)
	}
	b.Logf("imported and indexed %d endpoints in %v", n, time.Since(start).Round(time.Millisecond))
	return s
}

// BenchmarkSearch measures one search, from the parsed <query/> to the
// encoded result form, for a 50-item page of matches in directories of 1k,
// 10k and 100k endpoints, and reports the median (p50-µs) beside ns/op:
//
//   - rare: "MÉTÉO", 100 matches at every size, the first page;
//   - common: "agent", which every endpoint matches, a page from the middle
//     (its count is estimated above 500 candidates, so at every size);
//   - short: "06", a two-character query, a page from the middle;
//   - empty: the empty query, a page from the middle (the directory);
//   - scoped: "agent" by a requester granted 100 endpoints;
//   - exact: "a000123", the localpart of one endpoint (a one-item page).
func BenchmarkSearch(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("endpoints=%d", n), func(b *testing.B) {
			s := benchStore(b, n)
			svc := &search.Service{Store: s, PageMax: 100}
			everyone := &policy.Policy{Visibility: []policy.Grant{{Principals: []policy.Principal{{Domain: "home.example"}}, AllEndpoints: true}}}
			var granted []string
			for i := range 100 {
				granted = append(granted, fmt.Sprintf("a%06d@agents.example", i*(n/100)+1))
			}
			scoped := &policy.Policy{Visibility: []policy.Grant{{Principals: []policy.Principal{{JID: "carol@remote.example"}}, Endpoints: granted}}}
			middle := fmt.Sprintf("a%06d@agents.example", n/2)
			for _, bc := range []struct {
				name  string
				pol   *policy.Policy
				nick  string
				after *string
				items int
			}{
				{"rare", everyone, "MÉTÉO", nil, 50},
				{"common", everyone, "agent", &middle, 50},
				{"short", everyone, "06", &middle, 50},
				{"empty", everyone, "", &middle, 50},
				{"scoped", scoped, "agent", nil, 50},
				{"exact", everyone, "a000123", nil, 1},
			} {
				b.Run(bc.name, func(b *testing.B) {
					who := alice
					if bc.pol == scoped {
						who = carol
					}
					q := request(b, search.Query{Nick: bc.nick, RSM: &wire.RSMRequest{Max: ptr(50), After: bc.after}})
					benchSearch(b, svc, bc.pol, who, q, bc.items)
				})
			}
		})
	}
}

// benchSearch runs one search in a loop, encoding each result as the
// gateway does, and reports the median latency.
func benchSearch(b *testing.B, svc *search.Service, pol *policy.Policy, who jid.JID, q wire.Element, items int) {
	ctx := context.Background()
	samples := make([]time.Duration, 0, b.N)
	for b.Loop() {
		t0 := time.Now()
		res, err := svc.Search(ctx, surface.Request{Type: stanza.SetIQ, Policy: pol, From: who, Payload: q})
		if err != nil || len(res.Items) != items {
			b.Fatalf("search: %v, %d items", err, len(res.Items))
		}
		enc := xml.NewEncoder(io.Discard)
		if _, err := xmlstream.Copy(enc, res.TokenReader()); err != nil {
			b.Fatal(err)
		}
		if err := enc.Flush(); err != nil {
			b.Fatal(err)
		}
		samples = append(samples, time.Since(t0))
	}
	slices.Sort(samples)
	b.ReportMetric(float64(samples[len(samples)/2].Nanoseconds())/1e3, "p50-µs")
}
