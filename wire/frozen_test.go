package wire_test

import (
	"encoding/xml"
	"testing"

	"agentgw/wire"
)

// TestFrozen: a frozen stream replays the same XML every time, and an
// encoder that filters a replay's attributes in place (as mellium's does)
// leaves the recording and every other replay intact.
func TestFrozen(t *testing.T) {
	info := wire.InfoResult{
		Identities: []wire.Identity{{Category: "automation", Type: "agent-endpoint", Name: "Weather"}},
		Features:   []string{"a", "b"},
		Forms:      []wire.Form{{Type: "result", FormType: "urn:x", Fields: []wire.Field{{Var: "v", Values: []string{"1"}}}}},
	}
	want, err := wire.Marshal(info.TokenReader())
	if err != nil {
		t.Fatal(err)
	}
	f, err := wire.Freeze(info.TokenReader())
	if err != nil {
		t.Fatal(err)
	}
	// A replay whose start elements lose their attributes in place.
	r := f.Reader()
	for {
		tok, err := r.Token()
		if err != nil {
			break
		}
		if se, ok := tok.(xml.StartElement); ok {
			for i := range se.Attr {
				se.Attr[i] = xml.Attr{}
			}
		}
	}
	for i := range 3 {
		got, err := wire.Marshal(f.Reader())
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("replay %d:\n got %s\nwant %s", i, got, want)
		}
	}
}
