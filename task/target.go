package task

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"agentgw/manifest"
	"agentgw/runtime"
	"agentgw/wire"
)

// The target's transitions. Each takes the committed task, a report of
// the runtime and the current time, and returns the Step to commit.
// Reports for a terminal task return runtime.ErrSettled and an empty
// step: output after settlement (in particular after cancelled) is
// discarded and never alters state or result. A report the rules refuse
// returns runtime.ErrRejected. Before applying any report the deadline and
// the pending input's expiry are checked at now, the commit boundary
// ("Cancellation and Deadlines"): a due deadline settles the task as
// failed/deadline-expired instead, and the step then comes with
// runtime.ErrSettled.

// emit appends one event at the next revision to s.
func (m *Machine) emit(s *Step, typ EventType, payload []byte, now time.Time) error {
	if err := ValidatePayload(typ, payload); err != nil {
		// Every payload is checked before it can be committed or sent;
		// reaching this is a bug in this package, not bad input.
		return fmt.Errorf("task: built an invalid %s payload: %w", typ, err)
	}
	id, err := NewID(m.cfg.Rand, prefixEvent)
	if err != nil {
		return err
	}
	s.Task.Revision++
	s.Task.Updated = stamp(now)
	s.Events = append(s.Events, Event{TaskID: s.Task.ID, ID: id, Revision: s.Task.Revision, Type: typ, Payload: payload})
	return nil
}

// settle moves s to terminal state to with payload. A pending input
// request is closed with disposition disp.
func (m *Machine) settle(s *Step, to State, payload []byte, disp InputStatus, now time.Time) error {
	if !Permitted(s.Task.State, to) {
		return fmt.Errorf("task: transition %s → %s is not permitted", s.Task.State, to)
	}
	if p := s.Task.Pending; p != nil {
		s.Inputs = append(s.Inputs, InputRecord{RequestID: p.ID, Status: disp})
		s.Task.Pending = nil
	}
	s.Task.State = to
	s.Task.Outcome = payload
	return m.emit(s, terminalEvent(to), payload, now)
}

func (m *Machine) settleFailure(s *Step, f runtime.Failure, disp InputStatus, now time.Time) error {
	payload, err := failedPayload(f)
	if err != nil {
		return err
	}
	return m.settle(s, StateFailed, payload, disp, now)
}

// tick applies the timers due at now to s: the deadline first, then the
// pending input's expiry, which re-issues the request while re-issues
// remain and otherwise settles the task.
func (m *Machine) tick(s *Step, now time.Time) error {
	t := &s.Task
	if t.State.Terminal() {
		return nil
	}
	if !now.Before(t.Deadline) {
		return m.settleFailure(s, failDeadline, InputSuperseded, now)
	}
	p := t.Pending
	if p == nil || p.Expires.IsZero() || now.Before(p.Expires) {
		return nil
	}
	if p.Reasks <= 0 || p.Timeout <= 0 || t.InputCount >= m.cfg.MaxInputRequests {
		return m.settleFailure(s, failInputExpired, InputExpired, now)
	}
	// Re-issue: a new request ID with the same question and schema. The
	// state stays input_required; like a progress update this changes
	// the revision, not the state.
	s.Inputs = append(s.Inputs, InputRecord{RequestID: p.ID, Status: InputExpired})
	next, err := m.newInput(p.Question, p.Schema, p.Timeout, p.Reasks-1, now)
	if err != nil {
		return err
	}
	return m.openInput(s, next, now)
}

// newInput creates an input request committed at now.
func (m *Machine) newInput(question string, schema []byte, timeout time.Duration, reasks int, now time.Time) (*InputRequest, error) {
	id, err := NewID(m.cfg.Rand, prefixInput)
	if err != nil {
		return nil, err
	}
	r := &InputRequest{ID: id, Question: question, Schema: schema, Created: stamp(now)}
	if timeout > 0 {
		r.Timeout = timeout
		r.Expires = r.Created.Add(timeout)
		r.Reasks = max(reasks, 0)
	}
	return r, nil
}

// openInput makes r the pending request of s.
func (m *Machine) openInput(s *Step, r *InputRequest, now time.Time) error {
	payload, err := inputPayload(r)
	if err != nil {
		return err
	}
	s.Task.State = StateInputRequired
	s.Task.Pending = r
	s.Task.InputCount++
	s.Inputs = append(s.Inputs, InputRecord{RequestID: r.ID, Status: InputPending})
	return m.emit(s, EventInputRequired, payload, now)
}

