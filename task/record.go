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

// MarshalJSON encodes t as the document the store keeps. Its addresses
// are written as JID strings.
func (t Task) MarshalJSON() ([]byte, error) {
	return json.Marshal(taskDoc{
		taskFields: (*taskFields)(&t),
		Caller:     t.Caller.String(), Route: t.Route.String(), Target: t.Target.String(),
	})
}

// UnmarshalJSON decodes a document written by MarshalJSON. An address that
// is not a JID is an error naming it: a task is never loaded without the
// addresses its events travel between.
func (t *Task) UnmarshalJSON(b []byte) error {
	var out Task
	doc := taskDoc{taskFields: (*taskFields)(&out)}
	if err := json.Unmarshal(b, &doc); err != nil {
		return err
	}
	for _, a := range []struct {
		name string
		text string
		dst  *jid.JID
	}{{"caller", doc.Caller, &out.Caller}, {"route", doc.Route, &out.Route}, {"target", doc.Target, &out.Target}} {
		j, err := jid.Parse(a.text)
		if err != nil {
			return fmt.Errorf("task: %s %q: %w", a.name, a.text, err)
		}
		*a.dst = j
	}
	*t = out
	return nil
}
