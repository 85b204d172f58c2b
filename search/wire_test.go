package search_test

import (
	"encoding/xml"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"agentgw/search"
	"agentgw/surface"
	"agentgw/wire"
)

func ptr[T any](v T) *T { return &v }

// roundTrip marshals v, compares it with want, parses it back with parse
// and compares the result with v.
func roundTrip[T interface{ TokenReader() xml.TokenReader }](t *testing.T, name string, v T, want string, parse func(wire.Element) (T, error)) {
	t.Helper()
	got, err := wire.Marshal(v.TokenReader())
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("%s:\n got %s\nwant %s", name, got, want)
		return
	}
	el, err := wire.Parse(got)
	if err != nil {
		t.Fatalf("%s: reparse: %v", name, err)
	}
	back, err := parse(el)
	if err != nil {
		t.Fatalf("%s: parse: %v", name, err)
	}
	if !reflect.DeepEqual(back, v) {
		t.Errorf("%s: round trip gave\n%+v\nwant\n%+v", name, back, v)
	}
}

func TestFieldsRoundTrip(t *testing.T) {
	roundTrip(t, "gateway fields", search.GatewayFields(),
		`<query xmlns='jabber:iq:search'><instructions>Enter a nickname to search for matching agents.</instructions><nick/>`+
			`<x type='form' xmlns='jabber:x:data'><title>Agent Directory Search</title><field type='hidden' var='FORM_TYPE'><value>jabber:iq:search</value></field>`+
			`<field label='Nickname' type='text-single' var='nick'/></x></query>`,
		search.ParseFields)
	roundTrip(t, "legacy only", search.Fields{Legacy: []string{"first", "last"}},
		`<query xmlns='jabber:iq:search'><first/><last/></query>`, search.ParseFields)
}

func TestRequestRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    search.Query
		xml  string
	}{
		{"form", search.Query{Nick: "weather", RSM: &wire.RSMRequest{Max: ptr(50)}},
			`<query xmlns='jabber:iq:search'><set xmlns='http://jabber.org/protocol/rsm'><max>50</max></set>` +
				`<x type='submit' xmlns='jabber:x:data'><field type='hidden' var='FORM_TYPE'><value>jabber:iq:search</value></field><field var='nick'><value>weather</value></field></x></query>`},
		{"form, empty nick", search.Query{},
			`<query xmlns='jabber:iq:search'><x type='submit' xmlns='jabber:x:data'><field type='hidden' var='FORM_TYPE'><value>jabber:iq:search</value></field><field var='nick'><value/></field></x></query>`},
		{"legacy", search.Query{Nick: "Météo & <co>", Legacy: true, RSM: &wire.RSMRequest{Max: ptr(10), After: ptr("a@x")}},
			`<query xmlns='jabber:iq:search'><set xmlns='http://jabber.org/protocol/rsm'><max>10</max><after>a@x</after></set><nick>Météo &amp; &lt;co&gt;</nick></query>`},
		{"legacy, empty nick, last page", search.Query{Legacy: true, RSM: &wire.RSMRequest{Before: ptr("")}},
			`<query xmlns='jabber:iq:search'><set xmlns='http://jabber.org/protocol/rsm'><before/></set><nick/></query>`},
		{"index", search.Query{Nick: "x", Legacy: true, RSM: &wire.RSMRequest{Max: ptr(5), Index: ptr(20)}},
			`<query xmlns='jabber:iq:search'><set xmlns='http://jabber.org/protocol/rsm'><max>5</max><index>20</index></set><nick>x</nick></query>`},
	} {
		roundTrip(t, tc.name, tc.v, tc.xml, search.ParseRequest)
	}
}

func TestResultRoundTrip(t *testing.T) {
	items := []search.Item{{JID: "météo@agents.example", Nick: "Météo Agent"}, {JID: "weather@agents.example", Nick: "Weather <Agent>"}}
	set := &wire.RSMResult{HasItems: true, First: "météo@agents.example", Last: "weather@agents.example", Count: 7}
	const reported = `<reported><field label='Jabber ID' type='jid-single' var='jid'/><field label='Nickname' type='text-single' var='nick'/></reported>`
	for _, tc := range []struct {
		name string
		v    search.Result
		xml  string
	}{
		{"form", search.Result{Items: items, Set: set},
			`<query xmlns='jabber:iq:search'><x type='result' xmlns='jabber:x:data'>` + reported +
				`<item><field var='jid'><value>météo@agents.example</value></field><field var='nick'><value>Météo Agent</value></field></item>` +
				`<item><field var='jid'><value>weather@agents.example</value></field><field var='nick'><value>Weather &lt;Agent&gt;</value></field></item></x>` +
				`<set xmlns='http://jabber.org/protocol/rsm'><first>météo@agents.example</first><last>weather@agents.example</last><count>7</count></set></query>`},
		{"form, empty", search.Result{Set: &wire.RSMResult{}},
			`<query xmlns='jabber:iq:search'><x type='result' xmlns='jabber:x:data'>` + reported + `</x><set xmlns='http://jabber.org/protocol/rsm'><count>0</count></set></query>`},
		{"legacy", search.Result{Legacy: true, Items: items, Set: &wire.RSMResult{HasItems: true, First: items[0].JID, Last: items[1].JID, FirstIndex: ptr(3), Count: 9}},
			`<query xmlns='jabber:iq:search'><item jid='météo@agents.example'><nick>Météo Agent</nick></item><item jid='weather@agents.example'><nick>Weather &lt;Agent&gt;</nick></item>` +
				`<set xmlns='http://jabber.org/protocol/rsm'><first index='3'>météo@agents.example</first><last>weather@agents.example</last><count>9</count></set></query>`},
		{"legacy, empty", search.Result{Legacy: true, Set: &wire.RSMResult{Count: 0}},
			`<query xmlns='jabber:iq:search'><set xmlns='http://jabber.org/protocol/rsm'><count>0</count></set></query>`},
	} {
		roundTrip(t, tc.name, tc.v, tc.xml, search.ParseResult)
	}
}

