package manifest_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"agentgw/manifest"
)

// compile canonicalizes and compiles a schema the way Parse does.
func compile(t *testing.T, schema string, input bool, opts manifest.Options) error {
	t.Helper()
	canon, err := manifest.Canonicalize([]byte(schema), opts.Limits)
	if err != nil {
		return err
	}
	_, err = manifest.CompileSchema(canon, input, opts)
	return err
}

func TestCompileSchemaAccepts(t *testing.T) {
	for _, tc := range []struct {
		name   string
		schema string
		input  bool
	}{
		{"explicit 2020-12", `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object"}`, true},
		{"2020-12 with empty fragment", `{"$schema":"https://json-schema.org/draft/2020-12/schema#","type":"object"}`, true},
		{"data keywords are not walked", `{"type":"object",
			"default":{"frobnicate":1},"examples":[{"$ref":"file:///etc/passwd"}],
			"properties":{"a":{"enum":[{"nullable":true}]},"b":{"const":{"$schema":"http://json-schema.org/draft-07/schema#"}}}}`, true},
		{"x- annotations are not walked", `{"type":"object","x-ui":{"frobnicate":1,"pattern":"(?<=a)"}}`, true},
		{"every 2020-12 vocabulary", `{"type":"object","$id":"https://agents.example/s","$comment":"c",
			"$defs":{"s":{"$anchor":"str","type":"string","minLength":1,"maxLength":9,"pattern":"^[a-z]+$","format":"email",
				"contentEncoding":"base64","contentMediaType":"application/json","contentSchema":{"type":"object"}}},
			"properties":{"a":{"$ref":"#str"},"b":{"$ref":"#/$defs/s"},
				"n":{"type":"number","minimum":0,"maximum":10,"exclusiveMinimum":-1,"exclusiveMaximum":11,"multipleOf":0.5},
				"l":{"type":"array","prefixItems":[{"type":"string"}],"items":{"type":"integer"},"contains":{"const":1},
					"minContains":1,"maxContains":2,"minItems":1,"maxItems":5,"uniqueItems":true,"unevaluatedItems":false},
				"o":{"type":"object","patternProperties":{"^x-":true},"propertyNames":{"maxLength":8},
					"minProperties":0,"maxProperties":3,"dependentRequired":{"a":["b"]},"dependentSchemas":{"a":{"required":["c"]}},
					"unevaluatedProperties":false},
				"c":{"if":{"type":"string"},"then":{"minLength":1},"else":{"not":{"type":"null"}}},
				"d":{"allOf":[true],"anyOf":[{"type":"string"}],"oneOf":[{"type":"string"}],
					"title":"t","description":"d","deprecated":true,"readOnly":true,"writeOnly":false}},
			"required":["a"],"additionalProperties":false}`, true},
		{"dynamic references", `{"type":"object","$dynamicAnchor":"node","properties":{"child":{"$dynamicRef":"#node"}}}`, true},
		{"compatibility keywords", `{"type":"object","definitions":{"a":{"type":"string"}},
			"properties":{"x":{"$ref":"#/definitions/a"}},"dependencies":{"x":["y"],"y":{"required":["x"]}}}`, true},
		{"deep pointer ref", `{"type":"object","properties":{"a":{"type":"array","items":{"anyOf":[{"type":"string"}]}}},
			"$defs":{"b":{"$ref":"#/properties/a/items/anyOf/0"}}}`, true},
		{"optional unknown vocabulary", `{"type":"object","$vocabulary":{"https://example.org/vocab":false,
			"https://json-schema.org/draft/2020-12/vocab/core":true}}`, true},
		{"output schema may be any type", `{"type":"string"}`, false},
		{"ref to the 2020-12 meta-schema", `{"type":"object","properties":{"s":{"$ref":"https://json-schema.org/draft/2020-12/schema"}}}`, true},
		{"input root with more keywords", `{"type":"object","properties":{},"additionalProperties":{"type":"string"}}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := compile(t, tc.schema, tc.input, manifest.Options{}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestCompileSchemaRejects(t *testing.T) {
	for _, tc := range []struct {
		name   string
		schema string
		lim    manifest.Limits
		kind   manifest.Kind
		path   string
		msg    string
	}{
		{"boolean root", `true`, manifest.Limits{}, manifest.KindInvalid, "", "schema must be a JSON object"},
		{"unknown keyword", `{"type":"object","frobnicate":3}`, manifest.Limits{}, manifest.KindInvalid, "", `unsupported keyword "frobnicate"`},
		{"OpenAPI nullable", `{"type":"object","properties":{"a":{"type":"string","nullable":true}}}`, manifest.Limits{},
			manifest.KindInvalid, "/properties/a", `unsupported keyword "nullable"`},
		{"2019-09 additionalItems", `{"type":"object","properties":{"a":{"items":{},"additionalItems":false}}}`, manifest.Limits{},
			manifest.KindInvalid, "/properties/a", `unsupported keyword "additionalItems"`},
		{"2019-09 recursive ref", `{"type":"object","$recursiveRef":"#"}`, manifest.Limits{}, manifest.KindInvalid, "", `unsupported keyword "$recursiveRef"`},
		{"unknown keyword in array subschema", `{"type":"object","allOf":[{},{"foo":1}]}`, manifest.Limits{},
			manifest.KindInvalid, "/allOf/1", `unsupported keyword "foo"`},
		{"unknown keyword with unsafe name", `{"type":"object","not":{"<b>":1}}`, manifest.Limits{},
			manifest.KindInvalid, "/not", "unsupported keyword *"},
		{"draft-07", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object"}`, manifest.Limits{},
			manifest.KindInvalid, "/$schema", "unsupported dialect draft-07"},
		{"draft-04", `{"$schema":"http://json-schema.org/draft-04/schema#","type":"object"}`, manifest.Limits{},
			manifest.KindInvalid, "/$schema", "unsupported dialect draft-04"},
		{"2019-09", `{"$schema":"https://json-schema.org/draft/2019-09/schema","type":"object"}`, manifest.Limits{},
			manifest.KindInvalid, "/$schema", "unsupported dialect 2019-09"},
		{"http 2020-12", `{"$schema":"http://json-schema.org/draft/2020-12/schema","type":"object"}`, manifest.Limits{},
			manifest.KindInvalid, "/$schema", "unsupported dialect 2020-12 spelled with http"},
		{"unversioned", `{"$schema":"https://json-schema.org/schema","type":"object"}`, manifest.Limits{},
			manifest.KindInvalid, "/$schema", "unsupported dialect unversioned (latest)"},
		{"custom meta-schema", `{"$schema":"https://example.org/meta","type":"object"}`, manifest.Limits{},
			manifest.KindInvalid, "/$schema", "unsupported dialect: version 0 accepts only JSON Schema 2020-12"},
		{"nested older dialect", `{"type":"object","$defs":{"a":{"$id":"https://x.example/a","$schema":"http://json-schema.org/draft-07/schema#"}}}`,
			manifest.Limits{}, manifest.KindInvalid, "/$defs/a/$schema", "unsupported dialect draft-07"},
		{"required unknown vocabulary", `{"type":"object","$vocabulary":{"https://example.org/vocab":true}}`, manifest.Limits{},
			manifest.KindInvalid, "/$vocabulary", "$vocabulary https://example.org/vocab is required but unsupported"},
		{"required format assertion", `{"type":"object","$vocabulary":{"https://json-schema.org/draft/2020-12/vocab/format-assertion":true}}`,
			manifest.Limits{}, manifest.KindInvalid, "/$vocabulary", "format-assertion is required but unsupported"},
		{"lookbehind", `{"type":"object","properties":{"a":{"pattern":"(?<=a)b"}}}`, manifest.Limits{},
			manifest.KindInvalid, "/properties/a/pattern", "regular expression not supported: lookaround"},
		{"lookahead in patternProperties", `{"type":"object","patternProperties":{"^(?!x)":{}}}`, manifest.Limits{},
			manifest.KindInvalid, "/patternProperties/*", "regular expression not supported: lookaround"},
		{"backreference", `{"type":"object","properties":{"a":{"pattern":"(a)\\1"}}}`, manifest.Limits{},
			manifest.KindInvalid, "/properties/a/pattern", "regular expression not supported: backreference"},
		{"bad regex", `{"type":"object","properties":{"a":{"pattern":"("}}}`, manifest.Limits{},
			manifest.KindInvalid, "/properties/a/pattern", "regular expression not supported: missing closing )"},
		{"pattern too long", `{"type":"object","properties":{"a":{"pattern":"` + strings.Repeat("a", 40) + `"}}}`,
			manifest.Limits{MaxPatternBytes: 32}, manifest.KindTooLarge, "/properties/a/pattern", "regular expression is 40 bytes, limit is 32"},
		{"too many subschemas", `{"type":"object","allOf":[{},{},{},{}]}`, manifest.Limits{MaxSchemaNodes: 4},
			manifest.KindTooLarge, "/allOf/3", "more than 4 subschemas"},
		{"schema too large", `{"type":"object","description":"` + strings.Repeat("d", 100) + `"}`, manifest.Limits{MaxSchemaBytes: 64},
			manifest.KindTooLarge, "", "limit is 64"},
		{"ref into an annotation", `{"type":"object","x-s":{"frobnicate":1},"properties":{"a":{"$ref":"#/x-s"}}}`, manifest.Limits{},
			manifest.KindInvalid, "/properties/a/$ref", "reference fragment must point at a subschema"},
		{"ref into default", `{"type":"object","default":{"frobnicate":1},"properties":{"a":{"$ref":"#/default"}}}`, manifest.Limits{},
			manifest.KindInvalid, "/properties/a/$ref", "reference fragment must point at a subschema"},
		{"ref to a schema map", `{"type":"object","properties":{"a":{"$ref":"#/properties"}}}`, manifest.Limits{},
			manifest.KindInvalid, "/properties/a/$ref", "reference fragment must point at a subschema"},
		{"percent-encoded ref into data", `{"type":"object","enum":[{"frobnicate":1}],"properties":{"a":{"$ref":"#/%65num/0"}}}`, manifest.Limits{},
			manifest.KindInvalid, "/properties/a/$ref", "reference fragment must point at a subschema"},
		{"missing ref target", `{"type":"object","properties":{"a":{"$ref":"#/$defs/none"}}}`, manifest.Limits{},
			manifest.KindInvalid, "", "reference target not found"},
		{"missing anchor", `{"type":"object","properties":{"a":{"$ref":"#nowhere"}}}`, manifest.Limits{},
			manifest.KindInvalid, "", "reference target not found"},
		{"meta-schema violation", `{"type":"object","properties":{"a":{"minLength":-1}}}`, manifest.Limits{},
			manifest.KindInvalid, "/properties/a/minLength", "invalid schema"},
		{"ref into an older embedded meta-schema", `{"type":"object","properties":{"n":{"$ref":"http://json-schema.org/draft-07/schema#/definitions/nonNegativeInteger"}}}`,
			manifest.Limits{}, manifest.KindInvalid, "", "dialect other than JSON Schema 2020-12"},
		{"file ref", `{"type":"object","$ref":"file:///etc/passwd"}`, manifest.Limits{},
			manifest.KindInvalid, "", `external reference "file:///etc/passwd" is not allowed`},
		{"relative ref against a file base", `{"type":"object","$id":"file:///etc/","$ref":"passwd"}`, manifest.Limits{},
			manifest.KindInvalid, "", `external reference "file:///etc/passwd" is not allowed`},
		{"https ref", `{"type":"object","$ref":"https://schemas.example/a.json"}`, manifest.Limits{},
			manifest.KindInvalid, "", `external reference "https://schemas.example/a.json" is not allowed`},
		{"relative ref", `{"type":"object","$ref":"other.json"}`, manifest.Limits{},
			manifest.KindInvalid, "", `external reference "https://agentgw.invalid/other.json" is not allowed`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := compile(t, tc.schema, true, manifest.Options{Limits: tc.lim})
			checkError(t, err, tc.kind, tc.path, tc.msg)
		})
	}
}

