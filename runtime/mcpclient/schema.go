package mcpclient

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"agentgw/manifest"
)

// Version 0 accepts only JSON Schema 2020-12, and many MCP servers declare
// draft-07. Where a draft-07 schema has an exact 2020-12 equivalent, the
// import rewrites it (docs/mcp.md lists the rules as semantic changes);
// anything else is left as it is, and the version-0 check that follows
// reports why the tool is left out.

// Dialect URIs, without scheme and without an empty fragment.
const (
	dialect2020 = "json-schema.org/draft/2020-12/schema"
	dialect07   = "json-schema.org/draft-07/schema"
)

// errUntranslatable wraps the reason a draft-07 schema has no exact
// 2020-12 form.
var errUntranslatable = errors.New("no exact JSON Schema 2020-12 form")

// later2020 are keywords of 2019-09 and 2020-12 that draft-07 ignores as
// unknown. In 2020-12 they would start to assert, so a draft-07 schema
// using them has no exact translation.
var later2020 = []string{
	"$defs", "$anchor", "$dynamicRef", "$dynamicAnchor", "$recursiveRef",
	"$recursiveAnchor", "$vocabulary", "prefixItems", "dependentRequired",
	"dependentSchemas", "unevaluatedProperties", "unevaluatedItems",
	"minContains", "maxContains", "contentSchema", "deprecated",
}

// refAnnotations are the siblings of a draft-07 $ref that are kept: they
// assert nothing in either dialect (draft-07 ignores every sibling of
// $ref; 2020-12 would evaluate them).
var refAnnotations = []string{"title", "description", "default", "examples", "$comment", "readOnly", "writeOnly"}

// anchorName is the 2020-12 $anchor grammar.
var anchorName = regexp.MustCompile(`^[A-Za-z_][-A-Za-z0-9._]*$`)

// dialectOf returns a $schema value without its scheme and empty
// fragment, and whether it was spelled with http.
func dialectOf(v any) (string, bool) {
	s, _ := v.(string)
	s = strings.TrimSuffix(s, "#")
	if rest, ok := strings.CutPrefix(s, "https://"); ok {
		return rest, false
	}
	if rest, ok := strings.CutPrefix(s, "http://"); ok {
		return rest, true
	}
	return s, false
}

// translateSchema returns a version-0 form of a decoded tool schema (a
// value decoded with json.Number) and whether it was rewritten. A draft-07
// schema is translated; the http:// spelling of 2020-12 is corrected; any
// other schema is returned unchanged for the version-0 check to judge. An
// error means a draft-07 schema without an exact translation.
func translateSchema(doc any, input bool) (any, bool, error) {
	root, ok := doc.(map[string]any)
	if !ok {
		return doc, false, nil
	}
	sv, has := root["$schema"]
	if !has {
		return doc, false, nil
	}
	d, http := dialectOf(sv)
	switch {
	case d == dialect2020 && http:
		out := cloneMap(root)
		out["$schema"] = manifest.Dialect2020
		return out, true, nil
	case d != dialect07:
		return doc, false, nil
	}
	t := &translator{root: root}
	v, err := t.schema(root, "")
	if err != nil {
		return nil, false, fmt.Errorf("%w: %v", errUntranslatable, err)
	}
	out := v.(map[string]any)
	out["$schema"] = manifest.Dialect2020
	if input {
		typeFromRef(out)
	}
	return out, true, nil
}

// translator rewrites one draft-07 document.
type translator struct {
	root map[string]any
}

