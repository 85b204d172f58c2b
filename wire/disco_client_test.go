package wire_test

import (
	"reflect"
	"testing"

	"agentgw/wire"
)

// TestDiscoRoundTrip: what the gateway writes, the client reads back.
func TestDiscoRoundTrip(t *testing.T) {
	info := wire.InfoResult{
		Node:       "n",
		Identities: []wire.Identity{{Category: "automation", Type: "agent", Name: "Demo"}},
		Features:   []string{"urn:a", "urn:b"},
		Forms:      []wire.Form{{Type: "result", FormType: "urn:form", Fields: []wire.Field{{Var: "version", Values: []string{"1.0.0"}}}}},
	}
	s, err := wire.Marshal(info.TokenReader())
	if err != nil {
		t.Fatal(err)
	}
	el, err := wire.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	got, err := wire.ParseInfoResult(el)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, info) {
		t.Fatalf("info: got %+v, want %+v", got, info)
	}
	if !got.HasFeature("urn:b") || got.HasFeature("urn:c") || got.Values()["version"] != "1.0.0" || got.Name() != "Demo" {
		t.Fatalf("accessors: %+v", got)
	}
	items := wire.ItemsResult{Node: "d", Items: []wire.Item{{JID: "a@b", Name: "A"}}, Set: &wire.RSMResult{First: "a@b", Last: "a@b", Count: 7, HasItems: true}}
	s, _ = wire.Marshal(items.TokenReader())
	el, _ = wire.Parse(s)
	gotItems, err := wire.ParseItemsResult(el)
	if err != nil || !reflect.DeepEqual(gotItems, items) {
		t.Fatalf("items: got %+v (%v), want %+v", gotItems, err, items)
	}
	max, after := 10, "x"
	s, _ = wire.Marshal(wire.ItemsRequest{Node: "d", RSM: &wire.RSMRequest{Max: &max, After: &after}}.TokenReader())
	el, _ = wire.Parse(s)
	rsm, ok, err := wire.FindRSM(el)
	if err != nil || !ok || *rsm.Max != 10 || *rsm.After != "x" {
		t.Fatalf("request: %s: %+v %v %v", s, rsm, ok, err)
	}
}
