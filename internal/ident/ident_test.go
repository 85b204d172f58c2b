package ident_test

import (
	"testing"

	"agentgw/internal/ident"
)

func TestNames(t *testing.T) {
	for _, tc := range []struct {
		name      string
		env, head bool
	}{
		{"PATH", true, true}, {"_x1", true, true}, {"1X", false, true}, {"", false, false},
		{"A-B", false, true}, {"a b", false, false}, {"Authorization", true, true}, {"X:Y", false, false},
	} {
		if got := ident.EnvName(tc.name); got != tc.env {
			t.Errorf("EnvName(%q) = %v", tc.name, got)
		}
		if got := ident.HeaderName(tc.name); got != tc.head {
			t.Errorf("HeaderName(%q) = %v", tc.name, got)
		}
	}
}

func TestUnreserved(t *testing.T) {
	for _, tc := range []struct {
		s        string
		min, max int
		want     bool
	}{
		{"1.4.0", 1, 64, true}, {"", 1, 64, false}, {"a b", 1, 64, false}, {"A-z_0.~", 1, 64, true},
		{"short", 22, 128, false}, {"req-0123456789abcdef012345", 22, 128, true}, {"é", 1, 64, false},
	} {
		if got := ident.Unreserved(tc.s, tc.min, tc.max); got != tc.want {
			t.Errorf("Unreserved(%q, %d, %d) = %v", tc.s, tc.min, tc.max, got)
		}
	}
}
