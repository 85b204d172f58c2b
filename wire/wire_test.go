package wire_test

import (
	"encoding/xml"
	"testing"

	"agentgw/wire"
)

func ptr[T any](v T) *T { return &v }

func TestParseRSM(t *testing.T) {
	for _, tc := range []struct {
		xml  string
		want wire.RSMRequest
		bad  bool
	}{
		{xml: `<set xmlns='http://jabber.org/protocol/rsm'/>`},
		{xml: `<set xmlns='http://jabber.org/protocol/rsm'><max>10</max></set>`, want: wire.RSMRequest{Max: ptr(10)}},
		{xml: `<set xmlns='http://jabber.org/protocol/rsm'><max>10</max><after>a@b</after></set>`, want: wire.RSMRequest{Max: ptr(10), After: ptr("a@b")}},
		{xml: `<set xmlns='http://jabber.org/protocol/rsm'><before/></set>`, want: wire.RSMRequest{Before: ptr("")}},
		{xml: `<set xmlns='http://jabber.org/protocol/rsm'><index>3</index></set>`, want: wire.RSMRequest{Index: ptr(3)}},
		{xml: `<set xmlns='http://jabber.org/protocol/rsm'><max>-1</max></set>`, bad: true},
		{xml: `<set xmlns='http://jabber.org/protocol/rsm'><max>ten</max></set>`, bad: true},
		{xml: `<set xmlns='http://jabber.org/protocol/rsm'><max>99999999999</max></set>`, bad: true},
		{xml: `<set xmlns='http://jabber.org/protocol/rsm'><max>1</max><max>1</max></set>`, bad: true},
		{xml: `<set xmlns='http://jabber.org/protocol/rsm'><after/></set>`, bad: true},
		{xml: `<set xmlns='http://jabber.org/protocol/rsm'><after>a</after><index>1</index></set>`, bad: true},
		{xml: `<set xmlns='http://jabber.org/protocol/rsm'><other/></set>`, bad: true},
		{xml: `<set xmlns='http://jabber.org/protocol/rsm'><max xmlns='urn:x'>1</max></set>`, bad: true},
	} {
		el, err := wire.Parse(tc.xml)
		if err != nil {
			t.Fatal(err)
		}
		got, err := wire.ParseRSM(el)
		if tc.bad {
			if err == nil {
				t.Errorf("%s: accepted", tc.xml)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.xml, err)
			continue
		}
		if !eq(got.Max, tc.want.Max) || !eq(got.Index, tc.want.Index) || !eq(got.After, tc.want.After) || !eq(got.Before, tc.want.Before) {
			t.Errorf("%s: got %+v", tc.xml, got)
		}
	}
}

func eq[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// TestMarshal checks every wire type against its XML, and that parsing the
// XML back yields the same canonical form (a round trip).
func TestMarshal(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    interface{ TokenReader() xml.TokenReader }
		want string
	}{
		{"empty set", wire.RSMResult{Count: 7}, `<set xmlns='http://jabber.org/protocol/rsm'><count>7</count></set>`},
		{"set", wire.RSMResult{HasItems: true, First: "a@x", Last: "b@x", Count: 2, FirstIndex: ptr(0)},
			`<set xmlns='http://jabber.org/protocol/rsm'><first index='0'>a@x</first><last>b@x</last><count>2</count></set>`},
		{"hash", wire.Hash{1, 2, 3}, `<hash algo='sha-256' xmlns='urn:xmpp:hashes:2'>AQIDAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=</hash>`},
		{"form", wire.Form{Type: "result", FormType: "urn:x", Fields: []wire.Field{{Var: "a", Values: []string{"<&>'"}}}},
			`<x type='result' xmlns='jabber:x:data'><field type='hidden' var='FORM_TYPE'><value>urn:x</value></field><field var='a'><value>&lt;&amp;&gt;'</value></field></x>`},
		{"info", wire.InfoResult{Node: "n", Identities: []wire.Identity{{Category: "automation", Type: "agent-gateway", Name: "G"}}, Features: []string{"f"}},
			`<query node='n' xmlns='http://jabber.org/protocol/disco#info'><identity category='automation' name='G' type='agent-gateway'/><feature var='f'/></query>`},
		{"items", wire.ItemsResult{Items: []wire.Item{{JID: "w@a", Name: "W"}, {JID: "w@a", Node: "n"}}},
			`<query xmlns='http://jabber.org/protocol/disco#items'><item jid='w@a' name='W'/><item jid='w@a' node='n'/></query>`},
	} {
		got, err := wire.Marshal(tc.v.TokenReader())
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
			continue
		}
		el, err := wire.Parse(got)
		if err != nil {
			t.Fatalf("%s: reparse: %v", tc.name, err)
		}
		again, _ := wire.Marshal(el.Reader())
		if again != got {
			t.Errorf("%s: round trip changed it:\n%s", tc.name, again)
		}
	}
}

