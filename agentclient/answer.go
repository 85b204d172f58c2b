package agentclient

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"agentgw/manifest"
)

// Answers typed by a person. A prompt reads one line; the target wants
// JSON that satisfies the request's inputSchema. These helpers spare the
// person the JSON where the schema makes it unambiguous, and show its
// shape where it does not.

// inputError is err as a person answering should read it: the JSON
// checks of package manifest report "manifest: PATH: MSG", and an answer
// is no manifest, so the location and the rule are kept without the word.
func inputError(err error) string {
	var me *manifest.Error
	if errors.As(err, &me) {
		if me.Path == "" {
			return me.Msg
		}
		return me.Path + ": " + me.Msg
	}
	return err.Error()
}

// schemaShape is what an answer's schema says of its top level.
type schemaShape struct {
	Type       any                        `json:"type"`
	Properties map[string]json.RawMessage `json:"properties"`
}

// stringField is the name of the one property of an object schema whose
// only property is a string ("answer" for the builtin ask tool), or "".
func (in InputRequest) stringField() string {
	var s schemaShape
	if json.Unmarshal(in.Schema, &s) != nil || s.Type != "object" || len(s.Properties) != 1 {
		return ""
	}
	for name, raw := range s.Properties {
		var p struct {
			Type any `json:"type"`
		}
		if json.Unmarshal(raw, &p) == nil && p.Type == "string" {
			return name
		}
	}
	return ""
}

// TakesText reports whether a plain line answers the request: its schema
// asks for an object with one string property (TextAnswer).
func (in InputRequest) TakesText() bool { return in.stringField() != "" }

// Example is an answer of the schema's shape, for a prompt to show:
// {"answer": "…"} for one string property, the property names with a
// placeholder by type for another object, "" when the schema says too
// little to show.
func (in InputRequest) Example() string {
	var s schemaShape
	if json.Unmarshal(in.Schema, &s) != nil || s.Type != "object" || len(s.Properties) == 0 {
		return ""
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range s.Properties {
			if !yield(n) {
				return
			}
		}
	})
	var b strings.Builder
	b.WriteString("{")
	for i, n := range names {
		if i == 8 {
			b.WriteString(", …")
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		var p struct {
			Type any `json:"type"`
		}
		_ = json.Unmarshal(s.Properties[n], &p)
		k, _ := json.Marshal(n)
		placeholder := "…"
		switch p.Type {
		case "string":
			placeholder = `"…"`
		case "boolean":
			placeholder = "true"
		case "integer", "number":
			placeholder = "1"
		case "array":
			placeholder = "[…]"
		case "object":
			placeholder = "{…}"
		}
		fmt.Fprintf(&b, "%s: %s", k, placeholder)
	}
	b.WriteString("}")
	return b.String()
}

// TextAnswer makes a line typed at a prompt into a canonical answer. A
// line that is a JSON object is the answer as typed. Any other line, when
// the schema asks for an object with one string property, is the value of
// that property: "Alice" answers {"answer": "Alice"}. Otherwise the error
// says what JSON is expected, with an example of the schema's shape. The
// answer is then checked against the schema (Validate).
func (in InputRequest) TextAnswer(line string) ([]byte, error) {
	trimmed := strings.TrimSpace(line)
	isObject := strings.HasPrefix(trimmed, "{") && json.Valid([]byte(trimmed))
	if field := in.stringField(); field != "" && !isObject {
		b, err := json.Marshal(map[string]string{field: line})
		if err != nil {
			return nil, fmt.Errorf("the answer is not valid text: %w", err)
		}
		trimmed = string(b)
	}
	canon, err := CanonicalInput([]byte(trimmed))
	if err != nil {
		return nil, in.expected(strings.TrimPrefix(err.Error(), "input: "))
	}
	if err := in.Validate(canon); err != nil {
		return nil, in.expected(err.Error())
	}
	return canon, nil
}

// expected is why, with what the answer must look like.
func (in InputRequest) expected(why string) error {
	if ex := in.Example(); ex != "" {
		return fmt.Errorf("%s; answer with one line of JSON such as %s", why, ex)
	}
	return fmt.Errorf("%s; answer with one line of JSON that satisfies the answer schema above", why)
}