// schema translates one draft-07 schema value found at path.
func (t *translator) schema(v any, path string) (any, error) {
	m, ok := v.(map[string]any)
	if !ok {
		if _, isBool := v.(bool); isBool {
			return v, nil
		}
		return nil, fmt.Errorf("%s: a schema must be an object or a boolean", pathOrRoot(path))
	}
	if ref, has := m["$ref"]; has {
		return t.refSchema(m, ref, path)
	}
	out := make(map[string]any, len(m))
	for _, k := range sortedAny(m) {
		val := m[k]
		at := path + "/" + k
		if slices.Contains(later2020, k) {
			return nil, fmt.Errorf("%s: keyword %s is not part of draft-07", pathOrRoot(path), safeKey(k))
		}
		var err error
		switch k {
		case "$schema":
			if d, _ := dialectOf(val); d != dialect07 {
				return nil, fmt.Errorf("%s: a nested $schema of another dialect", pathOrRoot(path))
			}
			// The same dialect again: nothing to keep (the root's is set
			// to 2020-12).
		case "$id":
			s, _ := val.(string)
			switch {
			case strings.HasPrefix(s, "#"):
				// A plain-name fragment $id is a 2020-12 $anchor.
				name := s[1:]
				if !anchorName.MatchString(name) {
					return nil, fmt.Errorf("%s: $id fragment is not a valid anchor name", pathOrRoot(path))
				}
				out["$anchor"] = name
			case strings.Contains(s, "#"):
				return nil, fmt.Errorf("%s: $id with a fragment", pathOrRoot(path))
			default:
				out[k] = val
			}
		case "definitions":
			if out["$defs"], err = t.schemaMap(val, at); err != nil {
				return nil, err
			}
		case "items":
			if arr, isArr := val.([]any); isArr {
				if out["prefixItems"], err = t.schemaArray(arr, at); err != nil {
					return nil, err
				}
				if ai, has := m["additionalItems"]; has {
					if out["items"], err = t.schema(ai, path+"/additionalItems"); err != nil {
						return nil, err
					}
				}
			} else if out["items"], err = t.schema(val, at); err != nil {
				return nil, err
			}
		case "additionalItems":
			// Handled with items; without array-form items, draft-07
			// ignores it.
		case "dependencies":
			deps, isMap := val.(map[string]any)
			if !isMap {
				return nil, fmt.Errorf("%s: dependencies must be an object", pathOrRoot(path))
			}
			req, sch := map[string]any{}, map[string]any{}
			for _, name := range sortedAny(deps) {
				if arr, isArr := deps[name].([]any); isArr {
					req[name] = arr
				} else if sch[name], err = t.schema(deps[name], at+"/"+name); err != nil {
					return nil, err
				}
			}
			if len(req) > 0 {
				out["dependentRequired"] = req
			}
			if len(sch) > 0 {
				out["dependentSchemas"] = sch
			}
		case "additionalProperties", "contains", "propertyNames", "not", "if", "then", "else":
			if out[k], err = t.schema(val, at); err != nil {
				return nil, err
			}
		case "properties", "patternProperties":
			if out[k], err = t.schemaMap(val, at); err != nil {
				return nil, err
			}
		case "allOf", "anyOf", "oneOf":
			arr, isArr := val.([]any)
			if !isArr {
				return nil, fmt.Errorf("%s: %s must be an array", pathOrRoot(path), k)
			}
			if out[k], err = t.schemaArray(arr, at); err != nil {
				return nil, err
			}
		default:
			// Same meaning in both dialects, data (const, enum, default,
			// examples), or unknown: the version-0 check judges it.
			out[k] = val
		}
	}
	return out, nil
}

// refSchema translates a schema with $ref. Draft-07 ignores every sibling
// of $ref; only annotations and definitions (which a pointer may still
// reach) are kept.
func (t *translator) refSchema(m map[string]any, ref any, path string) (any, error) {
	s, ok := ref.(string)
	if !ok {
		return nil, fmt.Errorf("%s: $ref must be a string", pathOrRoot(path))
	}
	if _, has := m["$id"]; has {
		return nil, fmt.Errorf("%s: $id beside $ref", pathOrRoot(path))
	}
	nref, err := t.ref(s)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", pathOrRoot(path), err)
	}
	out := map[string]any{"$ref": nref}
	for _, k := range refAnnotations {
		if v, has := m[k]; has {
			out[k] = v
		}
	}
	if d, has := m["definitions"]; has {
		if out["$defs"], err = t.schemaMap(d, path+"/definitions"); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (t *translator) schemaMap(v any, path string) (map[string]any, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: must be an object of schemas", path)
	}
	out := make(map[string]any, len(m))
	for _, k := range sortedAny(m) {
		s, err := t.schema(m[k], path+"/"+k)
		if err != nil {
			return nil, err
		}
		out[k] = s
	}
	return out, nil
}

func (t *translator) schemaArray(arr []any, path string) ([]any, error) {
	out := make([]any, len(arr))
	for i, v := range arr {
		s, err := t.schema(v, path+"/"+strconv.Itoa(i))
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	return out, nil
}

// ref rewrites a same-document JSON-pointer reference for the renamed
// keywords, walking the original document so that array-form items and
// schema dependencies are told apart. Other references are kept.
func (t *translator) ref(ref string) (string, error) {
	frag, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return ref, nil
	}
	segs := strings.Split(frag, "/")
	var cur any = t.root
	var out []string
	for i := 0; i < len(segs); i++ {
		m, ok := cur.(map[string]any)
		if !ok {
			return "", errors.New("$ref does not point into a schema")
		}
		kw := segs[i]
		next := func() (string, error) {
			if i+1 >= len(segs) {
				return "", errors.New("$ref ends inside a keyword")
			}
			i++
			return segs[i], nil
		}
		switch kw {
		case "definitions", "properties", "patternProperties", "dependencies":
			name, err := next()
			if err != nil {
				return "", err
			}
			sub, _ := m[kw].(map[string]any)
			target, found := sub[unescapePointer(name)]
			if !found {
				return "", errors.New("$ref target not found")
			}
			nkw := kw
			switch kw {
			case "definitions":
				nkw = "$defs"
			case "dependencies":
				if _, isArr := target.([]any); isArr {
					return "", errors.New("$ref into a property dependency")
				}
				nkw = "dependentSchemas"
			}
			out = append(out, nkw, name)
			cur = target
		case "items", "allOf", "anyOf", "oneOf":
			if arr, isArr := m[kw].([]any); isArr {
				idx, err := next()
				if err != nil {
					return "", err
				}
				n, err := strconv.Atoi(idx)
				if err != nil || n < 0 || n >= len(arr) {
					return "", errors.New("$ref index out of range")
				}
				nkw := kw
				if kw == "items" {
					nkw = "prefixItems"
				}
				out = append(out, nkw, idx)
				cur = arr[n]
				continue
			}
			if kw != "items" {
				return "", errors.New("$ref into a non-array applicator")
			}
			out = append(out, kw)
			cur = m[kw]
		case "additionalItems":
			if _, isArr := m["items"].([]any); !isArr {
				return "", errors.New("$ref to an ignored additionalItems")
			}
			out = append(out, "items")
			cur = m[kw]
		case "additionalProperties", "contains", "propertyNames", "not", "if", "then", "else":
			out = append(out, kw)
			cur = m[kw]
		default:
			return "", errors.New("$ref does not point to a schema")
		}
		if _, ok := m["$ref"]; ok && kw != "definitions" {
			return "", errors.New("$ref into a schema whose keywords draft-07 ignores")
		}
	}
	return "#/" + strings.Join(out, "/"), nil
}

