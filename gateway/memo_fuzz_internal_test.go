package gateway

import (
	"encoding/xml"
	"testing"

	"agentgw/wire"
)

// FuzzMemoKey: memoKeyOf lets through only what the memo may answer: a get
// with a 'from' and exactly one child element, empty, with no attribute
// but namespace declarations and a node, within the key and id bounds,
// and its key is the IQ's own addresses and node.
func FuzzMemoKey(f *testing.F) {
	for _, s := range []string{
		`<iq type='get' id='1' from='a@b/c' to='e@agents.example'><query xmlns='http://jabber.org/protocol/disco#info'/></iq>`,
		`<iq type='get' id='1' from='a@b/c' to='e@agents.example'><query xmlns='http://jabber.org/protocol/disco#info' node='n'/></iq>`,
		`<iq type='set' id='1' from='a@b/c' to='e@agents.example'><query xmlns='x'/></iq>`,
		`<iq type='get' id='1' to='e@agents.example'><query xmlns='x'/></iq>`,
		`<iq type='get' id='1' from='a'><query xmlns='x'> </query></iq>`,
		`<iq type='get' id='1' from='a'><query xmlns='x'/><query xmlns='x'/></iq>`,
		`<iq type='get' id='1' from='a'><p:query xmlns:p='x' p:node='n'/></iq>`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		toks, err := wire.ParseFragment(s)
		if err != nil || len(toks) < 2 {
			return
		}
		start, ok := toks[0].(xml.StartElement)
		if !ok {
			return
		}
		el := wire.Element{Start: start, Inner: toks[1 : len(toks)-1]}
		k, id, ok := memoKeyOf(el)
		if !ok {
			return
		}
		kids := el.Children()
		if len(kids) != 1 || len(kids[0].Inner) != 0 || kids[0].Start.Name != k.Name {
			t.Fatalf("%q let through with %d children", s, len(kids))
		}
		typ, _ := el.AttrValue("type")
		from, hasFrom := el.AttrValue("from")
		to, _ := el.AttrValue("to")
		node, _ := kids[0].AttrValue("node")
		if typ != "get" || !hasFrom || from != k.From || to != k.To || node != k.Node {
			t.Fatalf("%q: key %+v", s, k)
		}
		if len(id) > maxMemoID || len(k.From)+len(k.To)+len(k.Node) > maxMemoKey {
			t.Fatalf("%q: over the bounds", s)
		}
		for _, a := range kids[0].Start.Attr {
			if a.Name.Space != "xmlns" && a.Name.Local != "xmlns" && (a.Name.Space != "" || a.Name.Local != "node") {
				t.Fatalf("%q: attribute %v let through", s, a.Name)
			}
		}
	})
}
