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
