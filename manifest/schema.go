package manifest

import (
	"bytes"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Version-0 tool schema dialect (ProtoXEP "Retrieving Tool Schemas").
const (
	// Dialect2020 is the only $schema value version 0 accepts; an absent
	// $schema selects it too.
	Dialect2020 = "https://json-schema.org/draft/2020-12/schema"
	// vocabPrefix2020 prefixes the 2020-12 vocabulary URIs.
	vocabPrefix2020 = "https://json-schema.org/draft/2020-12/vocab/"
	// schemaBaseURL is the retrieval URI under which a tool schema is
	// compiled. The .invalid TLD (RFC 6761) can never resolve, and a
	// relative $ref against it is refused by the loader like any other.
	schemaBaseURL = "https://agentgw.invalid/tool-schema.json"
)

// supportedVocabs are the 2020-12 vocabularies version 0 implements, by
// their name below vocabPrefix2020. format-assertion is absent on purpose:
// "format" is annotation-only, so a schema requiring assertion fails.
var supportedVocabs = map[string]bool{
	"core":              true,
	"applicator":        true,
	"unevaluated":       true,
	"validation":        true,
	"meta-data":         true,
	"format-annotation": true,
	"content":           true,
}

// keywordClass says how the walk treats a keyword's value.
type keywordClass int

const (
	kwData        keywordClass = iota // data (const, enum, default…): never walked
	kwSchema                          // one subschema
	kwSchemaMap                       // object whose member values are subschemas
	kwSchemaArray                     // array of subschemas
	kwDependency                      // object of subschemas or string arrays
)

// keywords lists every keyword version 0 accepts: the 2020-12 core,
// applicator, unevaluated, validation, meta-data, format-annotation and
// content vocabularies, plus "definitions" and "dependencies", which the
// 2020-12 meta-schema itself still defines for compatibility and which the
// validator implements. Anything else fails closed, except members whose
// name starts with "x-", which are treated as annotations and ignored.
var keywords = map[string]keywordClass{
	// Core.
	"$id": kwData, "$schema": kwData, "$ref": kwData, "$anchor": kwData,
	"$dynamicRef": kwData, "$dynamicAnchor": kwData, "$vocabulary": kwData,
	"$comment": kwData, "$defs": kwSchemaMap,
	// Applicator.
	"prefixItems": kwSchemaArray, "items": kwSchema, "contains": kwSchema,
	"additionalProperties": kwSchema, "properties": kwSchemaMap,
	"patternProperties": kwSchemaMap, "dependentSchemas": kwSchemaMap,
	"propertyNames": kwSchema, "if": kwSchema, "then": kwSchema, "else": kwSchema,
	"allOf": kwSchemaArray, "anyOf": kwSchemaArray, "oneOf": kwSchemaArray,
	"not": kwSchema,
	// Unevaluated.
	"unevaluatedItems": kwSchema, "unevaluatedProperties": kwSchema,
	// Validation.
	"type": kwData, "const": kwData, "enum": kwData, "multipleOf": kwData,
	"maximum": kwData, "exclusiveMaximum": kwData, "minimum": kwData,
	"exclusiveMinimum": kwData, "maxLength": kwData, "minLength": kwData,
	"pattern": kwData, "maxItems": kwData, "minItems": kwData,
	"uniqueItems": kwData, "maxContains": kwData, "minContains": kwData,
	"maxProperties": kwData, "minProperties": kwData, "required": kwData,
	"dependentRequired": kwData,
	// Meta-data.
	"title": kwData, "description": kwData, "default": kwData,
	"deprecated": kwData, "readOnly": kwData, "writeOnly": kwData,
	"examples": kwData,
	// Format-annotation.
	"format": kwData,
	// Content (annotations only; contentSchema is still a schema).
	"contentEncoding": kwData, "contentMediaType": kwData, "contentSchema": kwSchema,
	// Compatibility keywords of the 2020-12 meta-schema.
	"definitions": kwSchemaMap, "dependencies": kwDependency,
}

// olderDialects names the dialects a $schema may select that version 0
// refuses, keyed by URI without scheme and without an empty fragment.
var olderDialects = map[string]string{
	"json-schema.org/draft-04/schema":      "draft-04",
	"json-schema.org/draft-06/schema":      "draft-06",
	"json-schema.org/draft-07/schema":      "draft-07",
	"json-schema.org/draft/2019-09/schema": "2019-09",
	"json-schema.org/schema":               "unversioned (latest)",
	"json-schema.org/draft/2020-12/schema": "2020-12 spelled with http",
}

// CompileSchema compiles a tool schema under the version-0 rules and
// returns the validator for later argument or result validation.
//
// The schema must be a JSON object of at most opts.Limits.MaxSchemaBytes
// that passes the I-JSON checks of Canonicalize; with input set, its root
// must declare "type":"object". It must use JSON Schema 2020-12, only known
// keywords (see the package documentation), RE2-compatible regular
// expressions within the pattern limits, no more in-place applicators
// than Limits.MaxApplicators, and no external $ref outside
// opts.AllowedRefs. Nothing is ever loaded from the network or the file
// system by this package.
//
// The returned schema validates without any work budget; CompileValidator
// returns one that keeps to Limits.MaxValidationSteps.
func CompileSchema(canonical []byte, input bool, opts Options) (*jsonschema.Schema, error) {
	v, err := CompileValidator(canonical, input, opts)
	if err != nil {
		return nil, err
	}
	return v.root, nil
}

// CompileValidator is CompileSchema, returning a Validator whose
// validations run under the budget of opts.Limits.
func CompileValidator(canonical []byte, input bool, opts Options) (*Validator, error) {
	lim := opts.Limits.withDefaults()
	if len(canonical) > lim.MaxSchemaBytes {
		return nil, newError(KindTooLarge, "",
			fmt.Sprintf("schema is %d bytes, limit is %d", len(canonical), lim.MaxSchemaBytes))
	}
	if err := checkJSON(canonical, lim); err != nil {
		return nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(canonical))
	if err != nil {
		return nil, wrapError(KindMalformed, "", "schema is not valid JSON", err)
	}
	return compileSchema(doc, "", input, opts, lim, new(int))
}

// compileSchema applies the version-0 rules to a decoded schema; path is
// the sanitized pointer that prefixes every error location. regexCost
// accumulates the cost of the regular expressions across the schemas of
// one manifest.
func compileSchema(doc any, path string, input bool, opts Options, lim Limits, regexCost *int) (*Validator, error) {
	obj, ok := doc.(map[string]any)
	if !ok {
		return nil, newError(KindInvalid, path, "schema must be a JSON object")
	}
	if input && obj["type"] != "object" {
		return nil, newError(KindInvalid, path, `root must be an object schema ("type":"object")`)
	}
	w := &walker{lim: lim, regexCost: regexCost}
	if err := w.schema(doc, path); err != nil {
		return nil, err
	}

	c := NewCompiler()
	c.UseLoader(&refLoader{opts: opts, lim: lim, path: path, regexCost: regexCost})
	// Every pattern was bounded by the walk (or, in a loaded document, by
	// the loader's walk); the engine compiles each one once.
	c.UseRegexpEngine(regexpEngine(lim))
	if err := c.AddResource(schemaBaseURL, doc); err != nil {
		return nil, wrapError(KindInvalid, path, "schema cannot be registered for compilation",
			fmt.Errorf("add resource: %w", err))
	}
	sch, err := c.Compile(schemaBaseURL)
	if err != nil {
		return nil, compileError(err, path)
	}
	nodes, err := checkCompiled(sch, path)
	if err != nil {
		return nil, err
	}
	v := &Validator{root: sch, lim: lim, dynamic: make(map[string][]*jsonschema.Schema)}
	for _, s := range nodes {
		if s.DynamicAnchor != "" {
			v.dynamic[s.DynamicAnchor] = append(v.dynamic[s.DynamicAnchor], s)
		}
	}
	if err := checkApplicators(nodes, v.dynamic, lim, path); err != nil {
		return nil, err
	}
	return v, nil
}

// checkCompiled walks the compiled schema graph and rejects any subschema
// compiled under a dialect other than 2020-12. The walk over the source
// catches every $schema, but a $ref may still reach one of the older
// meta-schemas the library embeds, such as
// "https://json-schema.org/draft-07/schema#/definitions/nonNegativeInteger".
// It returns every subschema of the graph.
func checkCompiled(root *jsonschema.Schema, path string) ([]*jsonschema.Schema, error) {
	seen := make(map[*jsonschema.Schema]bool)
	var all []*jsonschema.Schema
	stack := []*jsonschema.Schema{root}
	push := func(ss ...*jsonschema.Schema) {
		for _, s := range ss {
			if s != nil && !seen[s] {
				seen[s] = true
				stack = append(stack, s)
			}
		}
	}
	pushAny := func(v any) {
		switch v := v.(type) {
		case *jsonschema.Schema:
			push(v)
		case []*jsonschema.Schema:
			push(v...)
		}
	}
	seen[root] = true
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		all = append(all, s)
		if s.DraftVersion != 2020 {
			return nil, newError(KindInvalid, path,
				"a reference reaches a schema of a dialect other than JSON Schema 2020-12")
		}
		push(s.Ref, s.RecursiveRef, s.Not, s.If, s.Then, s.Else, s.PropertyNames,
			s.UnevaluatedProperties, s.Contains, s.Items2020, s.UnevaluatedItems, s.ContentSchema)
		if s.DynamicRef != nil {
			push(s.DynamicRef.Ref)
		}
		push(s.AllOf...)
		push(s.AnyOf...)
		push(s.OneOf...)
		push(s.PrefixItems...)
		for _, sub := range s.Properties {
			push(sub)
		}
		for _, sub := range s.PatternProperties {
			push(sub)
		}
		for _, sub := range s.DependentSchemas {
			push(sub)
		}
		for _, dep := range s.Dependencies {
			pushAny(dep)
		}
		pushAny(s.AdditionalProperties)
		pushAny(s.Items)
		pushAny(s.AdditionalItems)
	}
	return all, nil
}

