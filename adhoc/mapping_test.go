package adhoc_test

import (
	"errors"
	"strings"
	"testing"

	"agentgw/adhoc"
	"agentgw/runtime/builtin"
)

// everyType is an input schema with each property kind the mapping knows.
const everyType = `{"type":"object","additionalProperties":false,"required":["city","units"],"description":"Every mapped type.","properties":{` +
	`"city":{"type":"string","title":"City","description":"Where.","maxLength":100,"default":"Paris"},` +
	`"notes":{"type":"string","maxLength":2000,"default":"line one\nline two"},` +
	`"summary":{"type":"string","contentMediaType":"text/markdown"},` +
	`"units":{"enum":["metric","imperial"],"default":"metric","title":"Units"},` +
	`"alerts":{"type":"boolean","default":true},` +
	`"days":{"type":"integer","minimum":1,"maximum":14,"default":3},` +
	`"offset":{"type":"integer","exclusiveMinimum":-1.5,"exclusiveMaximum":10},` +
	`"ratio":{"type":"number","minimum":0.5,"exclusiveMaximum":100},` +
	`"big":{"type":"number","maximum":1e6},` +
	`"layers":{"type":"array","items":{"type":"string","enum":["rain","wind","snow"]},"minItems":1,"maxItems":2,"uniqueItems":true,"default":["rain"]},` +
	`"tags":{"type":"array","items":{"type":"string","maxLength":20}}}}`

// nested needs the JSON fallback: a form cannot express the object.
const nested = `{"type":"object","description":"Where to go.","required":["route"],"properties":{"route":{"type":"object","properties":{"from":{"type":"string"}}}}}`

func TestSchemaFormGolden(t *testing.T) {
	m, err := builtin.Manifest("demo@agents.example")
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range m.Tools {
		f := adhoc.SchemaForm(tool.InputSchema, tool.Title, tool.Description)
		got := marshal(t, f.TokenReader())
		formXSD(t, got)
		golden(t, "adhoc-form-"+tool.Name, got)
	}
	for name, schema := range map[string]string{"every-type": everyType, "fallback": nested} {
		f := adhoc.SchemaForm([]byte(schema), "Tool "+name, "Instructions.")
		got := marshal(t, f.TokenReader())
		formXSD(t, got)
		golden(t, "adhoc-form-"+name, got)
	}
	if !adhoc.Mapped([]byte(everyType)) || adhoc.Mapped([]byte(nested)) {
		t.Error("Mapped disagrees with the goldens")
	}
}

func TestSchemaFormFields(t *testing.T) {
	f := adhoc.SchemaForm([]byte(everyType), "T")
	types := map[string]string{}
	for _, fl := range f.Fields {
		types[fl.Var] = fl.Type
	}
	want := map[string]string{
		"city": "text-single", "notes": "text-multi", "summary": "text-multi", "units": "list-single",
		"alerts": "boolean", "days": "text-single", "offset": "text-single", "ratio": "text-single", "big": "text-single",
		"layers": "list-multi", "tags": "text-multi",
	}
	for v, typ := range want {
		if types[v] != typ {
			t.Errorf("%s: type %q, want %q", v, types[v], typ)
		}
	}
	// Required fields come first.
	if f.Fields[0].Var != "city" || f.Fields[1].Var != "units" || !f.Fields[0].Required || f.Fields[2].Required {
		t.Errorf("order: %+v", f.Fields[:3])
	}
	byVar := func(v string) adhoc.Field { fl, _ := f.Field(v); return fl }
	if r := byVar("offset").Validate.Range; r == nil || r.Min != "-1" || r.Max != "9" {
		t.Errorf("offset bounds: %+v", r)
	}
	if r := byVar("ratio").Validate.Range; r == nil || r.Min != "0.5" || r.Max != "" {
		t.Errorf("ratio bounds: %+v", r)
	}
	if v := byVar("big").Validate; v.Datatype != "xs:decimal" || v.Range != nil {
		t.Errorf("big: %+v", v)
	}

	for name, schema := range map[string]string{
		"oneOf":         `{"type":"object","oneOf":[{"required":["a"]},{"required":["b"]}],"properties":{"a":{"type":"string"},"b":{"type":"string"}}}`,
		"nullable":      `{"type":"object","properties":{"a":{"type":["string","null"]}}}`,
		"number enum":   `{"type":"object","properties":{"a":{"enum":[1,2]}}}`,
		"array of ints": `{"type":"object","properties":{"a":{"type":"array","items":{"type":"integer"}}}}`,
		"const":         `{"type":"object","properties":{"a":{"const":"x"}}}`,
		"undeclared":    `{"type":"object","required":["a"]}`,
		"FORM_TYPE":     `{"type":"object","properties":{"FORM_TYPE":{"type":"string"}}}`,
	} {
		if adhoc.Mapped([]byte(schema)) {
			t.Errorf("%s: mapped, want the JSON fallback", name)
		}
	}
	if f := adhoc.SchemaForm([]byte(`{"type":"object"}`), "none"); len(f.Fields) != 0 {
		t.Errorf("no properties: %+v", f.Fields)
	}
}

func submitted(fields ...string) adhoc.Form {
	f := adhoc.Form{Type: adhoc.FormSubmit}
	for i := 0; i+1 < len(fields); i += 2 {
		if fl, ok := f.Field(fields[i]); ok {
			_ = fl
			for j := range f.Fields {
				if f.Fields[j].Var == fields[i] {
					f.Fields[j].Values = append(f.Fields[j].Values, fields[i+1])
				}
			}
			continue
		}
		f.Fields = append(f.Fields, adhoc.Field{Var: fields[i], Values: []string{fields[i+1]}})
	}
	return f
}

