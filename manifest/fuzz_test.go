package manifest_test

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"agentgw/manifest"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// addTestdataSeeds seeds a fuzz target with every manifest in testdata.
func addTestdataSeeds(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("..", "testdata", "manifest", "*.json"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no seed files: %v", err)
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		weatherCompact,
		manifestWithTool(`{"name":"t","inputSchema":{"type":"object","$ref":"#/$defs/a","$defs":{"a":{"$anchor":"x"}}}}`),
		manifestWithTool(`{"name":"t","inputSchema":{"type":"object","properties":{"a":{"pattern":"(?<=a)"}}}}`),
		`{"a":"\ud800"}`, `[1e400]`, `{"a":1,"a":2}`, "[\"\xff\"]", `[[[[[[]]]]]]`,
	} {
		f.Add([]byte(s))
	}
}

// FuzzParse checks that Parse never panics and that whatever it accepts
// is consistent: the hash covers the canonical bytes, the canonical bytes
// are a fixed point, and stored schemas recompile, as they must when
// reloaded from the database.
func FuzzParse(f *testing.F) {
	addTestdataSeeds(f)
	f.Fuzz(func(t *testing.T, raw []byte) {
		m, err := manifest.Parse(raw, manifest.Options{})
		if err != nil {
			return
		}
		if m.Hash != sha256.Sum256(m.Canonical) {
			t.Fatal("hash does not cover the canonical bytes")
		}
		again, err := manifest.Parse(m.Canonical, manifest.Options{})
		if err != nil {
			t.Fatalf("canonical form rejected: %v", err)
		}
		if !bytes.Equal(again.Canonical, m.Canonical) {
			t.Fatal("canonical form is not a fixed point")
		}
		for i, tool := range m.Tools {
			if _, err := manifest.CompileSchema(tool.InputSchema, true, manifest.Options{}); err != nil {
				t.Fatalf("tool %d: stored input schema does not recompile: %v", i, err)
			}
			if tool.OutputSchema == nil {
				continue
			}
			if _, err := manifest.CompileSchema(tool.OutputSchema, false, manifest.Options{}); err != nil {
				t.Fatalf("tool %d: stored output schema does not recompile: %v", i, err)
			}
		}
	})
}

// FuzzCanonicalize checks that canonical output is a fixed point.
func FuzzCanonicalize(f *testing.F) {
	addTestdataSeeds(f)
	f.Fuzz(func(t *testing.T, raw []byte) {
		out, err := manifest.Canonicalize(raw, manifest.Limits{})
		if err != nil {
			return
		}
		again, err := manifest.Canonicalize(out, manifest.Limits{})
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("not a fixed point: %v", err)
		}
	})
}

// FuzzParseToolNode checks that every accepted node is the canonical
// encoding of what it decodes to.
func FuzzParseToolNode(f *testing.F) {
	for _, s := range []string{
		"urn:xmpp:agent-tool:0#1.4.0#Zm9yZWNhc3QuZ2V0",
		"urn:xmpp:agent-tool:0#1#Zm9vYg==",
		"urn:xmpp:agent-tool:0#1#Zm9vYh",
		"urn:xmpp:agent-tool:0#1#_w",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, node string) {
		v, name, err := manifest.ParseToolNode(node)
		if err != nil {
			return
		}
		if got := manifest.ToolNode(v, name); got != node {
			t.Fatalf("ParseToolNode(%q) = %q, %q, which encodes as %q", node, v, name, got)
		}
		if !manifest.ValidVersion(v) || !manifest.ValidToolName(name) {
			t.Fatalf("accepted invalid parts %q, %q", v, name)
		}
	})
}

// FuzzParseToolsNode checks that every accepted tools node is the
// canonical encoding of its version.
func FuzzParseToolsNode(f *testing.F) {
	for _, s := range []string{"urn:xmpp:agent-tools:0#1.4.0", "urn:xmpp:agent-tools:0#", "urn:xmpp:agent-tools:0#a#b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, node string) {
		v, err := manifest.ParseToolsNode(node)
		if err != nil {
			return
		}
		if got := manifest.ToolsNode(v); got != node {
			t.Fatalf("ParseToolsNode(%q) = %q, which encodes as %q", node, v, got)
		}
	})
}

// FuzzCompileSchema compiles any JSON Schema under the version-0 rules
// and, when it compiles, validates any JSON instance with it under the
// budget: neither may panic, and the budget's verdict is either a refusal
// (KindTooLarge) or the validator's own.
func FuzzCompileSchema(f *testing.F) {
	for _, s := range [][2]string{
		{`{"type":"object","properties":{"city":{"type":"string","pattern":"^[A-Z][a-z]+$"}},"required":["city"]}`, `{"city":"Paris"}`},
		{`{"type":"object","$defs":{"n":{"anyOf":[{"type":"array","items":{"$ref":"#/$defs/n"}},{"type":"integer"}]}},"properties":{"a":{"$ref":"#/$defs/n"}}}`, `{"a":[[1],[[2]]]}`},
		{`{"type":"object","properties":{"ids":{"type":"array","uniqueItems":true,"items":{"enum":[1,2,3]}}}}`, `{"ids":[1,2,2]}`},
		{`{"type":"object","$dynamicAnchor":"x","properties":{"k":{"$dynamicRef":"#x"}},"patternProperties":{"^p":{"const":1}},"additionalProperties":false}`, `{"k":{"p1":1}}`},
		{`{"type":"object","dependentSchemas":{"a":{"required":["b"]}},"if":{"required":["c"]},"then":{"minProperties":2},"else":{"not":{}}}`, `{"a":1}`},
		{`{"type":"object","prefixItems":[{"type":"string"}],"contains":{"type":"number"},"unevaluatedItems":false}`, `[]`},
	} {
		f.Add([]byte(s[0]), []byte(s[1]))
	}
	f.Fuzz(func(t *testing.T, schema, instance []byte) {
		if len(schema)+len(instance) > 64<<10 {
			return
		}
		v, err := manifest.CompileValidator(schema, false, manifest.Options{})
		if err != nil {
			var me *manifest.Error
			if !errors.As(err, &me) {
				t.Fatalf("error %T is not a *manifest.Error: %v", err, err)
			}
			return
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(instance))
		if err != nil {
			return
		}
		err = v.Validate(doc)
		var me *manifest.Error
		if errors.As(err, &me) && me.Kind != manifest.KindTooLarge {
			t.Fatalf("budget error of kind %v: %v", me.Kind, err)
		}
	})
}
