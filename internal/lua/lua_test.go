package lua_test

import (
	"testing"

	"agentgw/internal/lua"
)

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		"":                `""`,
		"agents.example":  `"agents.example"`,
		`a"b\c`:           `"a\"b\\c"`,
		"line\nbreak\x7f": `"line\010break\127"`,
		"ünïcode stays":   `"ünïcode stays"`,
	} {
		if got := lua.Quote(in); got != want {
			t.Errorf("Quote(%q) = %s, want %s", in, got, want)
		}
	}
}
