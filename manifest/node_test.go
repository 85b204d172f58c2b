package manifest_test

import (
	"fmt"
	"strings"
	"testing"

	"agentgw/manifest"
)

func TestToolNodeVector(t *testing.T) {
	const want = "urn:xmpp:agent-tool:0#1.4.0#Zm9yZWNhc3QuZ2V0"
	if got := manifest.ToolNode("1.4.0", "forecast.get"); got != want {
		t.Errorf("ToolNode = %q, want %q", got, want)
	}
	v, name, err := manifest.ParseToolNode(want)
	if err != nil || v != "1.4.0" || name != "forecast.get" {
		t.Errorf("ParseToolNode = %q, %q, %v", v, name, err)
	}
}

func TestToolNodeRoundTrip(t *testing.T) {
	for _, tc := range []struct{ version, name string }{
		{"1.4.0", "forecast.get"},
		{"v2", "a"},
		{"A-z_0.9~", "??>"},              // '-' and '_' in the base64url alphabet
		{"1", "prévision 天気 \U0001F600"}, // multibyte UTF-8
		{"1", "tab\there"},
		{strings.Repeat("9", 64), strings.Repeat("x", 1000)},
	} {
		node := manifest.ToolNode(tc.version, tc.name)
		if strings.ContainsAny(node[len("urn:xmpp:agent-tool:0#"):], "=+/") {
			t.Errorf("node %q is not unpadded base64url", node)
		}
		v, name, err := manifest.ParseToolNode(node)
		if err != nil || v != tc.version || name != tc.name {
			t.Errorf("round trip of %q/%q: got %q, %q, %v", tc.version, tc.name, v, name, err)
		}
	}
}

func TestParseToolNodeRejects(t *testing.T) {
	const p = "urn:xmpp:agent-tool:0#"
	for _, tc := range []struct {
		name, node, msg string
	}{
		{"wrong prefix", "urn:xmpp:agent-tools:0#1#Zm9v", "not a tool node"},
		{"no prefix", "Zm9v", "not a tool node"},
		{"missing name", p + "1.4.0", "lacks an encoded tool name"},
		{"empty version", p + "#Zm9v", "invalid version"},
		{"bad version characters", p + "1 0#Zm9v", "invalid version"},
		{"version too long", p + strings.Repeat("1", 65) + "#Zm9v", "invalid version"},
		{"empty name", p + "1#", "empty tool name"},
		{"padding", p + "1#Zm9vYg==", "must not be padded"},
		{"standard alphabet", p + "1#Pz8+", "not canonical"},
		{"standard alphabet slash", p + "1#Pz8/", "not canonical"},
		{"nonzero trailing bits", p + "1#Zm9vYh", "not canonical"},
		{"impossible length", p + "1#Zm9vY", "not canonical"},
		{"embedded newline", p + "1#Zm9v\nYg", "not canonical"},
		{"embedded carriage return", p + "1#Zm9v\rYg", "not canonical"},
		{"extra separator", p + "1#Zm9v#Yg", "not canonical"},
		{"space", p + "1#Zm9v Yg", "not canonical"},
		{"invalid UTF-8", p + "1#_w", "not valid UTF-8"},
		{"encoded surrogate", p + "1#7aCA", "not valid UTF-8"},
		{"NUL", p + "1#AA", "not allowed in XML 1.0"},
		{"control character", p + "1#YQFi", "not allowed in XML 1.0"},
		{"U+FFFE", p + "1#77--", "not allowed in XML 1.0"},
		{"U+FFFF", p + "1#77-_", "not allowed in XML 1.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, name, err := manifest.ParseToolNode(tc.node)
			if err == nil {
				t.Fatalf("accepted: %q, %q", v, name)
			}
			checkError(t, err, manifest.KindInvalid, "", tc.msg)
		})
	}
}

func TestToolsNode(t *testing.T) {
	if got := manifest.ToolsNode("1.4.0"); got != "urn:xmpp:agent-tools:0#1.4.0" {
		t.Errorf("ToolsNode = %q", got)
	}
	if v, err := manifest.ParseToolsNode("urn:xmpp:agent-tools:0#1.4.0"); err != nil || v != "1.4.0" {
		t.Errorf("ParseToolsNode = %q, %v", v, err)
	}
	for _, node := range []string{
		"urn:xmpp:agent-tools:0#",
		"urn:xmpp:agent-tools:0",
		"urn:xmpp:agent-tool:0#1.4.0",
		"urn:xmpp:agent-tools:0#1.4.0#x",
		"urn:xmpp:agent-tools:0#1 4",
	} {
		if v, err := manifest.ParseToolsNode(node); err == nil {
			t.Errorf("ParseToolsNode(%q) accepted %q", node, v)
		}
	}
}

func TestValidVersion(t *testing.T) {
	for v, want := range map[string]bool{
		"1.4.0": true, "A-z_0.9~": true, strings.Repeat("a", 64): true,
		"": false, strings.Repeat("a", 65): false, "1 0": false, "1#0": false,
		"1/0": false, "é": false, "1\n": false, "+1": false,
	} {
		if got := manifest.ValidVersion(v); got != want {
			t.Errorf("ValidVersion(%q) = %v, want %v", v, got, want)
		}
	}
}

func ExampleToolNode() {
	node := manifest.ToolNode("1.4.0", "forecast.get")
	fmt.Println(node)
	version, name, err := manifest.ParseToolNode(node)
	fmt.Println(version, name, err)
	// Output:
	// urn:xmpp:agent-tool:0#1.4.0#Zm9yZWNhc3QuZ2V0
	// 1.4.0 forecast.get <nil>
}