// prologue starts a target step: terminal tasks refuse everything, and
// due timers run first. A non-nil error ends the method with the step
// returned as it is.
func (m *Machine) prologue(t Task, now time.Time) (Step, error) {
	s := Step{Task: t}
	if t.State.Terminal() {
		return s, runtime.ErrSettled
	}
	if err := m.tick(&s, now); err != nil {
		return s, err
	}
	if s.Task.State.Terminal() {
		return s, runtime.ErrSettled
	}
	return s, nil
}

func rejected(why string) error { return fmt.Errorf("%w: %s", runtime.ErrRejected, why) }

// Tick applies the timers due at now: settles the task as
// failed/deadline-expired at its deadline, and handles the expiry of a
// pending input request (re-issue or settle as failed with
// CodeInputExpired). The gateway calls it when Task.NextWake is reached,
// and before resuming tasks after a restart. An error is a local fault.
func (m *Machine) Tick(t Task, now time.Time) (Step, error) {
	s := Step{Task: t}
	err := m.tick(&s, now)
	return s, err
}

// Start commits accepted → running before the gateway dispatches the task
// to its runtime. If the deadline has passed the task is settled instead
// (with runtime.ErrSettled) and must not be dispatched; a task no longer
// accepted (a cancellation came first) gets runtime.ErrRejected.
func (m *Machine) Start(t Task, now time.Time) (Step, error) {
	s, err := m.prologue(t, now)
	if err != nil {
		return s, err
	}
	if s.Task.State != StateAccepted {
		return s, rejected("task is not in state accepted")
	}
	s.Task.State = StateRunning
	payload, err := statusPayload(StateRunning, stamp(now))
	if err != nil {
		return s, err
	}
	return s, m.emit(&s, EventStatus, payload, now)
}

// Progress commits a progress update: one event, one revision, no state
// change. It is rejected if the tool does not declare supportsProgress,
// if p is empty or breaks the event schema, if its percent is below the
// last one committed, or when the task has used Config.MaxEvents
// revisions.
func (m *Machine) Progress(t Task, p runtime.Progress, now time.Time) (Step, error) {
	s, err := m.prologue(t, now)
	if err != nil {
		return s, err
	}
	switch {
	case !s.Task.Features.Progress:
		return s, rejected("tool does not declare supportsProgress")
	case s.Task.Revision >= m.cfg.MaxEvents:
		return s, rejected("event limit reached")
	case p.Percent != nil && *p.Percent < s.Task.Percent:
		return s, rejected("progress percent decreased")
	}
	payload, ok, err := progressPayload(p)
	if err != nil {
		return s, err
	}
	if !ok {
		return s, rejected("invalid progress")
	}
	if p.Percent != nil {
		s.Task.Percent = *p.Percent
	}
	return s, m.emit(&s, EventProgress, payload, now)
}

// RequestInput commits a request for caller input: accepted or running →
// input_required. It is rejected if the tool does not declare
// supportsInput, if a request is already pending or the task is
// cancelling (the transition table has no way there), if the question or
// schema is invalid (the schema must compile under the version-0 rules),
// or when a limit is reached.
func (m *Machine) RequestInput(t Task, q runtime.InputRequest, now time.Time) (Step, error) {
	s, err := m.prologue(t, now)
	if err != nil {
		return s, err
	}
	switch {
	case !s.Task.Features.Input:
		return s, rejected("tool does not declare supportsInput")
	case s.Task.Pending != nil:
		return s, rejected("an input request is already pending")
	case !Permitted(s.Task.State, StateInputRequired):
		return s, rejected("input cannot be requested in state " + string(s.Task.State))
	case s.Task.InputCount >= m.cfg.MaxInputRequests, s.Task.Revision >= m.cfg.MaxEvents:
		return s, rejected("input request limit reached")
	case q.Question == "" || !validText(q.Question, maxQuestionChars):
		return s, rejected("invalid question")
	}
	schema, err := canonicalJSON(q.Schema, m.cfg.MaxInputSchemaBytes, "input schema")
	if err != nil {
		return s, rejected("invalid input schema")
	}
	if _, err := manifest.CachedValidator(schema, false); err != nil {
		return s, rejected("invalid input schema")
	}
	r, err := m.newInput(q.Question, schema, q.Timeout, q.Reasks, now)
	if err != nil {
		return s, err
	}
	return s, m.openInput(&s, r, now)
}