// TestMarshalAttributeNamespaces: an attribute in a namespace keeps it,
// under a prefix Marshal declares itself whatever the input called it;
// the input's own declarations are not echoed as plain attributes; and
// an undeclared prefix cannot turn into a namespace declaration.
func TestMarshalAttributeNamespaces(t *testing.T) {
	for in, want := range map[string]string{
		`<a xmlns='urn:a' xmlns:p='urn:p' xmlns:q='urn:q' q:k='1' p:k='2' k='3' xml:lang='en'/>`: `<a k='3' ns1:k='2' ns2:k='1' xml:lang='en' xmlns='urn:a' xmlns:ns1='urn:p' xmlns:ns2='urn:q'/>`,
		`<iq A:xmlns=''></iq>`: `<iq ns1:xmlns='' xmlns:ns1='A'/>`,
		`<a xmlns:p='urn:p'/>`: `<a/>`,
	} {
		el, err := wire.Parse(in)
		if err != nil {
			t.Fatal(err)
		}
		got, err := wire.Marshal(el.Reader())
		if err != nil || got != want {
			t.Errorf("Marshal(%s)\n got %s, %v\nwant %s", in, got, err, want)
			continue
		}
		back, err := wire.Parse(got)
		if err != nil {
			t.Fatalf("%s: reparse: %v", got, err)
		}
		if again, _ := wire.Marshal(back.Reader()); again != got {
			t.Errorf("%s: round trip changed it to %s", got, again)
		}
	}
}

func TestElement(t *testing.T) {
	el, err := wire.Parse(`<a xmlns='urn:a' k='v'>x<b>1</b><c><d/></c>y</a>`)
	if err != nil {
		t.Fatal(err)
	}
	kids := el.Children()
	if len(kids) != 2 || kids[0].Start.Name.Local != "b" || kids[0].Text() != "1" || len(kids[1].Children()) != 1 {
		t.Fatalf("children: %+v", kids)
	}
	if el.Text() != "xy" {
		t.Errorf("text = %q", el.Text())
	}
	if v, ok := el.AttrValue("k"); !ok || v != "v" {
		t.Errorf("attr = %q", v)
	}
	if _, ok := el.Child(xml.Name{Space: "urn:a", Local: "c"}); !ok {
		t.Error("child c not found")
	}
}

func TestReadElementLimits(t *testing.T) {
	big := "<a>"
	for i := 0; i < 100; i++ {
		big += "<b/>"
	}
	big += "</a>"
	d := xml.NewDecoder(stringsReader(big))
	tok, _ := d.Token()
	if _, err := wire.ReadElement(d, tok.(xml.StartElement), 50, 1<<20); err != wire.ErrTooLarge {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
}

func TestPageSize(t *testing.T) {
	for _, tc := range []struct {
		max       *int
		cap, want int
	}{
		{nil, 100, 50}, {nil, 10, 10}, {nil, 0, 50}, {ptr(500), 100, 100}, {ptr(0), 100, 0}, {ptr(7), 100, 7},
	} {
		if got := (wire.RSMRequest{Max: tc.max}).PageSize(tc.cap); got != tc.want {
			t.Errorf("PageSize(max %v, cap %d) = %d, want %d", tc.max, tc.cap, got, tc.want)
		}
	}
	idx := 3
	set := wire.RSMRequest{Index: &idx}.Result(9, 2, "a", "b")
	if !set.HasItems || *set.FirstIndex != 3 || set.First != "a" || set.Last != "b" || set.Count != 9 {
		t.Errorf("Result = %+v", set)
	}
	if empty := (wire.RSMRequest{}).Result(9, 0, "", ""); empty.HasItems {
		t.Errorf("empty page has items: %+v", empty)
	}
}

// TestChildrenShareWithoutAliasing: a child's Inner is a window on its
// parent's tokens, and appending to it leaves the parent as it was.
func TestChildrenShareWithoutAliasing(t *testing.T) {
	el, err := wire.Parse(`<a><b><c/>x</b><d>y</d><e/></a>`)
	if err != nil {
		t.Fatal(err)
	}
	kids := el.Children()
	if len(kids) != 3 || kids[0].Start.Name.Local != "b" || kids[1].Text() != "y" || kids[2].Inner != nil {
		t.Fatalf("children: %+v", kids)
	}
	if len(kids[0].Children()) != 1 || kids[0].Text() != "x" {
		t.Fatalf("grandchildren of b: %+v", kids[0].Children())
	}
	before, _ := wire.Marshal(el.Reader())
	_ = append(kids[0].Inner, xml.CharData("appended"))
	if after, _ := wire.Marshal(el.Reader()); after != before {
		t.Errorf("appending to a child changed the parent: %s", after)
	}
}
