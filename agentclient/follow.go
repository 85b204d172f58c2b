package agentclient

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"

	"agentgw/manifest"
	"agentgw/task"
	"agentgw/wire"

	"mellium.im/xmpp/jid"
)

// maxEventPayload bounds the canonical payload of an event kept to
// recognize its replays.
const maxEventPayload = 1 << 20

// eventName is the lifecycle event element.
var eventName = xml.Name{Space: task.NS, Local: "event"}

// seenEvent is what is kept of an applied event to recognize its replays:
// events are deduplicated by (endpoint, task ID, revision), and an
// identical replay keeps its event ID and canonical payload.
type seenEvent struct {
	id      string
	typ     task.EventType
	payload []byte // RFC 8785
}

// Tracker is the caller's record of one task (client guide, "Minimum
// client state"): state and revision, the events applied, the pending
// input request. Notifications are advisory; the task state IQ is the
// source of truth whenever they are in doubt. A Tracker is not safe for
// concurrent use.
type Tracker struct {
	Pin    *Pin
	TaskID string

	State    task.State
	Revision int64
	// Pending is the input request pending, if any.
	Pending *InputRequest
	seen    map[int64]seenEvent
}

// NewTracker returns the record of a task just accepted.
func NewTracker(p *Pin, taskID string) *Tracker {
	return &Tracker{Pin: p, TaskID: taskID, State: task.StateAccepted, seen: map[int64]seenEvent{}}
}

// Verdict is what Handle made of a stanza.
type Verdict int

// The verdicts of Handle.
const (
	// NotEvent: not a lifecycle message.
	NotEvent Verdict = iota
	// Ignored: a lifecycle message breaking a rule of "Lifecycle
	// Events", ignored whole; Observation.Reason says which.
	Ignored
	// Duplicate: a replay, or an event older than the state known.
	Duplicate
	// Gap: the revision jumped; recover the state, then call CaughtUp.
	Gap
	// Applied: the next event, applied.
	Applied
	// Inconsistent: an event the transition table does not allow;
	// recover the state.
	Inconsistent
)

// Observation is the outcome of Handle.
type Observation struct {
	Verdict Verdict
	// From is the sender; Reason the rule broken (Ignored, Inconsistent,
	// or a Duplicate that differs from the event applied).
	From, Reason string
	Event        task.Event
	canon        []byte
}

// Handle processes one incoming stanza (XML text). A message is a
// lifecycle message when it has an <event/> of urn:xmpp:agent-task:0 as
// a direct child; it is then applied only if every rule of "Lifecycle
// Events" holds, else ignored whole.
func (t *Tracker) Handle(raw string) Observation {
	el, err := wire.Parse(raw)
	if err != nil {
		return Observation{}
	}
	return t.HandleElement(el)
}

// HandleElement is Handle for a stanza already parsed, so that a receiver
// that has parsed it to route it (IsLifecycleMessage) does not parse it
// again.
func (t *Tracker) HandleElement(el wire.Element) Observation {
	if el.Start.Name.Local != "message" {
		return Observation{}
	}
	var events []wire.Element
	for _, c := range el.Children() {
		if c.Start.Name == eventName {
			events = append(events, c)
		}
	}
	if len(events) == 0 {
		return Observation{}
	}
	from, _ := el.AttrValue("from")
	ignored := func(why string) Observation { return Observation{Verdict: Ignored, From: from, Reason: why} }
	switch {
	case len(events) > 1:
		return ignored("more than one event")
	case !SameBare(from, t.Pin.Endpoint):
		return ignored("not sent by the endpoint of the task")
	}
	if typ, ok := el.AttrValue("type"); ok && typ != "normal" {
		return ignored("not a message of type normal")
	}
	ev, err := task.ParseEvent(events[0])
	if err != nil {
		return ignored("malformed event")
	}
	if ev.TaskID != t.TaskID {
		return ignored("event for a task this command does not follow")
	}
	if task.ValidatePayload(ev.Type, ev.Payload) != nil {
		return ignored(fmt.Sprintf("%s event at revision %d does not satisfy the event schema", ev.Type, ev.Revision))
	}
	canon, err := manifest.Canonicalize(ev.Payload, manifest.Limits{MaxManifestBytes: maxEventPayload, MaxStringBytes: maxEventPayload})
	if err != nil {
		return ignored("event payload is not I-JSON")
	}
	o := Observation{From: from, Event: ev, canon: canon}
	switch {
	case ev.Revision <= t.Revision:
		if s, ok := t.seen[ev.Revision]; ok && (s.id != ev.ID || s.typ != ev.Type || !bytes.Equal(s.payload, canon)) {
			o.Reason = fmt.Sprintf("a different event for revision %d", ev.Revision)
		}
		// An exact replay, or an event older than the state recovered:
		// nothing new either way.
		o.Verdict = Duplicate
		return o
	case ev.Revision > t.Revision+1:
		o.Verdict = Gap
		return o
	}
	if !t.apply(ev, canon) {
		o.Verdict, o.Reason = Inconsistent, fmt.Sprintf("%s event at revision %d is inconsistent with the task", ev.Type, ev.Revision)
		return o
	}
	o.Verdict = Applied
	return o
}

