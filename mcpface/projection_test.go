package mcpface_test

import (
	"regexp"
	"strings"
	"testing"

	"agentgw/mcpface"
)

var mcpNameGrammar = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

// TestMCPToolName: the mapping fits MCP's grammar and is one to one.
func TestMCPToolName(t *testing.T) {
	cases := map[string]string{
		"echo":            "demo_echo",
		"get_weather":     "demo_get_weather",
		"ledger.append":   "demo_ledger.2eappend",
		"ledger.2eappend": "demo_ledger.2e2eappend",
		"a b":             "demo_a.20b",
		"é":               "demo_.c3.a9",
		"x-y":             "demo_x-y",
	}
	seen := map[string]string{}
	for in, want := range cases {
		got, ok := mcpface.MCPToolName("demo", in)
		if !ok || got != want || !mcpNameGrammar.MatchString(got) {
			t.Errorf("MCPToolName(%q) = %q %v, want %q", in, got, ok, want)
		}
		if prev, dup := seen[got]; dup {
			t.Errorf("%q and %q both map to %q", prev, in, got)
		}
		seen[got] = in
	}
	if _, ok := mcpface.MCPToolName("demo", strings.Repeat("a", 124)); ok {
		t.Error("a name past 128 characters was accepted")
	}
	// Without a prefix, a name that fits the grammar is the agent's own.
	for in, want := range map[string]string{"echo": "echo", "ledger.append": "ledger.append", "a b": "a.20b", "é": ".c3.a9"} {
		if got, ok := mcpface.MCPToolName("", in); !ok || got != want {
			t.Errorf(`MCPToolName("", %q) = %q %v, want %q`, in, got, ok, want)
		}
	}
	if _, ok := mcpface.MCPToolName("", ""); ok {
		t.Error("an empty name was accepted")
	}
}

// TestElicitable: only flat objects of primitives go to MCP elicitation.
func TestElicitable(t *testing.T) {
	for schema, ok := range map[string]bool{
		`{"type":"object","properties":{"answer":{"type":"string","maxLength":4096}},"required":["answer"]}`: true,
		`{"type":"object","properties":{"n":{"type":"integer","minimum":1},"ok":{"type":"boolean"}}}`:        true,
		`{"type":"object","properties":{"c":{"type":"string","enum":["a","b"]}}}`:                            true,
		`{"type":"object","properties":{"list":{"type":"array","items":{"type":"string"}}}}`:                 false,
		`{"type":"object","properties":{"o":{"type":"object"}}}`:                                             false,
		`{"type":"object","properties":{"s":{"type":"string","pattern":"^a"}}}`:                              false,
		`{"type":"string"}`: false,
	} {
		if err := mcpface.Elicitable([]byte(schema)); (err == nil) != ok {
			t.Errorf("%s: %v, want ok=%v", schema, err, ok)
		}
	}
}