func TestArguments(t *testing.T) {
	for _, tc := range []struct {
		name   string
		schema string
		form   adhoc.Form
		want   string
	}{
		{"minimal", everyType, submitted("city", "Oslo", "units", "metric"), `{"city":"Oslo","units":"metric"}`},
		{"every type", everyType, submitted("city", "Oslo", "units", "imperial", "notes", "a", "notes", "b",
			"alerts", "true", "days", "+07", "offset", "-1", "ratio", ".5", "big", "1e3",
			"layers", "rain", "layers", "snow", "tags", "x", "tags", "", "tags", "y"),
			`{"alerts":true,"big":1e3,"city":"Oslo","days":7,"layers":["rain","snow"],"notes":"a\nb","offset":-1,"ratio":0.5,"tags":["x","y"],"units":"imperial"}`},
		{"boolean 0", everyType, submitted("city", "Oslo", "units", "metric", "alerts", "0"), `{"alerts":false,"city":"Oslo","units":"metric"}`},
		{"empty optional", everyType, submitted("city", "Oslo", "units", "metric", "days", " "), `{"city":"Oslo","units":"metric"}`},
		{"fallback", nested, submitted(adhoc.JSONVar, `{"route":`, adhoc.JSONVar, `{"from":"A"}}`), `{"route":
{"from":"A"}}`},
		{"echo", `{"type":"object","properties":{"text":{"type":"string","maxLength":4096}},"required":["text"],"additionalProperties":false}`,
			submitted("text", "hello", "text", "world"), `{"text":"hello\nworld"}`},
	} {
		got, err := adhoc.Arguments([]byte(tc.schema), tc.form)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if string(got) != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
}

func TestArgumentsRefused(t *testing.T) {
	for _, tc := range []struct {
		name, schema string
		form         adhoc.Form
		field, why   string
	}{
		{"missing required", everyType, submitted("units", "metric"), "city", "is required"},
		{"not a choice", everyType, submitted("city", "a", "units", "kelvin"), "units", "is not one of its choices"},
		{"not an integer", everyType, submitted("city", "a", "units", "metric", "days", "3.5"), "days", "is not an integer"},
		{"out of range", everyType, submitted("city", "a", "units", "metric", "days", "15"), "days", "maximum"},
		{"exclusive bound", everyType, submitted("city", "a", "units", "metric", "ratio", "100"), "ratio", "exclusiveMaximum"},
		{"not a number", everyType, submitted("city", "a", "units", "metric", "ratio", "1,5"), "ratio", "is not a number"},
		{"not a boolean", everyType, submitted("city", "a", "units", "metric", "alerts", "yes"), "alerts", "is not a boolean"},
		{"too many", everyType, submitted("city", "a", "units", "metric", "layers", "rain", "layers", "wind", "layers", "snow"), "layers", "maxItems"},
		{"not unique", everyType, submitted("city", "a", "units", "metric", "layers", "rain", "layers", "rain"), "layers", "uniqueItems"},
		{"bad list choice", everyType, submitted("city", "a", "units", "metric", "layers", "hail"), "layers", "not one of its choices"},
		{"too long", everyType, submitted("city", strings.Repeat("x", 101), "units", "metric"), "city", "maxLength"},
		{"two values", everyType, submitted("city", "a", "city", "b", "units", "metric"), "city", "single value"},
		{"fallback not JSON", nested, submitted(adhoc.JSONVar, "route: A"), adhoc.JSONVar, "is not a JSON object"},
		{"fallback schema", nested, submitted(adhoc.JSONVar, `{"route":"A"}`), adhoc.JSONVar, "type"},
		{"fallback empty", nested, submitted(), adhoc.JSONVar, "required"},
	} {
		_, err := adhoc.Arguments([]byte(tc.schema), tc.form)
		var fe *adhoc.FieldError
		if !errors.As(err, &fe) {
			t.Errorf("%s: %v, want a field error", tc.name, err)
			continue
		}
		if fe.Var != tc.field || !strings.Contains(fe.Reason, tc.why) {
			t.Errorf("%s: field %q %q, want %q %q", tc.name, fe.Var, fe.Reason, tc.field, tc.why)
		}
		if n := fe.Note(); n.Type != adhoc.NoteError || !strings.Contains(n.Text, `"`) {
			t.Errorf("%s: note %+v", tc.name, n)
		}
		if strings.Contains(fe.Note().Text, "kelvin") || strings.Contains(fe.Note().Text, "hail") {
			t.Errorf("%s: the note reflects the submitted value: %s", tc.name, fe.Note().Text)
		}
	}
}

// TestSchemaFormWithinLimit: a schema whose form would not fit in a
// stanza falls back to the JSON field.
func TestSchemaFormWithinLimit(t *testing.T) {
	var enum []string
	for i := 0; i < 5000; i++ {
		enum = append(enum, `"choice-number-`+strings.Repeat("x", i%10)+string(rune('a'+i%26))+`"`)
	}
	schema := `{"type":"object","properties":{"pick":{"enum":[` + strings.Join(enum, ",") + `]}}}`
	f := adhoc.SchemaForm([]byte(schema), "Big", strings.Repeat("long description ", 1000))
	if len(f.Fields) != 1 || f.Fields[0].Var != adhoc.JSONVar {
		t.Fatalf("fields: %d, first %q", len(f.Fields), f.Fields[0].Var)
	}
	if n := len(marshal(t, f.TokenReader())); n > adhoc.MaxFormBytes {
		t.Errorf("form of %d bytes", n)
	}
}