// typeFromRef adds "type":"object" to an input schema root that is only a
// $ref to an object schema: version 0 requires the root to declare it,
// and the conjunction changes nothing.
func typeFromRef(root map[string]any) {
	ref, ok := root["$ref"].(string)
	if !ok || root["type"] != nil {
		return
	}
	frag, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return
	}
	var cur any = root
	for _, seg := range strings.Split(frag, "/") {
		m, ok := cur.(map[string]any)
		if !ok {
			return
		}
		cur = m[unescapePointer(seg)]
	}
	if m, ok := cur.(map[string]any); ok && m["type"] == "object" {
		root["type"] = "object"
	}
}

func unescapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
}

func cloneMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func sortedAny(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func pathOrRoot(p string) string {
	if p == "" {
		return "(root)"
	}
	return safePath(p)
}

// safePath renders a schema location for a report: member names that are
// not short plain identifiers are shown as "*".
func safePath(p string) string {
	segs := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i, s := range segs {
		segs[i] = safeKey(s)
	}
	return "/" + strings.Join(segs, "/")
}

// safeKey returns k when it is a short plain identifier, "*" otherwise.
func safeKey(k string) string {
	if k == "" || len(k) > 64 {
		return "*"
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("._-$", c) >= 0:
		default:
			return "*"
		}
	}
	return k
}

// decodeJSON decodes JSON keeping numbers as json.Number, so that
// re-encoding is lossless.
func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// emptyObjectSchema stands in for a missing requestedSchema.
var emptyObjectSchema = json.RawMessage(`{"type":"object","properties":{}}`)

// elicitSchema turns an elicitation's requestedSchema (MCP's restricted
// JSON Schema: a flat object of primitive properties) into a version-0
// input schema: translated like a tool schema, with the legacy enumNames
// turned into the titled-enum form (oneOf of const/title), and checked by
// the version-0 rules the task layer applies.
func elicitSchema(requested any) (json.RawMessage, error) {
	raw := emptyObjectSchema
	if requested != nil {
		b, err := json.Marshal(requested)
		if err != nil {
			return nil, err
		}
		raw = b
	}
	doc, err := decodeJSON(raw)
	if err != nil {
		return nil, err
	}
	doc, _, err = translateSchema(doc, false)
	if err != nil {
		return nil, err
	}
	if root, ok := doc.(map[string]any); ok {
		if props, ok := root["properties"].(map[string]any); ok {
			for _, k := range sortedAny(props) {
				if p, ok := props[k].(map[string]any); ok {
					props[k] = titledEnum(p)
				}
			}
		}
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	canon, err := manifest.Canonicalize(b, manifest.Limits{})
	if err != nil {
		return nil, err
	}
	if _, err := manifest.CompileSchema(canon, false, manifest.Options{}); err != nil {
		return nil, err
	}
	return canon, nil
}

// titledEnum rewrites {"enum":[…],"enumNames":[…]} (an elicitation form of
// MCP before 2025-11-25) as {"oneOf":[{"const":…,"title":…},…]}, which
// accepts the same values when they are distinct. Otherwise enumNames,
// an annotation, is dropped.
func titledEnum(p map[string]any) map[string]any {
	names, ok := p["enumNames"].([]any)
	if !ok {
		return p
	}
	out := cloneMap(p)
	delete(out, "enumNames")
	vals, ok := p["enum"].([]any)
	if !ok || len(vals) != len(names) || p["oneOf"] != nil {
		return out
	}
	seen := map[string]bool{}
	one := make([]any, len(vals))
	for i, v := range vals {
		s, ok1 := v.(string)
		title, ok2 := names[i].(string)
		if !ok1 || !ok2 || seen[s] {
			return out
		}
		seen[s] = true
		one[i] = map[string]any{"const": s, "title": title}
	}
	delete(out, "enum")
	out["oneOf"] = one
	return out
}
