package search_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"agentgw/db"
	"agentgw/policy"
	"agentgw/search"
	"agentgw/surface"
	"agentgw/wire"

	"mellium.im/xmpp/jid"
	"mellium.im/xmpp/stanza"
)

func openStore(tb testing.TB) *db.Store {
	tb.Helper()
	s, err := db.Open(context.Background(), filepath.Join(tb.TempDir(), "search.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// endpoint is a version of local@agents.example with a name and a title.
func endpoint(local, name, title string) db.Version {
	j := local + "@agents.example"
	canon := fmt.Sprintf(`{"agent":{"jid":%q,"name":%q,"title":%q,"version":"1"},"manifestSpecVersion":"0","tools":[]}`, j, name, title)
	return db.Version{JID: j, Version: "1", Hash: sha256.Sum256([]byte(canon)), Canonical: []byte(canon), Name: name, Title: title}
}

// populate activates e0000…, titled "Agent NNNN", plus weather ("weather",
// no title) and meteo ("Météo Agent").
func populate(tb testing.TB, s *db.Store, n int) {
	tb.Helper()
	vs := []db.Version{endpoint("weather", "weather", ""), endpoint("meteo", "meteo", "Météo Agent")}
	for i := range n {
		vs = append(vs, endpoint(fmt.Sprintf("e%04d", i), fmt.Sprintf("e%04d", i), fmt.Sprintf("Agent %04d", i)))
	}
	if err := s.ImportVersions(context.Background(), vs, true); err != nil {
		tb.Fatal(err)
	}
}

var (
	alice = jid.MustParse("alice@home.example/phone")
	carol = jid.MustParse("carol@remote.example/laptop")
	bob   = jid.MustParse("bob@remote.example/x")
)

// testPolicy lets home.example see everything and carol two endpoints, one
// of which does not exist.
func testPolicy() *policy.Policy {
	return &policy.Policy{Visibility: []policy.Grant{
		{Principals: []policy.Principal{{Domain: "home.example"}}, AllEndpoints: true},
		{Principals: []policy.Principal{{JID: "carol@remote.example"}}, Endpoints: []string{"e0007@agents.example", "weather@agents.example", "nobody@agents.example"}},
	}}
}

func request(t testing.TB, r search.Query) wire.Element {
	t.Helper()
	s, err := wire.Marshal(r.TokenReader())
	if err != nil {
		t.Fatal(err)
	}
	el, err := wire.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return el
}

func jids(res search.Result) []string {
	var out []string
	for _, it := range res.Items {
		out = append(out, it.JID)
	}
	return out
}

func TestSearchVisibility(t *testing.T) {
	s := openStore(t)
	populate(t, s, 30)
	svc := &search.Service{Store: s, PageMax: 100}
	ctx := context.Background()
	pol := testPolicy()
	for _, tc := range []struct {
		who   jid.JID
		nick  string
		want  []string
		count int
	}{
		{alice, "météo", []string{"meteo@agents.example"}, 1},
		{alice, "WEATH", []string{"weather@agents.example"}, 1},
		{alice, "agent 000", []string{"e0000@agents.example", "e0001@agents.example", "e0002@agents.example", "e0003@agents.example", "e0004@agents.example", "e0005@agents.example", "e0006@agents.example", "e0007@agents.example", "e0008@agents.example", "e0009@agents.example"}, 10},
		{carol, "", []string{"e0007@agents.example", "weather@agents.example"}, 2},
		{carol, "agent", []string{"e0007@agents.example"}, 1},
		{carol, "météo", nil, 0},
		{bob, "", nil, 0},
		{bob, "weather", nil, 0},
	} {
		for _, legacy := range []bool{false, true} {
			res, err := svc.Search(ctx, surface.Request{Type: stanza.SetIQ, Policy: pol, From: tc.who, Payload: request(t, search.Query{Nick: tc.nick, Legacy: legacy})})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(jids(res), tc.want) || res.Set.Count != tc.count || res.Legacy != legacy {
				t.Errorf("%s searching %q (legacy %v): %q count %d", tc.who, tc.nick, legacy, jids(res), res.Set.Count)
			}
		}
	}
	// An empty query lists everything visible, like the directory.
	res, err := svc.Search(ctx, surface.Request{Type: stanza.SetIQ, Policy: pol, From: alice, Payload: request(t, search.Query{})})
	if err != nil {
		t.Fatal(err)
	}
	if res.Set.Count != 32 || len(res.Items) != 32 || res.Items[0].Nick != "Agent 0000" || res.Items[30].Nick != "Météo Agent" {
		t.Errorf("empty query: count %d, %d items: %+v", res.Set.Count, len(res.Items), res.Items)
	}
	// A nil policy denies.
	if res, err := svc.Search(ctx, surface.Request{Type: stanza.SetIQ, Policy: nil, From: alice, Payload: request(t, search.Query{})}); err != nil || res.Set.Count != 0 {
		t.Errorf("nil policy: %+v %v", res, err)
	}
}

func TestSearchPagingAndCap(t *testing.T) {
	s := openStore(t)
	populate(t, s, 120)
	svc := &search.Service{Store: s, PageMax: 100}
	ctx := context.Background()
	pol := testPolicy()
	for _, tc := range []struct {
		rsm         *wire.RSMRequest
		items       int
		first, last string
		index       *int
	}{
		{nil, 50, "e0000", "e0049", nil},
		{&wire.RSMRequest{Max: ptr(1000)}, 100, "e0000", "e0099", nil},
		{&wire.RSMRequest{Max: ptr(10), After: ptr("e0100@agents.example")}, 10, "e0101", "e0110", nil},
		{&wire.RSMRequest{Max: ptr(10), Before: ptr("e0100@agents.example")}, 10, "e0090", "e0099", nil},
		{&wire.RSMRequest{Max: ptr(3), Before: ptr("")}, 3, "e0117", "e0119", nil},
		{&wire.RSMRequest{Max: ptr(10), Index: ptr(115)}, 5, "e0115", "e0119", ptr(115)},
		{&wire.RSMRequest{Max: ptr(0)}, 0, "", "", nil},
	} {
		res, err := svc.Search(ctx, surface.Request{Type: stanza.SetIQ, Policy: pol, From: alice, Payload: request(t, search.Query{Nick: "AGENT 0", RSM: tc.rsm})})
		if err != nil {
			t.Fatal(err)
		}
		set := res.Set
		if len(res.Items) != tc.items || set.Count != 120 || set.HasItems != (tc.items > 0) {
			t.Errorf("%+v: %d items, count %d", tc.rsm, len(res.Items), set.Count)
			continue
		}
		if tc.items > 0 && (set.First != tc.first+"@agents.example" || set.Last != tc.last+"@agents.example" || !eqPtr(set.FirstIndex, tc.index)) {
			t.Errorf("%+v: first %s last %s index %v", tc.rsm, set.First, set.Last, set.FirstIndex)
		}
	}
	// The cap is the configured one, and the default page never exceeds it.
	small := &search.Service{Store: s, PageMax: 10}
	for _, rsm := range []*wire.RSMRequest{nil, {Max: ptr(500)}} {
		res, err := small.Search(ctx, surface.Request{Type: stanza.SetIQ, Policy: pol, From: alice, Payload: request(t, search.Query{RSM: rsm})})
		if err != nil || len(res.Items) != 10 {
			t.Errorf("page_max 10, %+v: %d items (%v)", rsm, len(res.Items), err)
		}
	}
}

func eqPtr(a, b *int) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func TestSearchErrors(t *testing.T) {
	s := openStore(t)
	svc := &search.Service{Store: s, PageMax: 100}
	for _, tc := range []struct {
		body string
		want error
	}{
		{`<query xmlns='jabber:iq:search'><nick/><set xmlns='http://jabber.org/protocol/rsm'><max>x</max></set></query>`, surface.ErrBadRequest},
		{`<query xmlns='jabber:iq:search'><x xmlns='jabber:x:data' type='submit'><field var='FORM_TYPE'><value>urn:other</value></field></x></query>`, surface.ErrNotAcceptable},
	} {
		el, err := wire.Parse(tc.body)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Search(context.Background(), surface.Request{Type: stanza.SetIQ, Policy: testPolicy(), From: alice, Payload: el}); !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.body, err, tc.want)
		}
	}
}

func ExampleGatewayFields() {
	out, _ := wire.Marshal(search.GatewayFields().TokenReader())
	fmt.Println(out)
	// Output:
	// <query xmlns='jabber:iq:search'><instructions>Enter a nickname to search for matching agents.</instructions><nick/><x type='form' xmlns='jabber:x:data'><title>Agent Directory Search</title><field type='hidden' var='FORM_TYPE'><value>jabber:iq:search</value></field><field label='Nickname' type='text-single' var='nick'/></x></query>
}
