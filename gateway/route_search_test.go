package gateway_test

import (
	"encoding/xml"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"agentgw/search"
	"agentgw/wire"
)

const (
	searchGet  = `<query xmlns='jabber:iq:search'/>`
	searchForm = `<query xmlns='jabber:iq:search'>%s<x xmlns='jabber:x:data' type='submit'>` +
		`<field type='hidden' var='FORM_TYPE'><value>jabber:iq:search</value></field>%s</x></query>`
	rsmMax = `<set xmlns='http://jabber.org/protocol/rsm'><max>%d</max></set>`
)

func nickField(nick string) string {
	return `<field var='nick'><value>` + nick + `</value></field>`
}

// searchResult parses the <query/> of a search answer.
func searchResult(t *testing.T, el wire.Element) search.Result {
	t.Helper()
	if typ, _ := el.AttrValue("type"); typ != "result" {
		t.Fatalf("search answer is not a result: %s", marshal(t, el))
	}
	q, ok := el.Child(search.Name)
	if !ok {
		t.Fatalf("no search query in %s", marshal(t, el))
	}
	res, err := search.ParseResult(q)
	if err != nil {
		t.Fatalf("%v: %s", err, marshal(t, el))
	}
	return res
}

func TestSearchFormAndResults(t *testing.T) {
	e := start(t, "")
	register(t, e.store, "weather", "Weather Agent", true)
	register(t, e.store, "meteo", "Météo Agent", true)
	register(t, e.store, "calendar", "Calendar", true)
	register(t, e.store, "weatherman", "Old Weather", false) // inactive
	for i := 1; i <= 12; i++ {
		register(t, e.store, fmt.Sprintf("a%03d", i), fmt.Sprintf("Agent %d", i), true)
	}

	golden(t, "search-form", marshal(t, e.srv.iq(alice, domain, "get", searchGet)))
	// The spec's example request and answer.
	golden(t, "search-results-form", marshal(t, e.srv.iq(alice, domain, "set", fmt.Sprintf(searchForm, fmt.Sprintf(rsmMax, 50), nickField("weather")))))
	golden(t, "search-results-legacy", marshal(t, e.srv.iq(alice, domain, "set",
		`<query xmlns='jabber:iq:search'><nick>AGENT</nick><set xmlns='http://jabber.org/protocol/rsm'><max>3</max></set></query>`)))
	golden(t, "search-results-empty", marshal(t, e.srv.iq(mall, domain, "set", fmt.Sprintf(searchForm, "", nickField("")))))

	for _, tc := range []struct {
		from, body string
		want       []string
		count      int
	}{
		// Unicode case folding, decomposed input, a substring.
		{alice, fmt.Sprintf(searchForm, "", nickField("MÉTÉO")), []string{"meteo@agents.example"}, 1},
		{alice, fmt.Sprintf(searchForm, "", nickField("me\u0301te\u0301o")), []string{"meteo@agents.example"}, 1},
		{alice, `<query xmlns='jabber:iq:search'><nick>WEATH</nick></query>`, []string{"weather@agents.example"}, 1},
		// The cap is page_max (10): 15 visible, 10 listed.
		{alice, fmt.Sprintf(searchForm, fmt.Sprintf(rsmMax, 500), nickField("")), nil, 15},
		// carol sees a001 and a003 only; the grant of a nonexistent
		// endpoint counts nothing.
		{carol, fmt.Sprintf(searchForm, "", nickField("")), []string{"a001@agents.example", "a003@agents.example"}, 2},
		{carol, `<query xmlns='jabber:iq:search'><nick>agent 3</nick></query>`, []string{"a003@agents.example"}, 1},
		{carol, `<query xmlns='jabber:iq:search'><nick>weather</nick></query>`, nil, 0},
		{mall, `<query xmlns='jabber:iq:search'><nick/></query>`, nil, 0},
	} {
		res := searchResult(t, e.srv.iq(tc.from, domain, "set", tc.body))
		var got []string
		for _, it := range res.Items {
			got = append(got, it.JID)
		}
		if tc.want == nil && tc.count == 15 {
			if len(got) != 10 || res.Set.Count != 15 {
				t.Errorf("capped page: %d items, count %d", len(got), res.Set.Count)
			}
			continue
		}
		if strings.Join(got, " ") != strings.Join(tc.want, " ") || res.Set.Count != tc.count {
			t.Errorf("%s %s: %q count %d, want %q count %d", tc.from, tc.body, got, res.Set.Count, tc.want, tc.count)
		}
	}
}

