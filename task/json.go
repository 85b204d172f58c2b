package task

import (
	"bytes"
	_ "embed" // for the normative event schema
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"agentgw/manifest"
	"agentgw/runtime"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// eventSchemaJSON is the normative task event payload schema of the
// ProtoXEP section "Lifecycle JSON Schemas", byte-identical to
// testdata/event.schema.json (a test asserts this).
//
//go:embed event.schema.json
var eventSchemaJSON []byte

// EventSchemaID is the $id of the event payload schema.
const EventSchemaID = "urn:xmpp:agent-task:0:event-json"

// EventSchema returns the embedded event payload schema.
func EventSchema() []byte { return bytes.Clone(eventSchemaJSON) }

// eventSchemas compiles one validator per event type, once.
var eventSchemas = sync.OnceValues(func() (map[EventType]*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(eventSchemaJSON))
	if err != nil {
		return nil, fmt.Errorf("task: decode event schema: %w", err)
	}
	// The event schema refers only to itself and to the 2020-12
	// meta-schema: the shared setup, which loads nothing, with formats.
	c := manifest.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource(EventSchemaID, doc); err != nil {
		return nil, fmt.Errorf("task: add event schema: %w", err)
	}
	out := make(map[EventType]*jsonschema.Schema)
	for _, t := range []EventType{EventStatus, EventProgress, EventInputRequired, EventCompleted, EventFailed, EventCancelled} {
		s, err := c.Compile(EventSchemaID + "#/$defs/" + string(t))
		if err != nil {
			return nil, fmt.Errorf("task: compile event schema %s: %w", t, err)
		}
		out[t] = s
	}
	return out, nil
})

// errInvalidPayload is what ValidatePayload reports for bad input; the
// validator's own messages quote the payload and are never shown.
var errInvalidPayload = errors.New("task: event payload does not satisfy the event schema")

// ValidatePayload checks that payload is one JSON object that satisfies
// the event schema definition selected by typ, and that its date-time
// members are XEP-0082 DateTimes. The target validates every payload it
// emits; a caller validates every payload it receives.
func ValidatePayload(typ EventType, payload []byte) error {
	schemas, err := eventSchemas()
	if err != nil {
		return err
	}
	s, ok := schemas[typ]
	if !ok {
		return fmt.Errorf("task: unknown event type")
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(payload))
	if err != nil {
		return errInvalidPayload
	}
	if err := s.Validate(v); err != nil {
		return errInvalidPayload
	}
	obj, _ := v.(map[string]any)
	for _, k := range []string{"updatedAt", "createdAt", "expiresAt"} {
		if s, ok := obj[k].(string); ok {
			if _, err := ParseDateTime(s); err != nil {
				return errInvalidPayload
			}
		}
	}
	return nil
}

// canonicalJSON checks raw against the I-JSON prerequisites and limits and
// returns its RFC 8785 form. Failures are protocol errors that say what
// was wrong with which value (what), never the value itself: a size limit
// gives <resource-constraint/>, anything else <not-acceptable/> ("JSON
// Payload Encoding").
func canonicalJSON(raw []byte, maxBytes int, what string) ([]byte, error) {
	out, err := manifest.Canonicalize(raw, manifest.Limits{MaxManifestBytes: maxBytes, MaxStringBytes: maxBytes})
	if err != nil {
		var me *manifest.Error
		if errors.As(err, &me) && me.Kind == manifest.KindTooLarge {
			return nil, tooLarge(what + ": exceeds a size or complexity limit")
		}
		return nil, notAcceptable(what + ": not valid I-JSON")
	}
	return out, nil
}

// validateValue validates a canonical JSON value against a compiled
// schema, under the validation budget of package manifest. It returns nil,
// errOverBudget, or errInvalidValue; neither error says anything about the
// value.
func validateValue(s *manifest.Validator, canonical []byte) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(canonical))
	if err != nil {
		return errInvalidValue
	}
	err = s.Validate(v)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, manifest.ErrValidationBudget):
		return errOverBudget
	}
	return errInvalidValue
}

// failResultTooComplex settles a task whose structuredContent cannot be
// validated against the output schema within the validation budget.
var failResultTooComplex = runtime.Failure{Code: runtime.CodeInternalError,
	Message: "The tool produced a result too complex to validate within the limits.", Retryable: false}

// The outcomes of validateValue other than success.
var (
	errOverBudget   = errors.New("task: validation exceeds its budget")
	errInvalidValue = errors.New("task: value does not satisfy the schema")
)

// validationAnswer is the protocol error for a value (what) that failed
// validateValue with err: <resource-constraint/> past the budget ("JSON
// Payload Encoding": a validation-time limit), else <not-acceptable/>
// with the text invalid.
func validationAnswer(err error, what, invalid string) error {
	if errors.Is(err, errOverBudget) {
		return tooLarge(what + ": validation exceeds a documented complexity limit")
	}
	return notAcceptable(invalid)
}

// marshalCanonical encodes v with encoding/json and returns its RFC 8785
// form. It is used only for payloads this package builds.
func marshalCanonical(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("task: encode payload: %w", err)
	}
	out, err := manifest.Canonicalize(raw, manifest.Limits{
		// The members of this payload were checked on the way in and the
		// wrapper adds depth, so only the size is bounded here.
		MaxManifestBytes: len(raw) + 1, MaxStringBytes: len(raw) + 1,
		MaxDepth: 1 << 16, MaxMembers: 1 << 30,
	})
	if err != nil {
		return nil, fmt.Errorf("task: canonicalize payload: %w", err)
	}
	return out, nil
}