// CaughtUp reports, after the state was recovered following a Gap,
// whether the state reached exactly the gap's event, which is then
// recorded as seen.
func (t *Tracker) CaughtUp(o Observation) bool {
	if o.Event.Revision != t.Revision {
		return false
	}
	t.seen[o.Event.Revision] = seenEvent{o.Event.ID, o.Event.Type, o.canon}
	return true
}

// apply applies the next event; it reports false (and changes nothing)
// for an event the transition table does not allow.
func (t *Tracker) apply(ev task.Event, canon []byte) bool {
	next := t.State
	var pending *InputRequest
	switch ev.Type {
	case task.EventStatus:
		var p struct {
			State task.State `json:"state"`
		}
		if json.Unmarshal(ev.Payload, &p) != nil {
			return false
		}
		next = p.State
	case task.EventProgress:
		if t.State.Terminal() {
			return false
		}
	case task.EventInputRequired:
		in, err := ParseInputRequest(ev.Payload)
		if err != nil {
			return false
		}
		next, pending = task.StateInputRequired, &in
	case task.EventCompleted:
		next = task.StateCompleted
	case task.EventFailed:
		next = task.StateFailed
	case task.EventCancelled:
		next = task.StateCancelled
	}
	// Progress changes no state; an input request may be re-issued
	// (expired, then asked again) in state input_required; every other
	// event announces a permitted transition.
	switch {
	case ev.Type == task.EventProgress:
	case ev.Type == task.EventInputRequired && t.State == task.StateInputRequired:
	case !task.Permitted(t.State, next):
		return false
	}
	t.State, t.Revision = next, ev.Revision
	if next != task.StateInputRequired {
		t.Pending = nil
	} else if pending != nil {
		t.Pending = pending
	}
	t.seen[ev.Revision] = seenEvent{ev.ID, ev.Type, canon}
	return true
}

// ErrPinMoved is the error of a task state naming a version or manifest
// hash other than the one pinned.
var ErrPinMoved = errors.New("the endpoint reports a version or manifest hash other than the one pinned")

// Adopt takes the authoritative task state when it is newer than what the
// events told, and reports whether it did.
func (t *Tracker) Adopt(st task.TaskState) (bool, error) {
	if st.APIVersion != t.Pin.Version || st.ManifestHash != t.Pin.Hash {
		return false, fmt.Errorf("task %s: %w", t.TaskID, ErrPinMoved)
	}
	if st.Revision < t.Revision || (st.Revision == t.Revision && st.State == t.State) {
		return false, nil
	}
	t.State, t.Revision, t.Pending = st.State, st.Revision, nil
	if st.PendingInput != nil {
		if in, err := ParseInputRequest(st.PendingInput); err == nil {
			t.Pending = &in
		}
	}
	return true, nil
}

// Recover asks for the task state and adopts it (client guide, step 10).
// A refusal is an error; an unknown answer is returned as unknown, for
// the caller to try again later.
func (c *Client) Recover(ctx context.Context, t *Tracker) (st task.TaskState, adopted bool, unknown, err error) {
	st, err = c.TaskState(ctx, t.Pin.Endpoint, t.TaskID)
	if IsRefusal(err) {
		return st, false, nil, fmt.Errorf("task %s: %w", t.TaskID, err)
	}
	if err != nil {
		return st, false, err, nil
	}
	adopted, err = t.Adopt(st)
	return st, adopted, nil, err
}

// maxResultAttempts bounds the retrievals of the terminal result while its
// answer is lost.
const maxResultAttempts = 4

// SettledResult retrieves the result of a task that has settled,
// retrying while the answer is lost.
func (c *Client) SettledResult(ctx context.Context, endpoint jid.JID, taskID string) (task.TaskResult, error) {
	var r task.TaskResult
	var err error
	for attempt := 1; attempt <= maxResultAttempts; attempt++ {
		r, err = c.TaskResult(ctx, endpoint, taskID)
		if err == nil || IsRefusal(err) || ctx.Err() != nil {
			break
		}
	}
	return r, err
}

// SameBare reports whether the JID s has the bare JID want.
func SameBare(s string, want jid.JID) bool {
	j, err := jid.Parse(s)
	return err == nil && j.Bare().Equal(want.Bare())
}

// IsLifecycleMessage reports whether raw is a message carrying an
// <event/> of urn:xmpp:agent-task:0 as a direct child, and returns the
// task ID of its first event.
func IsLifecycleMessage(el wire.Element) (taskID string, ok bool) {
	if el.Start.Name.Local != "message" {
		return "", false
	}
	for _, c := range el.Children() {
		if c.Start.Name == eventName {
			id, _ := c.AttrValue("task-id")
			return id, true
		}
	}
	return "", false
}
