package wire_test

import (
	"testing"

	"agentgw/wire"
)

// A prefixed copy of an attribute in the element's namespace never wins
// over the plain one the server stamped, whichever comes first.
func TestAttrValuePrefersPlain(t *testing.T) {
	for _, doc := range []string{
		`<message xmlns="jabber:client" xmlns:ns1="jabber:client" ns1:from="boss@corp.example/x" from="evil@evil.example/r"/>`,
		`<message xmlns="jabber:client" xmlns:ns1="jabber:client" from="evil@evil.example/r" ns1:from="boss@corp.example/x"/>`,
	} {
		el, err := wire.Parse(doc)
		if err != nil {
			t.Fatal(err)
		}
		if from, _ := el.AttrValue("from"); from != "evil@evil.example/r" {
			t.Errorf("%s: from = %q, want the plain attribute", doc, from)
		}
	}
}