func TestSearchErrors(t *testing.T) {
	e := start(t, "")
	register(t, e.store, "weather", "Weather Agent", true)
	for _, tc := range []struct{ body, want string }{
		{fmt.Sprintf(searchForm, `<set xmlns='http://jabber.org/protocol/rsm'><max>lots</max></set>`, ""), "bad-request"},
		{`<query xmlns='jabber:iq:search'/>`, "bad-request"},
		{`<query xmlns='jabber:iq:search'><x xmlns='jabber:x:data' type='form'/></query>`, "bad-request"},
		{`<query xmlns='jabber:iq:search'><x xmlns='jabber:x:data' type='submit'><field type='hidden' var='FORM_TYPE'><value>urn:other</value></field></x></query>`, "not-acceptable"},
		{fmt.Sprintf(searchForm, "", `<field var='email'><value>a@b</value></field>`), "not-acceptable"},
		{`<query xmlns='jabber:iq:search'><nick>a</nick><first>b</first></query>`, "not-acceptable"},
	} {
		el := e.srv.iq(alice, domain, "set", tc.body)
		got := marshal(t, el)
		if typ, _ := el.AttrValue("type"); typ != "error" || !strings.Contains(got, "<"+tc.want+" ") {
			t.Errorf("%s: %s, want %s", tc.body, got, tc.want)
		}
	}
	norm := func(el wire.Element) string {
		el.Start.Attr = nil
		return marshal(t, el)
	}
	golden(t, "search-not-acceptable", norm(e.srv.iq(alice, domain, "set", fmt.Sprintf(searchForm, "", `<field var='first'/>`))))
	// Search is served at the gateway only: at an endpoint, hidden,
	// visible or nonexistent, it is service-unavailable.
	want := norm(e.srv.iq(carol, "nobody@"+domain, "get", searchGet))
	if !strings.Contains(want, "service-unavailable") {
		t.Fatalf("search at an endpoint: %s", want)
	}
	for _, to := range []string{"weather@" + domain} {
		for _, from := range []string{alice, carol} {
			if got := norm(e.srv.iq(from, to, "set", `<query xmlns='jabber:iq:search'><nick/></query>`)); got != want {
				t.Errorf("search at %s from %s: %s", to, from, got)
			}
		}
	}
}

// TestSearchGoldenIsTheSpecExample checks the form result golden file
// against the shape of the ProtoXEP's example: a result form with only
// reported and item children, then the set, outside the form.
func TestSearchGoldenIsTheSpecExample(t *testing.T) {
	e := start(t, "")
	register(t, e.store, "weather", "Weather Agent", true)
	el := e.srv.iq(alice, domain, "set", fmt.Sprintf(searchForm, fmt.Sprintf(rsmMax, 50), nickField("weather")))
	q, _ := el.Child(search.Name)
	kids := q.Children()
	if len(kids) != 2 || kids[0].Start.Name != (xml.Name{Space: wire.NSData, Local: "x"}) || kids[1].Start.Name != (xml.Name{Space: wire.NSRSM, Local: "set"}) {
		t.Fatalf("query children: %s", marshal(t, el))
	}
	for _, c := range kids[0].Children() {
		if l := c.Start.Name.Local; l != "reported" && l != "item" {
			t.Errorf("result form has a %s child", l)
		}
	}
}

// BenchmarkSearchAtGateway measures the gateway alone, from the fake
// server's socket to the answer on it, interleaved in one loop: the gateway
// disco#info (the integration benchmark's floor) and searches for one
// endpoint of 300 with the form and with the legacy field, and a full page
// (page_max, 10) with the form. p50 of each is reported.
func BenchmarkSearchAtGateway(b *testing.B) {
	e := start(b, "")
	for i := range 300 {
		register(b, e.store, fmt.Sprintf("agent-%03d", i), fmt.Sprintf("Agent %03d", i), true)
	}
	cases := []struct{ name, typ, payload string }{
		{"disco-info", "get", `<query xmlns='http://jabber.org/protocol/disco#info'/>`},
		{"form-exact", "set", fmt.Sprintf(searchForm, "", nickField("agent-042"))},
		{"legacy-exact", "set", `<query xmlns='jabber:iq:search'><nick>agent-042</nick></query>`},
		{"form-page", "set", fmt.Sprintf(searchForm, fmt.Sprintf(rsmMax, 10), nickField("agent"))},
	}
	samples := make([][]time.Duration, len(cases))
	for b.Loop() {
		for i, c := range cases {
			t0 := time.Now()
			e.srv.iq(alice, domain, c.typ, c.payload)
			samples[i] = append(samples[i], time.Since(t0))
		}
	}
	for i, c := range cases {
		slices.Sort(samples[i])
		b.ReportMetric(float64(samples[i][len(samples[i])/2].Nanoseconds())/1e3, c.name+"-p50-µs")
	}
}
