package adhoc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// Limits of what one command response carries (docs/limits.md). Prosody's
// default c2s stanza limit is 256 KiB and ejabberd's s2s limit is of the
// same order; a response stays far below both.
const (
	// MaxNoteChars bounds the text of one note, in characters, and
	// maxNoteBytes in bytes.
	MaxNoteChars = 4096
	maxNoteBytes = 8 << 10
	// MaxResultBytes bounds a result form's fields (names, labels and
	// values), in bytes; past it values are cut and a warning note says
	// so.
	MaxResultBytes = 32 << 10
	// MaxFormBytes bounds a form generated from a schema as written; a
	// larger one (thousands of choices) becomes the JSON fallback.
	MaxFormBytes = 48 << 10
	// MaxResponseBytes bounds a whole <command/> response as written:
	// notes, form and markup.
	MaxResponseBytes = 64 << 10
)

// truncatedMark ends a value or note that was cut.
const truncatedMark = " … [truncated]"

// TruncateText cuts s to at most max characters, marking the cut, and
// reports whether it cut.
func TruncateText(s string, max int) (string, bool) {
	if utf8.RuneCountInString(s) <= max {
		return s, false
	}
	keep := max - utf8.RuneCountInString(truncatedMark)
	if keep < 0 {
		keep = 0
	}
	i, n := 0, 0
	for i = range s {
		if n == keep {
			break
		}
		n++
	}
	return s[:i] + truncatedMark, true
}

// NewNote returns a note whose text is cut to MaxNoteChars characters
// and 8 KiB.
func NewNote(typ, text string) Note {
	t, _ := TruncateText(text, MaxNoteChars)
	if len(t) > maxNoteBytes {
		keep := maxNoteBytes - len(truncatedMark)
		for keep > 0 && !utf8.RuneStart(t[keep]) {
			keep--
		}
		t = t[:keep] + truncatedMark
	}
	return Note{Type: typ, Text: t}
}

// fieldOverhead is what one field costs beyond its var, label and values:
// its markup, at most.
const fieldOverhead = 64

// envelope is the MCP tool result as a completed task holds it.
type envelope struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           bool            `json:"isError"`
}

// ResultForm presents a tool result (the MCP CallToolResult of a completed
// task): a result form from its structuredContent, ordered and labelled
// by outputSchema when there is one, and notes: the text content, as an
// error note when isError is set, and a warning when the form was cut to
// MaxResultBytes. form is nil when there is no structured content.
func ResultForm(result, outputSchema []byte, title string) (form *Form, notes []Note) {
	var env envelope
	if err := json.Unmarshal(result, &env); err != nil {
		return nil, []Note{{Type: NoteError, Text: "The tool returned a result that cannot be shown."}}
	}
	var texts []string
	for _, c := range env.Content {
		if c.Type == "text" && c.Text != "" {
			texts = append(texts, c.Text)
		}
	}
	text := strings.Join(texts, "\n")
	switch {
	case env.IsError && text == "":
		notes = append(notes, Note{Type: NoteError, Text: "The tool reported an error."})
	case env.IsError:
		notes = append(notes, NewNote(NoteError, text))
	case text != "":
		notes = append(notes, NewNote(NoteInfo, text))
	}
	if len(env.StructuredContent) == 0 || string(env.StructuredContent) == "null" {
		if len(notes) == 0 {
			notes = append(notes, Note{Type: NoteInfo, Text: "The tool completed without content."})
		}
		return nil, notes
	}
	f := &Form{Type: FormResult, Title: title}
	b := budget{left: MaxResultBytes}
	obj, err := decodeSchema(env.StructuredContent)
	if err != nil {
		// Not an object: one field with the JSON.
		f.Fields = []Field{b.field(Field{Var: "result", Type: FieldTextMulti, Label: "Result"}, jsonLines(env.StructuredContent))}
	} else {
		props := map[string]any{}
		var order []string
		if out, err := decodeSchema(outputSchema); err == nil {
			if p, ok := out["properties"].(map[string]any); ok {
				props = p
			}
			order = schemaOrder(out)
		}
		var rest []string
		for k := range obj {
			if !slices.Contains(order, k) {
				rest = append(rest, k)
			}
		}
		slices.Sort(rest)
		for _, k := range append(order, rest...) {
			v, ok := obj[k]
			if !ok {
				continue
			}
			label := k
			if ps, ok := props[k].(map[string]any); ok {
				if t, ok := ps["title"].(string); ok && t != "" {
					label = t
				}
			}
			fl, vals := resultField(k, label, v)
			if b.cut {
				break
			}
			f.Fields = append(f.Fields, b.field(fl, vals))
		}
	}
	if b.cut {
		notes = append(notes, Note{Type: NoteWarn, Text: fmt.Sprintf("The result was cut to fit in one stanza (%d bytes of values); the full result is the task's result.", MaxResultBytes)})
	}
	return f, notes
}

