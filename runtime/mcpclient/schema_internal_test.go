package mcpclient

import (
	"encoding/json"
	"strings"
	"testing"

	"agentgw/manifest"
)

const d07 = `"$schema":"http://json-schema.org/draft-07/schema#",`

// The draft-07 rewrite rules, one case each: {in, out} or {in, error}.
func TestTranslateSchema(t *testing.T) {
	for _, tc := range []struct {
		name, in, out, err string
	}{
		{"no $schema is 2020-12", `{"type":"object","definitions":{"a":{}}}`, `{"definitions":{"a":{}},"type":"object"}`, ""},
		{"2020-12 with http", `{"$schema":"http://json-schema.org/draft/2020-12/schema","type":"object"}`,
			`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object"}`, ""},
		{"2019-09 untouched", `{"$schema":"https://json-schema.org/draft/2019-09/schema","type":"object"}`,
			`{"$schema":"https://json-schema.org/draft/2019-09/schema","type":"object"}`, ""},
		{"definitions and refs", `{` + d07 + `"type":"object","definitions":{"a/b":{"type":"string"}},"properties":{"x":{"$ref":"#/definitions/a~1b"}}}`,
			`{"$defs":{"a/b":{"type":"string"}},"$schema":"https://json-schema.org/draft/2020-12/schema","properties":{"x":{"$ref":"#/$defs/a~1b"}},"type":"object"}`, ""},
		{"ref siblings", `{` + d07 + `"type":"object","properties":{"x":{"$ref":"#/definitions/s","description":"d","minLength":3}},"definitions":{"s":{"type":"string"}}}`,
			`{"$defs":{"s":{"type":"string"}},"$schema":"https://json-schema.org/draft/2020-12/schema","properties":{"x":{"$ref":"#/$defs/s","description":"d"}},"type":"object"}`, ""},
		{"root ref gets type object", `{` + d07 + `"$ref":"#/definitions/Args","definitions":{"Args":{"type":"object","properties":{}}}}`,
			`{"$defs":{"Args":{"properties":{},"type":"object"}},"$ref":"#/$defs/Args","$schema":"https://json-schema.org/draft/2020-12/schema","type":"object"}`, ""},
		{"array items", `{` + d07 + `"type":"object","properties":{"t":{"items":[{"type":"string"}],"additionalItems":{"type":"integer"}}}}`,
			`{"$schema":"https://json-schema.org/draft/2020-12/schema","properties":{"t":{"items":{"type":"integer"},"prefixItems":[{"type":"string"}]}},"type":"object"}`, ""},
		{"array items, open", `{` + d07 + `"type":"object","properties":{"t":{"items":[true]}}}`,
			`{"$schema":"https://json-schema.org/draft/2020-12/schema","properties":{"t":{"prefixItems":[true]}},"type":"object"}`, ""},
		{"ignored additionalItems", `{` + d07 + `"type":"object","properties":{"t":{"items":{},"additionalItems":false}}}`,
			`{"$schema":"https://json-schema.org/draft/2020-12/schema","properties":{"t":{"items":{}}},"type":"object"}`, ""},
		{"ref into array items", `{` + d07 + `"type":"object","properties":{"t":{"items":[{"type":"string"}]},"u":{"$ref":"#/properties/t/items/0"}}}`,
			`{"$schema":"https://json-schema.org/draft/2020-12/schema","properties":{"t":{"prefixItems":[{"type":"string"}]},"u":{"$ref":"#/properties/t/prefixItems/0"}},"type":"object"}`, ""},
		{"dependencies", `{` + d07 + `"type":"object","dependencies":{"a":["b"],"c":{"required":["d"]}}}`,
			`{"$schema":"https://json-schema.org/draft/2020-12/schema","dependentRequired":{"a":["b"]},"dependentSchemas":{"c":{"required":["d"]}},"type":"object"}`, ""},
		{"$id fragment", `{` + d07 + `"type":"object","properties":{"a":{"$id":"#A","type":"string"},"b":{"$ref":"#A"}}}`,
			`{"$schema":"https://json-schema.org/draft/2020-12/schema","properties":{"a":{"$anchor":"A","type":"string"},"b":{"$ref":"#A"}},"type":"object"}`, ""},
		{"nested draft-07 $schema", `{` + d07 + `"type":"object","properties":{"a":{` + d07 + `"type":"string"}}}`,
			`{"$schema":"https://json-schema.org/draft/2020-12/schema","properties":{"a":{"type":"string"}},"type":"object"}`, ""},
		{"unknown keyword kept", `{` + d07 + `"type":"object","nullable":true}`,
			`{"$schema":"https://json-schema.org/draft/2020-12/schema","nullable":true,"type":"object"}`, ""},
		{"later keyword", `{` + d07 + `"type":"object","unevaluatedProperties":false}`, "", "unevaluatedProperties is not part of draft-07"},
		{"nested other dialect", `{` + d07 + `"type":"object","properties":{"a":{"$schema":"http://json-schema.org/draft-04/schema#"}}}`, "", "nested $schema"},
		{"ref into ref siblings", `{` + d07 + `"type":"object","properties":{"a":{"$ref":"#/definitions/x","properties":{"b":{}}},"c":{"$ref":"#/properties/a/properties/b"}},"definitions":{"x":{}}}`, "", "draft-07 ignores"},
		{"ref to property dependency", `{` + d07 + `"type":"object","dependencies":{"a":["b"]},"properties":{"c":{"$ref":"#/dependencies/a"}}}`, "", "property dependency"},
		{"$id with fragment", `{` + d07 + `"type":"object","properties":{"a":{"$id":"a.json#x"}}}`, "", "$id with a fragment"},
	} {
		doc, err := decodeJSON([]byte(tc.in))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		out, _, err := translateSchema(doc, true)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		b, _ := json.Marshal(out)
		canon, err := manifest.Canonicalize(b, manifest.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if string(canon) != tc.out {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, canon, tc.out)
		}
	}
}

func TestElicitSchema(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   any
		out  string
		err  bool
	}{
		{"missing", nil, `{"properties":{},"type":"object"}`, false},
		{"duplicate enum keeps enum", json.RawMessage(`{"type":"object","properties":{"c":{"type":"string","enum":["a","a"],"enumNames":["A","B"]}}}`),
			`{"properties":{"c":{"enum":["a","a"],"type":"string"}},"type":"object"}`, false},
		{"lookahead", json.RawMessage(`{"type":"object","properties":{"c":{"type":"string","pattern":"(?=x)"}}}`), "", true},
	} {
		got, err := elicitSchema(tc.in)
		if tc.err {
			if err == nil {
				t.Errorf("%s: no error", tc.name)
			}
			continue
		}
		if err != nil || string(got) != tc.out {
			t.Errorf("%s: %s, %v", tc.name, got, err)
		}
	}
}

func TestSafeText(t *testing.T) {
	long := strings.Repeat("é", 5000)
	if got := safeText(long, 4096); len([]rune(got)) != 4096 || !strings.HasSuffix(got, "…") {
		t.Errorf("cut to %d characters", len([]rune(got)))
	}
	if got := safeText("a\uFFFEb\xff", 10); got != "a\uFFFDb\uFFFD" {
		t.Errorf("%q", got)
	}
}