// TestParseRequest covers what is refused, and with which error, and what
// is accepted beyond what Request writes.
func TestParseRequest(t *testing.T) {
	const (
		ft    = `<field var='FORM_TYPE' type='hidden'><value>jabber:iq:search</value></field>`
		rsm   = `<set xmlns='http://jabber.org/protocol/rsm'><max>5</max></set>`
		query = `<query xmlns='jabber:iq:search'>%s</query>`
	)
	form := func(body string) string { return `<x xmlns='jabber:x:data' type='submit'>` + body + `</x>` }
	for _, tc := range []struct {
		name, body string
		want       error  // nil: accepted
		nick       string // when accepted
		legacy     bool
	}{
		{"spec example", rsm + form(ft+`<field var='nick'><value>weather</value></field>`), nil, "weather", false},
		{"nick field absent", form(ft), nil, "", false},
		{"FORM_TYPE without type", form(`<field var='FORM_TYPE'><value>jabber:iq:search</value></field><field var='nick' type='text-single'><value>w</value></field>`), nil, "w", false},
		{"legacy nick", `<nick>WEATH</nick>`, nil, "WEATH", true},
		{"legacy empty nick", `<nick/>` + rsm, nil, "", true},
		{"extension ignored", `<nick>w</nick><x xmlns='urn:example:ext'/>`, nil, "w", true},

		{"no criterion", ``, surface.ErrBadRequest, "", false},
		{"only a set", rsm, surface.ErrBadRequest, "", false},
		{"form and legacy", `<nick>a</nick>` + form(ft), surface.ErrBadRequest, "", false},
		{"two forms", form(ft) + form(ft), surface.ErrBadRequest, "", false},
		{"two nicks", `<nick>a</nick><nick>b</nick>`, surface.ErrBadRequest, "", false},
		{"markup in nick", `<nick><b/></nick>`, surface.ErrBadRequest, "", false},
		{"form type form", `<x xmlns='jabber:x:data' type='form'>` + ft + `</x>`, surface.ErrBadRequest, "", false},
		{"form type cancel", `<x xmlns='jabber:x:data' type='cancel'/>`, surface.ErrBadRequest, "", false},
		{"form without type", `<x xmlns='jabber:x:data'>` + ft + `</x>`, surface.ErrBadRequest, "", false},
		{"missing FORM_TYPE", form(`<field var='nick'><value>w</value></field>`), surface.ErrBadRequest, "", false},
		{"FORM_TYPE twice", form(ft + ft), surface.ErrBadRequest, "", false},
		{"FORM_TYPE two values", form(`<field var='FORM_TYPE'><value>jabber:iq:search</value><value>x</value></field>`), surface.ErrBadRequest, "", false},
		{"FORM_TYPE not hidden", form(`<field var='FORM_TYPE' type='text-single'><value>jabber:iq:search</value></field>`), surface.ErrBadRequest, "", false},
		{"field without var", form(ft + `<field><value>w</value></field>`), surface.ErrBadRequest, "", false},
		{"nick twice", form(ft + `<field var='nick'/><field var='nick'/>`), surface.ErrBadRequest, "", false},
		{"two nick values", form(ft + `<field var='nick'><value>a</value><value>b</value></field>`), surface.ErrBadRequest, "", false},
		{"markup in value", form(ft + `<field var='nick'><value><b/></value></field>`), surface.ErrBadRequest, "", false},
		{"option in field", form(ft + `<field var='nick'><option><value>a</value></option></field>`), surface.ErrBadRequest, "", false},
		{"foreign element in form", form(ft + `<thing xmlns='urn:x'/>`), surface.ErrBadRequest, "", false},
		{"reported in submission", form(ft + `<reported/>`), surface.ErrBadRequest, "", false},
		{"malformed set", `<nick/><set xmlns='http://jabber.org/protocol/rsm'><max>-1</max></set>`, surface.ErrBadRequest, "", false},
		{"two sets", `<nick/>` + rsm + rsm, surface.ErrBadRequest, "", false},

		{"wrong FORM_TYPE", form(`<field var='FORM_TYPE' type='hidden'><value>urn:xmpp:other</value></field>`), surface.ErrNotAcceptable, "", false},
		{"unknown form field", form(ft + `<field var='email'><value>a@b</value></field>`), surface.ErrNotAcceptable, "", false},
		{"unknown empty form field", form(ft + `<field var='first'/>`), surface.ErrNotAcceptable, "", false},
		{"unknown legacy field", `<nick>a</nick><email>a@b</email>`, surface.ErrNotAcceptable, "", false},
		{"nick too long", `<nick>` + strings.Repeat("é", 513) + `</nick>`, surface.ErrNotAcceptable, "", false},
		{"long nick", `<nick>` + strings.Repeat("a", 1024) + `</nick>`, nil, strings.Repeat("a", 1024), true},
	} {
		el, err := wire.Parse(fmt.Sprintf(query, tc.body))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		req, err := search.ParseRequest(el)
		switch {
		case tc.want == nil && err != nil:
			t.Errorf("%s: err = %v, want none", tc.name, err)
			continue
		case tc.want != nil && !errors.Is(err, tc.want):
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.want)
			continue
		}
		if tc.want == nil && (req.Nick != tc.nick || req.Legacy != tc.legacy) {
			t.Errorf("%s: %+v", tc.name, req)
		}
	}
}