// Complete settles the task as completed with a tool result. The result
// envelope is preserved whole; isError=true is still a completion. If the
// result is not valid I-JSON, exceeds Config.MaxResultBytes, breaks the
// event schema, or its structuredContent does not satisfy outputSchema
// (the tool's canonical output schema, nil if it has none; with one,
// structuredContent is required unless isError is true), the task is
// settled as failed/internal-error instead; the error is nil in both
// cases, since a settlement was committed.
func (m *Machine) Complete(t Task, r runtime.Result, outputSchema []byte, now time.Time) (Step, error) {
	s, err := m.prologue(t, now)
	if err != nil {
		return s, err
	}
	payload, fail, err := m.checkResult(r, outputSchema)
	if err != nil {
		return s, err
	}
	if fail != nil {
		return s, m.settleFailure(&s, *fail, InputSuperseded, now)
	}
	return s, m.settle(&s, StateCompleted, payload, InputSuperseded, now)
}

// checkResult validates a result and builds its completed payload, or
// returns the failure to settle with instead.
func (m *Machine) checkResult(r runtime.Result, outputSchema []byte) ([]byte, *runtime.Failure, error) {
	result, err := canonicalJSON(r.Raw, m.cfg.MaxResultBytes, "result")
	if err != nil {
		if errors.Is(err, ErrResourceConstraint) {
			return nil, &failResultTooLarge, nil
		}
		return nil, &failInvalidResult, nil
	}
	if r.Summary != "" && !validText(r.Summary, maxTextChars) {
		return nil, &failInvalidResult, nil
	}
	payload, err := completedPayload(result, r.Summary)
	if err != nil {
		return nil, nil, err
	}
	if wire.EscapedLen(payload) > MaxEventWireBytes {
		// Escaping can multiply a raw result by up to six (a JSON \" is
		// \&quot; on a server's wire): measured after escaping, so the
		// event and every task-result reply fit the servers' limits.
		return nil, &failResultTooLarge, nil
	}
	if ValidatePayload(EventCompleted, payload) != nil {
		return nil, &failInvalidResult, nil
	}
	if outputSchema == nil {
		return payload, nil, nil
	}
	var env struct {
		StructuredContent json.RawMessage `json:"structuredContent"`
		IsError           bool            `json:"isError"`
	}
	if err := json.Unmarshal(result, &env); err != nil {
		return nil, &failInvalidResult, nil
	}
	if env.StructuredContent == nil {
		// MCP: a tool with an output schema must return structured
		// content, except in an error result.
		if env.IsError {
			return payload, nil, nil
		}
		return nil, &failInvalidResult, nil
	}
	sch, err := manifest.CachedValidator(outputSchema, false)
	if err != nil {
		return nil, nil, fmt.Errorf("task: compile pinned output schema: %w", err)
	}
	switch err := validateValue(sch, env.StructuredContent); {
	case errors.Is(err, errOverBudget):
		// The result cannot be checked within the budget.
		return nil, &failResultTooComplex, nil
	case err != nil:
		return nil, &failInvalidResult, nil
	}
	return payload, nil, nil
}

// Fail settles the task as failed. An invalid code becomes internal-error,
// an invalid message a generic safe one, and invalid details are dropped,
// so a failure can always be committed.
func (m *Machine) Fail(t Task, f runtime.Failure, now time.Time) (Step, error) {
	s, err := m.prologue(t, now)
	if err != nil {
		return s, err
	}
	return s, m.settleFailure(&s, f, InputSuperseded, now)
}

// ConfirmCancel settles the task as cancelled, from any non-terminal
// state. The reason is included when it is valid text of at most 4096
// characters. The gateway calls it when the runtime reports Cancelled, and
// at once for a task cancelled before it was dispatched.
func (m *Machine) ConfirmCancel(t Task, reason string, now time.Time) (Step, error) {
	s, err := m.prologue(t, now)
	if err != nil {
		return s, err
	}
	payload, err := cancelledPayload(reason)
	if err != nil {
		return s, err
	}
	return s, m.settle(&s, StateCancelled, payload, InputSuperseded, now)
}

// Interrupt settles a task whose execution was lost to a restart and whose
// runtime cannot resume it: failed with code unavailable, retryable. A due
// deadline takes precedence (deadline-expired).
func (m *Machine) Interrupt(t Task, now time.Time) (Step, error) {
	s, err := m.prologue(t, now)
	if err != nil {
		return s, err
	}
	return s, m.settleFailure(&s, failInterrupted, InputSuperseded, now)
}
