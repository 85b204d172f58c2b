package adhoc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"slices"
	"strings"

	"agentgw/manifest"
	"agentgw/wire"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Tunables of the mapping from JSON Schema to forms (docs/adhoc.md).
const (
	// LongTextChars is the maxLength above which a string property is a
	// text-multi field rather than a text-single one.
	LongTextChars = 1024
	// JSONVar is the var of the single text-multi field that takes the
	// arguments as a JSON object when the schema has no form.
	JSONVar = "arguments"
)

// kind is how one property maps to a field.
type kind int

const (
	kindString     kind = iota // text-single
	kindText                   // text-multi, joined with newlines
	kindEnum                   // list-single
	kindBool                   // boolean
	kindInteger                // text-single, xs:integer
	kindNumber                 // text-single, xs:decimal
	kindEnumList               // list-multi
	kindStringList             // text-multi, one element per line
)

// prop is one property of an input schema that a field can express.
type prop struct {
	name     string
	kind     kind
	schema   map[string]any
	required bool
}

// plan is what a form can say of a schema: its properties in field
// order, or json set when the schema needs the JSON fallback.
type plan struct {
	props       []prop
	json        bool
	description string
	required    bool
}

// Keywords a form can carry, or that only annotate (no constraint that a
// field would hide from the user other than those Arguments re-checks).
var (
	rootKeys       = keys("$schema", "$id", "$comment", "type", "properties", "required", "additionalProperties", "title", "description", "default", "examples")
	annotationKeys = keys("title", "description", "default", "examples", "$comment", "deprecated", "readOnly", "writeOnly")
	stringKeys     = keys("type", "minLength", "maxLength", "pattern", "format", "contentMediaType", "enum")
	numberKeys     = keys("type", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
	boolKeys       = keys("type")
	arrayKeys      = keys("type", "items", "minItems", "maxItems", "uniqueItems")
	itemKeys       = keys("type", "minLength", "maxLength", "pattern", "format", "enum")
)

func keys(ks ...string) map[string]bool {
	m := make(map[string]bool, len(ks))
	for _, k := range ks {
		m[k] = true
	}
	return m
}

// decodeSchema reads a JSON object keeping numbers as written.
func decodeSchema(raw []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	return m, nil
}

// planSchema decides how an input schema maps to fields.
func planSchema(raw []byte) plan {
	root, err := decodeSchema(raw)
	if err != nil {
		return plan{json: true}
	}
	desc, _ := root["description"].(string)
	req, _ := root["required"].([]any)
	fallback := plan{json: true, description: desc, required: len(req) > 0}
	for k := range root {
		if !rootKeys[k] {
			return fallback
		}
	}
	if t, ok := root["type"]; ok && t != "object" {
		return fallback
	}
	required := map[string]bool{}
	for _, r := range req {
		s, ok := r.(string)
		if !ok {
			return fallback
		}
		required[s] = true
	}
	props := map[string]any{}
	if p, ok := root["properties"]; ok {
		if props, ok = p.(map[string]any); !ok {
			return fallback
		}
	}
	for r := range required {
		if _, ok := props[r]; !ok {
			// Required but undeclared: no field could supply it.
			return fallback
		}
	}
	var out plan
	for name, p := range props {
		ps, ok := p.(map[string]any)
		if !ok || !validVar(name) {
			return fallback
		}
		k, ok := propKind(ps)
		if !ok {
			return fallback
		}
		out.props = append(out.props, prop{name: name, kind: k, schema: ps, required: required[name]})
	}
	// Required fields first, each group by name: the canonical schema
	// has lost the author's order.
	slices.SortFunc(out.props, func(a, b prop) int {
		if a.required != b.required {
			if a.required {
				return -1
			}
			return 1
		}
		return strings.Compare(a.name, b.name)
	})
	out.description = desc
	return out
}

// validVar reports whether a property name can be a field var: text XML
// carries, on one line and without tabs.
func validVar(s string) bool {
	return s != "" && s != "FORM_TYPE" && wire.ValidText(s) && !strings.ContainsAny(s, "\t\n\r")
}

// onlyKeys reports whether every key of s is in allowed or an annotation.
func onlyKeys(s map[string]any, allowed map[string]bool) bool {
	for k := range s {
		if !allowed[k] && !annotationKeys[k] {
			return false
		}
	}
	return true
}

// stringEnum returns the enum of s when it is a list of strings.
func stringEnum(s map[string]any) ([]string, bool) {
	raw, ok := s["enum"].([]any)
	if !ok || len(raw) == 0 {
		return nil, false
	}
	out := make([]string, 0, len(raw))
	for _, v := range raw {
		str, ok := v.(string)
		if !ok {
			return nil, false
		}
		out = append(out, str)
	}
	return out, true
}

func propKind(s map[string]any) (kind, bool) {
	t, hasType := s["type"]
	if _, hasEnum := s["enum"]; hasEnum {
		if _, ok := stringEnum(s); !ok || (hasType && t != "string") || !onlyKeys(s, stringKeys) {
			return 0, false
		}
		return kindEnum, true
	}
	switch t {
	case "string":
		if !onlyKeys(s, stringKeys) {
			return 0, false
		}
		if longText(s) {
			return kindText, true
		}
		return kindString, true
	case "integer", "number":
		if !onlyKeys(s, numberKeys) {
			return 0, false
		}
		if t == "integer" {
			return kindInteger, true
		}
		return kindNumber, true
	case "boolean":
		return kindBool, onlyKeys(s, boolKeys)
	case "array":
		items, ok := s["items"].(map[string]any)
		if !ok || !onlyKeys(s, arrayKeys) || !onlyKeys(items, itemKeys) {
			return 0, false
		}
		if _, hasEnum := items["enum"]; hasEnum {
			if _, ok := stringEnum(items); !ok || (items["type"] != nil && items["type"] != "string") {
				return 0, false
			}
			return kindEnumList, true
		}
		if items["type"] != "string" {
			return 0, false
		}
		return kindStringList, true
	}
	return 0, false
}

// longText reports a string that wants a text-multi field: a maxLength
// above LongTextChars, or a textual media type (Markdown, plain text).
func longText(s map[string]any) bool {
	if n, ok := s["maxLength"].(json.Number); ok {
		if v, err := n.Int64(); err == nil && v > LongTextChars {
			return true
		}
	}
	mt, _ := s["contentMediaType"].(string)
	return strings.HasPrefix(mt, "text/")
}

// Mapped reports whether the schema maps to fields (false: the JSON
// fallback).
func Mapped(inputSchema []byte) bool { return !planSchema(inputSchema).json }

// SchemaForm returns the form of a tool with the given input schema:
// type form, titled title, with instructions, one field per property, or
// the single JSON field of the fallback.
func SchemaForm(inputSchema []byte, title string, instructions ...string) Form {
	p := planSchema(inputSchema)
	f := schemaForm(p, title, instructions)
	if !p.json && formBytes(f) > MaxFormBytes {
		// Too many fields or choices for one stanza: the JSON field
		// takes any arguments in little space.
		p = plan{json: true, description: p.description, required: p.required}
		f = schemaForm(p, title, instructions)
	}
	return f
}

// formBytes is the size of f as written.
func formBytes(f Form) int {
	s, err := wire.Marshal(f.TokenReader())
	if err != nil {
		return 0
	}
	return len(s)
}

func schemaForm(p plan, title string, instructions []string) Form {
	f := Form{Type: FormForm, Title: title}
	for _, in := range instructions {
		if in != "" {
			in, _ = TruncateText(in, MaxNoteChars)
			f.Instructions = append(f.Instructions, in)
		}
	}
	if p.json {
		f.Instructions = append(f.Instructions, "Enter the arguments as one JSON object.")
		desc, _ := TruncateText(p.description, MaxNoteChars)
		if desc == "" {
			desc = "A JSON object that satisfies the tool's input schema."
		}
		f.Fields = []Field{{Var: JSONVar, Type: FieldTextMulti, Label: "Arguments (JSON)", Desc: desc, Required: p.required}}
		return f
	}
	for _, pr := range p.props {
		f.Fields = append(f.Fields, pr.field())
	}
	return f
}

func (p prop) field() Field {
	s := p.schema
	fl := Field{Var: p.name, Label: p.name, Required: p.required}
	if t, ok := s["title"].(string); ok && t != "" {
		fl.Label = t
	}
	fl.Desc, _ = s["description"].(string)
	def, hasDef := s["default"]
	switch p.kind {
	case kindString:
		fl.Type = FieldTextSingle
		if d, ok := def.(string); ok {
			fl.Values = []string{d}
		}
	case kindText:
		fl.Type = FieldTextMulti
		if d, ok := def.(string); ok && d != "" {
			fl.Values = strings.Split(d, "\n")
		}
	case kindEnum:
		fl.Type = FieldListSingle
		enum, _ := stringEnum(s)
		for _, e := range enum {
			fl.Options = append(fl.Options, Option{Label: e, Value: e})
		}
		if d, ok := def.(string); ok {
			fl.Values = []string{d}
		}
	case kindBool:
		fl.Type = FieldBoolean
		if d, ok := def.(bool); ok {
			fl.Values = []string{boolValue(d)}
		}
	case kindInteger, kindNumber:
		fl.Type = FieldTextSingle
		fl.Validate = numberValidate(s, p.kind == kindInteger)
		if d, ok := def.(json.Number); ok && hasDef {
			fl.Values = []string{d.String()}
		}
	case kindEnumList:
		fl.Type = FieldListMulti
		items := s["items"].(map[string]any)
		enum, _ := stringEnum(items)
		for _, e := range enum {
			fl.Options = append(fl.Options, Option{Label: e, Value: e})
		}
		fl.Values = stringList(def)
		lo, _ := s["minItems"].(json.Number)
		hi, _ := s["maxItems"].(json.Number)
		if lo != "" || hi != "" {
			fl.Validate = &Validate{Datatype: "xs:string", ListMin: string(lo), ListMax: string(hi)}
		}
	case kindStringList:
		fl.Type = FieldTextMulti
		fl.Values = stringList(def)
	}
	return fl
}

func boolValue(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

func stringList(v any) []string {
	raw, _ := v.([]any)
	var out []string
	for _, x := range raw {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

var (
	// xsInteger and xsDecimal are the lexical spaces of XML Schema's
	// integer and decimal; jsonExponent is a JSON number with an exponent,
	// which xs:decimal lacks but a user may still type.
	xsInteger    = regexp.MustCompile(`^[+-]?[0-9]+$`)
	xsDecimal    = regexp.MustCompile(`^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)$`)
	jsonExponent = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?[eE][+-]?[0-9]+$`)
)

// numberValidate is the XEP-0122 validation of a numeric property: the
// datatype and the inclusive bounds that the datatype can write. An
// exclusive bound of an integer becomes the next integer; an exclusive
// bound of a number, or a bound written with an exponent, is left to the
// schema check on submission.
func numberValidate(s map[string]any, integer bool) *Validate {
	v := &Validate{Datatype: "xs:decimal"}
	if integer {
		v.Datatype = "xs:integer"
	}
	bound := func(inclusive, exclusive string, step int64) string {
		if n, ok := s[inclusive].(json.Number); ok && xsDecimal.MatchString(n.String()) {
			if integer {
				return integerBound(n.String(), 0, step > 0)
			}
			return n.String()
		}
		if n, ok := s[exclusive].(json.Number); ok && integer && xsDecimal.MatchString(n.String()) {
			return integerBound(n.String(), step, step > 0)
		}
		return ""
	}
	lo, hi := bound("minimum", "exclusiveMinimum", 1), bound("maximum", "exclusiveMaximum", -1)
	if lo != "" || hi != "" {
		v.Range = &Range{Min: lo, Max: hi}
	}
	return v
}

// integerBound returns the integer bound that a decimal bound d implies,
// moved by step for an exclusive bound: the ceiling for a lower bound,
// the floor for an upper one.
func integerBound(d string, step int64, lower bool) string {
	r, ok := new(big.Rat).SetString(d)
	if !ok {
		return ""
	}
	q := new(big.Int).Quo(r.Num(), r.Denom()) // truncated toward zero
	if !r.IsInt() {
		if lower && r.Sign() > 0 {
			q.Add(q, big.NewInt(1))
		}
		if !lower && r.Sign() < 0 {
			q.Sub(q, big.NewInt(1))
		}
		step = 0 // a fractional exclusive bound is already excluded
	}
	q.Add(q, big.NewInt(step))
	return q.String()
}

// FieldError is a submitted form refused: the field at fault and why, in
// words of this package only (never the submitted value).
type FieldError struct {
	// Var and Label name the field.
	Var, Label string
	// Reason says what is wrong with it.
	Reason string
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("adhoc: field %q %s", e.Var, e.Reason)
}

// Note is the note that tells the user which field to correct.
func (e *FieldError) Note() Note {
	name := e.Label
	if name == "" {
		name = e.Var
	}
	return NewNote(NoteError, fmt.Sprintf("The field %q %s. Correct it and submit the form again.", name, e.Reason))
}

// ErrNoSchema is returned by Arguments when the pinned schema does not
// compile; it passed registration, so this is a local fault.
var ErrNoSchema = errors.New("adhoc: the input schema does not compile")

// Arguments turns a submitted form into the JSON arguments of a tool with
// the given input schema, and checks them against that schema. A refusal
// is a *FieldError naming the first bad field; the JSON fallback field
// must hold one JSON object.
func Arguments(inputSchema []byte, submitted Form) ([]byte, error) {
	p := planSchema(inputSchema)
	var out []byte
	if p.json {
		fl, _ := submitted.Field(JSONVar)
		text := strings.TrimSpace(strings.Join(fl.Values, "\n"))
		if text == "" {
			text = "{}"
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal([]byte(text), &obj); err != nil || obj == nil {
			return nil, &FieldError{Var: JSONVar, Label: "Arguments (JSON)", Reason: "is not a JSON object"}
		}
		out = []byte(text)
	} else {
		obj := map[string]any{}
		for _, pr := range p.props {
			v, err := pr.value(submitted)
			if err != nil {
				return nil, err
			}
			if v != nil {
				obj[pr.name] = v
			}
		}
		var err error
		if out, err = json.Marshal(obj); err != nil {
			return nil, err
		}
	}
	if err := check(inputSchema, out, p); err != nil {
		return nil, err
	}
	return out, nil
}

// value converts one submitted field; nil means the property is absent.
func (p prop) value(f Form) (any, error) {
	label := p.name
	if t, ok := p.schema["title"].(string); ok && t != "" {
		label = t
	}
	bad := func(reason string) error { return &FieldError{Var: p.name, Label: label, Reason: reason} }
	fl, _ := f.Field(p.name)
	var vals []string
	for _, v := range fl.Values {
		if p.kind == kindText || strings.TrimSpace(v) != "" {
			vals = append(vals, v)
		}
	}
	if len(vals) == 0 || (p.kind == kindText && strings.Join(vals, "") == "") {
		if p.required {
			return nil, bad("is required")
		}
		return nil, nil
	}
	one := strings.TrimSpace(vals[0])
	switch p.kind {
	case kindString:
		if len(vals) > 1 {
			return nil, bad("takes a single value")
		}
		return vals[0], nil
	case kindText:
		return strings.Join(vals, "\n"), nil
	case kindEnum:
		enum, _ := stringEnum(p.schema)
		if len(vals) > 1 || !slices.Contains(enum, vals[0]) {
			return nil, bad("is not one of its choices")
		}
		return vals[0], nil
	case kindBool:
		switch one {
		case "1", "true":
			return true, nil
		case "0", "false":
			return false, nil
		}
		return nil, bad("is not a boolean")
	case kindInteger:
		if len(vals) > 1 || !xsInteger.MatchString(one) {
			return nil, bad("is not an integer")
		}
		return json.Number(normalizeDecimal(one)), nil
	case kindNumber:
		if len(vals) > 1 {
			return nil, bad("is not a number")
		}
		if jsonExponent.MatchString(one) {
			return json.Number(one), nil
		}
		if !xsDecimal.MatchString(one) {
			return nil, bad("is not a number")
		}
		return json.Number(normalizeDecimal(one)), nil
	case kindEnumList:
		enum, _ := stringEnum(p.schema["items"].(map[string]any))
		out := make([]any, 0, len(vals))
		for _, v := range vals {
			if !slices.Contains(enum, v) {
				return nil, bad("has a value that is not one of its choices")
			}
			out = append(out, v)
		}
		return out, nil
	case kindStringList:
		out := make([]any, 0, len(vals))
		for _, v := range vals {
			out = append(out, v)
		}
		return out, nil
	}
	return nil, bad("cannot be read")
}

// normalizeDecimal writes an xs:integer or xs:decimal literal as a JSON
// number: no plus sign, no superfluous leading zeros, a digit on both
// sides of the point.
func normalizeDecimal(s string) string {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimLeft(s, "+-")
	intPart, frac, hasPoint := strings.Cut(s, ".")
	intPart = strings.TrimLeft(intPart, "0")
	if intPart == "" {
		intPart = "0"
	}
	out := intPart
	if hasPoint && strings.TrimRight(frac, "0") != "" {
		out += "." + frac
	}
	if neg && strings.Trim(out, "0.") != "" {
		out = "-" + out
	}
	return out
}

// check validates args against the schema and turns the first failure
// into a FieldError for the property it concerns.
func check(inputSchema, args []byte, p plan) error {
	// The pinned schema was compiled at admission or for an earlier
	// command; the cache holds it, and its budget bounds the check.
	sch, err := manifest.CachedValidator(inputSchema, true)
	if err != nil {
		return ErrNoSchema
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(args))
	if err != nil {
		return err
	}
	err = sch.Validate(inst)
	if err == nil {
		return nil
	}
	if errors.Is(err, manifest.ErrValidationBudget) {
		return &FieldError{Var: JSONVar, Label: "Arguments (JSON)", Reason: "are too complex to check within the limits"}
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	loc, keyword := firstLeaf(ve)
	if p.json || len(loc) == 0 {
		return &FieldError{Var: JSONVar, Label: "Arguments (JSON)", Reason: "does not satisfy the input schema (" + keyword + ")"}
	}
	for _, pr := range p.props {
		if pr.name == loc[0] {
			label := pr.name
			if t, ok := pr.schema["title"].(string); ok && t != "" {
				label = t
			}
			return &FieldError{Var: pr.name, Label: label, Reason: "does not satisfy the input schema (" + keyword + ")"}
		}
	}
	return &FieldError{Var: loc[0], Reason: "is not allowed"}
}

// firstLeaf returns the instance location and schema keyword of the
// first innermost cause of a validation error.
func firstLeaf(ve *jsonschema.ValidationError) ([]string, string) {
	for len(ve.Causes) > 0 {
		ve = ve.Causes[0]
	}
	kw := "constraint"
	if path := ve.ErrorKind.KeywordPath(); len(path) > 0 {
		kw = path[len(path)-1]
	}
	return ve.InstanceLocation, kw
}