func checkError(t *testing.T, err error, kind manifest.Kind, path, msg string) {
	t.Helper()
	if err == nil {
		t.Fatal("accepted")
	}
	t.Log(err)
	var e *manifest.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v is %T, not *manifest.Error", err, err)
	}
	if e.Kind != kind {
		t.Errorf("kind = %v, want %v", e.Kind, kind)
	}
	if e.Path != path {
		t.Errorf("path = %q, want %q", e.Path, path)
	}
	if !strings.Contains(e.Msg, msg) {
		t.Errorf("message %q does not contain %q", e.Msg, msg)
	}
}

// TestFileRefNeverRead points a $ref at a real file and checks that its
// contents are neither loaded nor reflected anywhere in the error chain.
func TestFileRefNeverRead(t *testing.T) {
	dir := t.TempDir()
	const secret = `{"type":"string","description":"SECRET-CONTENT"}`
	path := filepath.Join(dir, "secret.json")
	if err := os.WriteFile(path, []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, schema := range []string{
		fmt.Sprintf(`{"type":"object","properties":{"a":{"$ref":"file://%s"}}}`, path),
		fmt.Sprintf(`{"type":"object","$id":"file://%s/","properties":{"a":{"$ref":"secret.json"}}}`, dir),
	} {
		raw := manifestWithTool(`{"name":"t","inputSchema":` + schema + `}`)
		_, err := manifest.Parse([]byte(raw), manifest.Options{})
		if err == nil {
			t.Fatal("file reference accepted")
		}
		for e := err; e != nil; e = errors.Unwrap(e) {
			if strings.Contains(e.Error(), "SECRET") {
				t.Fatalf("error chain reflects the file: %v", e)
			}
		}
		if !strings.Contains(err.Error(), "is not allowed") {
			t.Errorf("unclear error: %v", err)
		}
	}
}

func TestAllowedRefs(t *testing.T) {
	docs := map[string]string{
		"https://schemas.example/common/city.json":  `{"type":"string","minLength":1}`,
		"https://schemas.example/common/bad.json":   `{"type":"string","frobnicate":1}`,
		"https://schemas.example/common/chain.json": `{"$ref":"city.json"}`,
		"https://schemas.example/commonevil/x.json": `{"type":"string"}`,
	}
	var loads []string
	load := func(u string) ([]byte, error) {
		loads = append(loads, u)
		d, ok := docs[u]
		if !ok {
			return nil, errors.New("not found")
		}
		return []byte(d), nil
	}
	ref := func(u string) string {
		return `{"type":"object","properties":{"city":{"$ref":"` + u + `"}},"required":["city"]}`
	}
	allowed := []string{"https://schemas.example/common"}

	t.Run("allowed", func(t *testing.T) {
		loads = nil
		canon, err := manifest.Canonicalize([]byte(ref("https://schemas.example/common/city.json")), manifest.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		sch, err := manifest.CompileSchema(canon, true, manifest.Options{AllowedRefs: allowed, LoadRef: load})
		if err != nil {
			t.Fatal(err)
		}
		if err := sch.Validate(map[string]any{"city": "Paris"}); err != nil {
			t.Errorf("valid instance rejected: %v", err)
		}
		if err := sch.Validate(map[string]any{"city": ""}); err == nil {
			t.Error("the referenced minLength was not applied")
		}
		if len(loads) != 1 {
			t.Errorf("loads = %v", loads)
		}
	})
	for _, tc := range []struct {
		name string
		url  string
		opts manifest.Options
		kind manifest.Kind
		msg  string
	}{
		{"no loader", "https://schemas.example/common/city.json", manifest.Options{AllowedRefs: allowed},
			manifest.KindInvalid, "allowlisted but no loader is configured"},
		{"prefix boundary", "https://schemas.example/commonevil/x.json", manifest.Options{AllowedRefs: allowed, LoadRef: load},
			manifest.KindInvalid, "is not allowed"},
		{"dot segments", "https://schemas.example/common/%2e%2e/commonevil/x.json", manifest.Options{AllowedRefs: allowed, LoadRef: load},
			manifest.KindInvalid, "is not allowed"},
		{"load failure", "https://schemas.example/common/missing.json", manifest.Options{AllowedRefs: allowed, LoadRef: load},
			manifest.KindInvalid, "could not be loaded"},
		{"rules apply to loaded documents", "https://schemas.example/common/bad.json", manifest.Options{AllowedRefs: allowed, LoadRef: load},
			manifest.KindInvalid, `in external reference "https://schemas.example/common/bad.json" at /: unsupported keyword "frobnicate"`},
		{"load budget", "https://schemas.example/common/chain.json",
			manifest.Options{AllowedRefs: allowed, LoadRef: load, Limits: manifest.Limits{MaxRefLoads: 1}},
			manifest.KindTooLarge, "more than 1 external references"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := compile(t, ref(tc.url), true, tc.opts)
			checkError(t, err, tc.kind, "", tc.msg)
		})
	}
}

func TestCompiledSchemaValidates(t *testing.T) {
	canon, err := manifest.Canonicalize([]byte(forecastInput), manifest.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	sch, err := manifest.CompileSchema(canon, true, manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args  any
		valid bool
	}{
		{map[string]any{"city": "Paris"}, true},
		{map[string]any{}, false},
		{map[string]any{"city": 1}, false},
		{map[string]any{"city": "Paris", "extra": true}, false},
	} {
		if err := sch.Validate(tc.args); (err == nil) != tc.valid {
			t.Errorf("Validate(%v) = %v, want valid=%v", tc.args, err, tc.valid)
		}
	}
}

func TestFormatIsAnnotationOnly(t *testing.T) {
	canon, err := manifest.Canonicalize([]byte(`{"type":"object","properties":{"e":{"type":"string","format":"email"}}}`), manifest.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	sch, err := manifest.CompileSchema(canon, true, manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(map[string]any{"e": "not an email"}); err != nil {
		t.Errorf("format was asserted: %v", err)
	}
}
