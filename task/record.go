package task

import (
	"encoding/json"
	"fmt"

	"mellium.im/xmpp/jid"
)

// taskFields is Task without its methods, so that the JSON form below can
// embed it without recursing.
type taskFields Task

// taskDoc is the JSON form of a Task: every field as encoding/json writes
// it, except the three addresses, which are strings. Fields at depth zero
// shadow the embedded ones of the same name.
type taskDoc struct {
	*taskFields
	Caller, Route, Target string
}

// Document encodes t as the JSON document the store keeps: every field as
// encoding/json writes it, the addresses as JID strings. MarshalJSON is
// the same; the store calls this directly, which spares encoding/json's
// check of a Marshaler's output.
func (t *Task) Document() ([]byte, error) {
	return json.Marshal(taskDoc{
		taskFields: (*taskFields)(t),
		Caller:     t.Caller.String(), Route: t.Route.String(), Target: t.Target.String(),
	})
}

// ParseDocument decodes a document written by Document. An address that
// is not a JID is an error naming it: a task is never loaded without the
// addresses its events travel between.
func ParseDocument(b []byte) (Task, error) {
	var out Task
	doc := taskDoc{taskFields: (*taskFields)(&out)}
	if err := json.Unmarshal(b, &doc); err != nil {
		return Task{}, err
	}
	for _, a := range []struct {
		name string
		text string
		dst  *jid.JID
	}{{"caller", doc.Caller, &out.Caller}, {"route", doc.Route, &out.Route}, {"target", doc.Target, &out.Target}} {
		j, err := jid.Parse(a.text)
		if err != nil {
			return Task{}, fmt.Errorf("task: %s %q: %w", a.name, a.text, err)
		}
		*a.dst = j
	}
	return out, nil
}

// MarshalJSON is Document.
func (t Task) MarshalJSON() ([]byte, error) { return t.Document() }

// UnmarshalJSON is ParseDocument.
func (t *Task) UnmarshalJSON(b []byte) error {
	out, err := ParseDocument(b)
	if err != nil {
		return err
	}
	*t = out
	return nil
}
