package directory_test

import (
	"context"
	"crypto/sha256"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"agentgw/db"
	"agentgw/directory"
	"agentgw/policy"
	"agentgw/surface"
	"agentgw/wire"

	"mellium.im/xmlstream"
	"mellium.im/xmpp/jid"
	"mellium.im/xmpp/stanza"
)

func openStore(tb testing.TB) *db.Store {
	tb.Helper()
	s, err := db.Open(context.Background(), filepath.Join(tb.TempDir(), "dir.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// populate registers and activates n endpoints e000000@agents.example….
func populate(tb testing.TB, s *db.Store, n int) {
	tb.Helper()
	vs := make([]db.Version, n)
	for i := range vs {
		j := fmt.Sprintf("e%06d@agents.example", i)
		canon := fmt.Sprintf(`{"agent":{"jid":%q,"name":"e%06d","version":"1"},"manifestSpecVersion":"0","tools":[]}`, j, i)
		vs[i] = db.Version{JID: j, Version: "1", Hash: sha256.Sum256([]byte(canon)), Canonical: []byte(canon), Name: fmt.Sprintf("e%06d", i)}
	}
	if err := s.ImportVersions(context.Background(), vs, true); err != nil {
		tb.Fatal(err)
	}
}

func everyone() *policy.Policy {
	return &policy.Policy{Visibility: []policy.Grant{{Principals: []policy.Principal{{Domain: "home.example"}}, AllEndpoints: true}}}
}

func query(t testing.TB, rsm string) wire.Element {
	el, err := wire.Parse(`<query xmlns='http://jabber.org/protocol/disco#items'>` + rsm + `</query>`)
	if err != nil {
		t.Fatal(err)
	}
	return el
}

var alice = jid.MustParse("alice@home.example/phone")

func TestItemsClampAndCount(t *testing.T) {
	s := openStore(t)
	populate(t, s, 120)
	svc := &directory.Service{Store: s, PageMax: 100}
	ctx := context.Background()
	for _, tc := range []struct {
		rsm         string
		items       int
		first, last string
	}{
		{"", 50, "e000000@agents.example", "e000049@agents.example"},
		{`<set xmlns='http://jabber.org/protocol/rsm'><max>1000</max></set>`, 100, "e000000@agents.example", "e000099@agents.example"},
		{`<set xmlns='http://jabber.org/protocol/rsm'><max>10</max><after>e000100@agents.example</after></set>`, 10, "e000101@agents.example", "e000110@agents.example"},
		{`<set xmlns='http://jabber.org/protocol/rsm'><max>10</max><before>e000100@agents.example</before></set>`, 10, "e000090@agents.example", "e000099@agents.example"},
		{`<set xmlns='http://jabber.org/protocol/rsm'><max>10</max><index>115</index></set>`, 5, "e000115@agents.example", "e000119@agents.example"},
		{`<set xmlns='http://jabber.org/protocol/rsm'><max>0</max></set>`, 0, "", ""},
	} {
		res, err := svc.Items(ctx, surface.Request{Type: stanza.GetIQ, Policy: everyone(), From: alice, Payload: query(t, tc.rsm)}, "")
		if err != nil {
			t.Fatalf("%s: %v", tc.rsm, err)
		}
		if len(res.Items) != tc.items || res.Set.Count != 120 {
			t.Errorf("%s: %d items, count %d", tc.rsm, len(res.Items), res.Set.Count)
			continue
		}
		if tc.items > 0 && (res.Set.First != tc.first || res.Set.Last != tc.last) {
			t.Errorf("%s: first %s last %s", tc.rsm, res.Set.First, res.Set.Last)
		}
	}
	for _, bad := range []string{
		`<set xmlns='http://jabber.org/protocol/rsm'><max>-1</max></set>`,
		`<set xmlns='http://jabber.org/protocol/rsm'><max>1</max><max>2</max></set>`,
		`<set xmlns='http://jabber.org/protocol/rsm'><after>a</after><before>b</before></set>`,
		`<set xmlns='http://jabber.org/protocol/rsm'><after/></set>`,
		`<set xmlns='http://jabber.org/protocol/rsm'><frob/></set>`,
		`<set xmlns='http://jabber.org/protocol/rsm'><max><b/></max></set>`,
	} {
		if _, err := svc.Items(ctx, surface.Request{Type: stanza.GetIQ, Policy: everyone(), From: alice, Payload: query(t, bad)}, ""); !errors.Is(err, surface.ErrBadRequest) {
			t.Errorf("%s: err = %v, want bad-request", bad, err)
		}
	}
}

// BenchmarkItemsPage measures one 50-item directory page, from the parsed
// request to the response tokens, from the middle of a directory of n
// endpoints; p50 is reported beside ns/op.
func BenchmarkItemsPage(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("endpoints=%d", n), func(b *testing.B) {
			s := openStore(b)
			populate(b, s, n)
			svc := &directory.Service{Store: s, PageMax: 100}
			q := query(b, fmt.Sprintf(`<set xmlns='http://jabber.org/protocol/rsm'><max>50</max><after>e%06d@agents.example</after></set>`, n/2))
			pol := everyone()
			ctx := context.Background()
			samples := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for b.Loop() {
				t0 := time.Now()
				res, err := svc.Items(ctx, surface.Request{Type: stanza.GetIQ, Policy: pol, From: alice, Payload: q}, "")
				if err != nil || len(res.Items) != 50 {
					b.Fatalf("page: %v, %d items", err, len(res.Items))
				}
				// Encode as the gateway does, through an XML encoder.
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
			b.ReportMetric(float64(samples[len(samples)/2].Microseconds()), "p50-µs")
		})
	}
}

// TestEndpointInfoColdStart: cold_start_supported is 1 exactly for the
// endpoints whose configuration says so, 0 for every other.
func TestEndpointInfoColdStart(t *testing.T) {
	svc := &directory.Service{ReplaySeconds: 60, ColdStart: map[string]bool{"mcp@agents.example": true}}
	field := func(jid string) []string {
		info := svc.EndpointInfo(db.Version{JID: jid, Version: "1", Name: "n"}, nil)
		for _, f := range info.Forms[0].Fields {
			if f.Var == "cold_start_supported" {
				return f.Values
			}
		}
		t.Fatalf("%s: no cold_start_supported field", jid)
		return nil
	}
	if got := field("mcp@agents.example"); len(got) != 1 || got[0] != "1" {
		t.Errorf("cold-startable endpoint: %q", got)
	}
	if got := field("weather@agents.example"); len(got) != 1 || got[0] != "0" {
		t.Errorf("other endpoint: %q", got)
	}
}