// walker checks every schema object reachable through schema-valued
// keywords. It never descends into data-valued keywords such as const,
// enum, default or examples, whose contents are instances, not schemas.
type walker struct {
	lim      Limits
	nodes    int
	patterns int
	// regexCost is shared by the walks of one manifest's schemas.
	regexCost *int
}

func (w *walker) schema(v any, path string) error {
	obj, ok := v.(map[string]any)
	if !ok {
		// Booleans are valid schemas; any other type is reported by the
		// meta-schema during compilation.
		return nil
	}
	w.nodes++
	if w.nodes > w.lim.MaxSchemaNodes {
		return newError(KindTooLarge, path,
			fmt.Sprintf("schema has more than %d subschemas", w.lim.MaxSchemaNodes))
	}
	// Sorted, so that the first error reported is deterministic.
	names := make([]string, 0, len(obj))
	for k := range obj {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		val := obj[k]
		if strings.HasPrefix(k, "x-") {
			continue
		}
		class, known := keywords[k]
		if !known {
			return newError(KindInvalid, path, fmt.Sprintf(
				"unsupported keyword %s: version 0 rejects unknown keywords (prefix annotations with \"x-\")",
				safeIdent(k)))
		}
		kpath := joinPointer(path, k)
		if err := w.keyword(k, val, kpath); err != nil {
			return err
		}
		switch class {
		case kwSchema:
			if err := w.schema(val, kpath); err != nil {
				return err
			}
		case kwSchemaMap, kwDependency:
			m, ok := val.(map[string]any)
			if !ok {
				continue
			}
			members := make([]string, 0, len(m))
			for name := range m {
				members = append(members, name)
			}
			slices.Sort(members)
			for _, name := range members {
				mpath := joinPointer(kpath, name)
				if k == "patternProperties" {
					if err := w.pattern(name, mpath); err != nil {
						return err
					}
				}
				if err := w.schema(m[name], mpath); err != nil {
					return err
				}
			}
		case kwSchemaArray:
			arr, ok := val.([]any)
			if !ok {
				continue
			}
			for i, sub := range arr {
				if err := w.schema(sub, joinPointer(kpath, fmt.Sprint(i))); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// keyword applies the value checks of individual keywords.
func (w *walker) keyword(k string, val any, path string) error {
	switch k {
	case "$schema":
		return checkDialect(val, path)
	case "$vocabulary":
		return checkVocabulary(val, path)
	case "pattern":
		if p, ok := val.(string); ok {
			return w.pattern(p, path)
		}
	case "$ref", "$dynamicRef":
		if ref, ok := val.(string); ok && !validRefFragment(ref) {
			return newError(KindInvalid, path,
				"reference fragment must point at a subschema through schema keywords")
		}
	}
	return nil
}

// checkDialect enforces "JSON Schema 2020-12 only". The library would
// happily compile older drafts, so this is decided here.
func checkDialect(val any, path string) error {
	s, ok := val.(string)
	if !ok || s == Dialect2020 || s == Dialect2020+"#" {
		// A non-string is reported by the meta-schema.
		return nil
	}
	key := strings.TrimSuffix(s, "#")
	if rest, ok := strings.CutPrefix(key, "https://"); ok {
		key = rest
	} else if rest, ok := strings.CutPrefix(key, "http://"); ok {
		key = rest
	}
	name := ""
	if d, ok := olderDialects[key]; ok {
		name = " " + d
	}
	return newError(KindInvalid, path, fmt.Sprintf(
		"unsupported dialect%s: version 0 accepts only JSON Schema 2020-12 (omit $schema or use %s)",
		name, Dialect2020))
}

// checkVocabulary fails when a vocabulary declared true is not supported.
// Vocabularies declared false are optional and ignored.
func checkVocabulary(val any, path string) error {
	m, ok := val.(map[string]any)
	if !ok {
		return nil // reported by the meta-schema
	}
	uris := make([]string, 0, len(m))
	for u := range m {
		uris = append(uris, u)
	}
	slices.Sort(uris)
	for _, u := range uris {
		if required, _ := m[u].(bool); !required {
			continue
		}
		if name, ok := strings.CutPrefix(u, vocabPrefix2020); ok && supportedVocabs[name] {
			continue
		}
		return newError(KindInvalid, path,
			fmt.Sprintf("$vocabulary %s is required but unsupported", safeVocab(u)))
	}
	return nil
}

// safeVocab renders a vocabulary URI for a message when it is safe to echo.
func safeVocab(u string) string {
	if isSafeIdent(u) {
		return u
	}
	return "(unprintable URI)"
}

// backreference finds ECMA-262 backreferences, which RE2 lacks, to explain
// why such a pattern fails to compile.
var backreference = regexp.MustCompile(`\\[1-9]|\\k<`)

// pattern checks one regular expression: valid Go RE2 syntax, whose
// matching time is linear in the input, and within the limits on its
// length, its compiled size, the patterns per schema and their summed
// cost. It parses the pattern but does not compile it.
func (w *walker) pattern(p, path string) error {
	w.patterns++
	if w.patterns > w.lim.MaxPatterns {
		return newError(KindTooLarge, path,
			fmt.Sprintf("schema has more than %d regular expressions", w.lim.MaxPatterns))
	}
	cost, err := parsePattern(p, path, w.lim)
	if err != nil {
		return err
	}
	*w.regexCost += cost
	if *w.regexCost > w.lim.MaxRegexCost {
		return newError(KindTooLarge, path, fmt.Sprintf(
			"regular expressions compile to more than %d instructions in all", w.lim.MaxRegexCost))
	}
	return nil
}

// validRefFragment reports whether a $ref's JSON-pointer fragment, if any,
// descends only through schema-valued keywords. Without this check a
// reference such as "#/x-data" or "#/default" would make the validator
// compile data as a schema, bypassing the keyword walk. Anchor fragments
// name schema objects and are always acceptable.
func validRefFragment(ref string) bool {
	_, frag, ok := strings.Cut(ref, "#")
	if !ok {
		return true
	}
	// Decoded the same way the validator decodes it.
	frag, err := url.PathUnescape(frag)
	if err != nil {
		return false
	}
	if !strings.HasPrefix(frag, "/") {
		return true
	}
	const (
		wantKeyword = iota
		wantMember
		wantIndex
	)
	state := wantKeyword
	for _, seg := range strings.Split(frag[1:], "/") {
		seg = strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
		switch state {
		case wantKeyword:
			switch keywords[seg] {
			case kwSchema:
			case kwSchemaMap, kwDependency:
				state = wantMember
			case kwSchemaArray:
				state = wantIndex
			default: // data keywords and unknown names
				return false
			}
		case wantMember:
			state = wantKeyword
		case wantIndex:
			if seg == "" || strings.Trim(seg, "0123456789") != "" {
				return false
			}
			state = wantKeyword
		}
	}
	return state == wantKeyword
}
