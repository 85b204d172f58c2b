package gateway

import (
	"fmt"
	"testing"
)

// TestJIDCache: a cached address parses as it did, an invalid one is
// refused every time and never kept, and the cache stays bounded.
func TestJIDCache(t *testing.T) {
	var c jidCache
	for range 2 {
		j, ok := c.parse("Alice@Home.Example/r")
		if !ok || j.String() != "alice@home.example/r" {
			t.Fatalf("parse = %v, %v", j, ok)
		}
		if _, ok := c.parse("a@b@c"); ok {
			t.Fatal("an invalid JID parsed")
		}
	}
	if _, kept := c.m["a@b@c"]; kept || len(c.m) != 1 {
		t.Errorf("cache holds %v", c.m)
	}
	for i := range 3 * maxCachedJIDs {
		c.parse(fmt.Sprintf("u%d@home.example", i))
	}
	if len(c.m) > maxCachedJIDs {
		t.Errorf("cache holds %d JIDs", len(c.m))
	}
}
