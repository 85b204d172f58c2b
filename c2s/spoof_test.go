package c2s

import (
	"encoding/xml"
	"strings"
	"testing"
)

func TestSpoofedAddressing(t *testing.T) {
	for doc, want := range map[string]bool{
		`<iq xmlns="jabber:client" type="set" from="evil@evil.example/r" id="1"/>`:                                            false,
		`<message xmlns="jabber:client" xmlns:from="urn:x" from="a@b.example"/>`:                                              false,
		`<iq xmlns="jabber:client" xmlns:ns1="jabber:client" ns1:from="me@x.example" from="evil@evil.example/r" type="set"/>`: true,
		`<message xmlns="jabber:client" xmlns:ns1="urn:other" ns1:to="me@x.example" from="a@b.example"/>`:                     true,
	} {
		tok, err := xml.NewDecoder(strings.NewReader(doc)).Token()
		if err != nil {
			t.Fatal(err)
		}
		start := tok.(xml.StartElement)
		if got := spoofedAddressing(&start); got != want {
			t.Errorf("%s: spoofedAddressing = %v, want %v", doc, got, want)
		}
	}
}