// schemaOrder is the property order of an object schema: required first,
// each group by name, as input forms are.
func schemaOrder(s map[string]any) []string {
	props, _ := s["properties"].(map[string]any)
	req, _ := s["required"].([]any)
	var required, optional []string
	for k := range props {
		if slices.Contains(req, any(k)) {
			required = append(required, k)
		} else {
			optional = append(optional, k)
		}
	}
	slices.Sort(required)
	slices.Sort(optional)
	return append(required, optional...)
}

// resultField is the field that shows one structured value.
func resultField(name, label string, v any) (Field, []string) {
	fl := Field{Var: name, Label: label}
	if !validVar(name) {
		fl.Var = "result-" + fmt.Sprint(len(name))
	}
	switch x := v.(type) {
	case string:
		if strings.Contains(x, "\n") {
			fl.Type = FieldTextMulti
			return fl, strings.Split(x, "\n")
		}
		fl.Type = FieldTextSingle
		return fl, []string{x}
	case bool:
		fl.Type = FieldBoolean
		return fl, []string{boolValue(x)}
	case json.Number:
		fl.Type = FieldTextSingle
		return fl, []string{x.String()}
	case []any:
		fl.Type = FieldTextMulti
		var vals []string
		for _, e := range x {
			if s, ok := e.(string); ok && !strings.Contains(s, "\n") {
				vals = append(vals, s)
				continue
			}
			b, _ := json.Marshal(e)
			vals = append(vals, string(b))
		}
		return fl, vals
	}
	fl.Type = FieldTextMulti
	b, _ := json.Marshal(v)
	return fl, jsonLines(b)
}

// jsonLines is JSON indented for reading, one value per line.
func jsonLines(raw []byte) []string {
	var out bytes.Buffer
	if err := json.Indent(&out, raw, "", "  "); err != nil {
		return []string{string(raw)}
	}
	return strings.Split(out.String(), "\n")
}

// budget spends MaxResultBytes over the values of a result form.
type budget struct {
	left int
	cut  bool
}

// field sets the values of fl that fit, cutting the last one that does
// not.
func (b *budget) field(fl Field, vals []string) Field {
	b.spend(len(fl.Var) + len(fl.Label) + fieldOverhead)
	for _, v := range vals {
		// Each <value/> costs its markup too.
		b.spend(fieldOverhead / 4)
		if b.cut {
			break
		}
		if len(v) > b.left {
			keep := b.left
			for keep > 0 && !utf8.RuneStart(v[keep]) {
				keep--
			}
			v = v[:keep] + truncatedMark
			b.cut = true
		}
		b.spend(len(v))
		fl.Values = append(fl.Values, v)
	}
	return fl
}

// spend takes n bytes from the budget; running out cuts the form.
func (b *budget) spend(n int) {
	if b.left -= n; b.left <= 0 {
		b.left, b.cut = 0, true
	}
}
