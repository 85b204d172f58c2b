package gateway

import (
	"fmt"
	"testing"

	"mellium.im/xmpp/jid"
)

// TestJIDCache: a cached address parses as it did, with its sender key
// and whether we host it, an invalid one is refused every time and never
// kept, and the cache stays bounded.
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
	if _, kept := c.m["a@b@c"]; kept || len(c.m) != 3 {
		t.Errorf("cache holds %v", c.m)
	}
	for i := range 3 * maxCachedJIDs {
		c.parse(g, fmt.Sprintf("u%d@home.example", i))
	}
	if len(c.m) > maxCachedJIDs {
		t.Errorf("cache holds %d JIDs", len(c.m))
	}
}
