package gateway

import (
	"fmt"
	"testing"

	"mellium.im/xmpp/jid"
)

// TestJIDCache: a cached address parses as it did, with its sender key
// and whether we host it, an invalid one is refused every time and never
// kept, the cache stays bounded, and it fills again after a drop.
func TestJIDCache(t *testing.T) {
	var c jidCache
	g := &Gateway{domain: jid.MustParse("agents.example")}
	for range 2 {
		p, ok := c.parse(g, "Alice@Home.Example/r")
		if !ok || p.j.String() != "alice@home.example/r" || p.ours ||
			p.snd != (sender{bare: "alice@home.example", domain: "home.example"}) {
			t.Fatalf("parse = %+v, %v", p, ok)
		}
		if p, ok := c.parse(g, "Bot@Agents.Example"); !ok || !p.ours || p.snd != (sender{bare: "bot@agents.example", domain: "agents.example"}) {
			t.Fatalf("parse = %+v, %v", p, ok)
		}
		if p, ok := c.parse(g, "agents.example"); !ok || !p.ours || !p.snd.self {
			t.Fatalf("parse = %+v, %v", p, ok)
		}
		if p, ok := c.parse(g, ""); !ok || p.ours || p.snd.self {
			t.Fatalf("parse = %+v, %v", p, ok)
		}
		if _, ok := c.parse(g, "a@b@c"); ok {
			t.Fatal("an invalid JID parsed")
		}
	}
	if _, kept := (*c.m.Load())["a@b@c"]; kept || len(*c.m.Load()) != 3 {
		t.Errorf("cache holds %v", *c.m.Load())
	}
	for i := range 3 * maxCachedJIDs {
		c.parse(g, fmt.Sprintf("u%d@home.example", i))
	}
	if n := len(*c.m.Load()); n > maxCachedJIDs {
		t.Errorf("cache holds %d JIDs", n)
	}
	c.drop()
	if p, ok := c.parse(g, "Alice@Home.Example/r"); !ok || p.j.String() != "alice@home.example/r" || len(*c.m.Load()) != 1 {
		t.Errorf("after drop: %+v, %v, %d kept", p, ok, len(*c.m.Load()))
	}
}
