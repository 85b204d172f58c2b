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

// TestFrozenBytes: the bytes of a frozen stream parse to the same element
// as its replay, with escaping, and are offered only for an unread replay.
func TestFrozenBytes(t *testing.T) {
	info := wire.InfoResult{
		Identities: []wire.Identity{{Category: "automation", Type: "agent-endpoint", Name: `Wea"ther & <co>`}},
		Features:   []string{"a", "b"},
		Forms:      []wire.Form{{Type: "result", FormType: "urn:x", Fields: []wire.Field{{Var: "v", Values: []string{"1 < 2"}}}}},
	}
	f, err := wire.Freeze(info.TokenReader())
	if err != nil {
		t.Fatal(err)
	}
	raw, ok := wire.FrozenBytes(f.Reader())
	if !ok || len(raw) == 0 {
		t.Fatal("no bytes for an unread replay")
	}
	fromBytes, err := wire.Parse(string(raw))
	if err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	a, err := wire.Marshal(fromBytes.Reader())
	if err != nil {
		t.Fatal(err)
	}
	b, err := wire.Marshal(f.Reader())
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Errorf("bytes parse to\n%s\nreplay is\n%s", a, b)
	}
	r := f.Reader()
	r.Token()
	if _, ok := wire.FrozenBytes(r); ok {
		t.Error("bytes offered for a replay already read from")
	}
	if _, ok := wire.FrozenBytes(info.TokenReader()); ok {
		t.Error("bytes offered for a reader that is not a replay")
	}
}
