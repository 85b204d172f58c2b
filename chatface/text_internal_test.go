package chatface

import "testing"

// TestValidText: a reply is refused, not mangled, when XML cannot carry
// it; wire.ValidText turns nothing into U+FFFD for the seed's tools.
func TestValidText(t *testing.T) {
	for _, c := range []struct {
		s  string
		ok bool
	}{
		{"hello", true},
		{"olá, 世界 🙂", true},
		{"line\nbreak\ttab", true},
		{"", false},
		{"bell\x07", false},
		{"nul\x00", false},
		{"bad \xff utf-8", false},
		{"\uFFFE", false},
	} {
		if got := validText(c.s); got != c.ok {
			t.Errorf("validText(%q) = %v, want %v", c.s, got, c.ok)
		}
	}
}
