package task

import (
	"bytes"
	"time"

	"agentgw/manifest"

	"mellium.im/xmpp/jid"
)

// The caller's operations. Each takes the task the gateway looked up by
// the request's task ID (nil if there is none), the authenticated sender
// and the JID the IQ was addressed to. A task that does not exist, has
// expired, or belongs to another caller or endpoint gives ErrNotFound,
// the same value in every case. Authorization comes first: nothing else
// is looked at for a sender that may not see the task.
//
// The task-mutating operations (ProvideInput, Cancel) also run the timers
// at now before deciding: when that settles the task, or expires the
// input being answered, the returned Step carries those events AND the
// error is the answer; the gateway commits the step either way.

// authorize resolves the task for caller at target, or ErrNotFound.
// Authorize is the caller authorization of every task command: it returns
// ErrNotFound unless t is task id of caller at target and unexpired. The
// gateway applies it to a read of the committed task before a command
// queues for the single writer, so that nobody but the task's caller can
// occupy the writer; the command is authorized again in its transaction.
func Authorize(t *Task, id string, caller, target jid.JID, now time.Time) error {
	return authorize(t, id, caller, target, now)
}

func authorize(t *Task, id string, caller, target jid.JID, now time.Time) error {
	if t == nil || t.ID != id ||
		!t.Caller.Equal(caller.Bare()) || !t.Target.Equal(target.Bare()) ||
		t.Expired(now) {
		return ErrNotFound
	}
	return nil
}

// InputOutcome is the outcome of ProvideInput.
type InputOutcome struct {
	// Step is what to commit (possibly empty).
	Step Step
	// Accepted is the <input-accepted/> to send when the error is nil.
	Accepted InputAccepted
	// Answer is the canonical input to hand to the execution
	// (runtime.Execution.Input) after the commit. It is nil for a replay:
	// an input is never applied or dispatched twice.
	Answer []byte
}

// ProvideInput applies a <provide-input/> ("Interactive Input"). rec is
// the input record of (req.TaskID, req.RequestID), or nil. Authorization and
// a known request come first, then canonical input, an answer replayed
// (before any expiry, revision or terminal check), expiry, timers, the
// expected revision and the pending schema; accepted, the task runs again
// with one status event. The order in full: docs/task-package.md,
// "ProvideInput".
func (m *Machine) ProvideInput(t *Task, rec *InputRecord, caller, target jid.JID, req ProvideInput, now time.Time) (InputOutcome, error) {
	if err := authorize(t, req.TaskID, caller, target, now); err != nil {
		return InputOutcome{}, err
	}
	if rec == nil || rec.RequestID != req.RequestID {
		return InputOutcome{}, ErrNotFound
	}
	input, err := canonicalJSON([]byte(req.Input), m.cfg.MaxInputBytes, "input")
	if err != nil {
		return InputOutcome{}, err
	}
	switch rec.Status {
	case InputAnswered:
		if rec.ExpectedRevision == req.ExpectedRevision && bytes.Equal(rec.Input, input) {
			return InputOutcome{Accepted: InputAccepted{TaskID: t.ID, Revision: rec.Revision}}, nil
		}
		return InputOutcome{}, conflict("input request was already answered")
	case InputExpired, InputSuperseded:
		return InputOutcome{}, conflict("input request is no longer pending")
	}
	s := Step{Task: *t}
	if err := m.tick(&s, now); err != nil {
		return InputOutcome{Step: s}, err
	}
	p := s.Task.Pending
	if s.Task.State != StateInputRequired || p == nil || p.ID != req.RequestID {
		return InputOutcome{Step: s}, conflict("input request is no longer pending")
	}
	if req.ExpectedRevision != s.Task.Revision {
		return InputOutcome{Step: s}, conflict("expected-revision is stale")
	}
	sch, err := manifest.CachedValidator(p.Schema, false)
	if err != nil {
		return InputOutcome{Step: s}, err
	}
	if err := validateValue(sch, input); err != nil {
		return InputOutcome{Step: s}, validationAnswer(err, "input", "input does not satisfy the requested schema")
	}
	s.Task.State = StateRunning
	s.Task.Pending = nil
	payload, err := statusPayload(StateRunning, stamp(now))
	if err != nil {
		return InputOutcome{Step: s}, err
	}
	if err := m.emit(&s, EventStatus, payload, now); err != nil {
		return InputOutcome{Step: s}, err
	}
	s.Inputs = append(s.Inputs, InputRecord{
		RequestID: p.ID, Status: InputAnswered,
		ExpectedRevision: req.ExpectedRevision, Input: input, Revision: s.Task.Revision,
	})
	return InputOutcome{
		Step:     s,
		Accepted: InputAccepted{TaskID: t.ID, Revision: s.Task.Revision},
		Answer:   input,
	}, nil
}

// CancelOutcome is the outcome of Cancel.
type CancelOutcome struct {
	// Step is what to commit (possibly empty).
	Step Step
	// Accepted is the <cancel-accepted/> to send when the error is nil.
	Accepted CancelAccepted
	// Replay reports an identical replay: nothing changed, and the
	// execution must not be told again.
	Replay bool
}

// Cancel applies a <cancel/> ("Cancellation and Deadlines"): authorization
// (<item-not-found/>), the reason's size, an accepted cancellation replayed
// (identical: the original answer; else <conflict/>, before any other
// check), supportsCancellation, timers, a terminal task or a stale revision
// (<conflict/>); then cancelling, with one status event. Cancellation stays
// advisory; a task never dispatched is confirmed at once (ConfirmCancel).
// The order in full: docs/task-package.md, "Cancel".
func (m *Machine) Cancel(t *Task, caller, target jid.JID, req Cancel, now time.Time) (CancelOutcome, error) {
	if err := authorize(t, req.TaskID, caller, target, now); err != nil {
		return CancelOutcome{}, err
	}
	if len(req.Reason) > m.cfg.MaxReasonBytes {
		return CancelOutcome{}, tooLarge("reason exceeds the size limit")
	}
	if c := t.Cancel; c != nil {
		if c.ExpectedRevision == req.ExpectedRevision && c.HasReason == req.HasReason && c.Reason == req.Reason {
			return CancelOutcome{Accepted: CancelAccepted{TaskID: t.ID, Revision: c.Revision}, Replay: true}, nil
		}
		return CancelOutcome{}, conflict("a different cancellation was already accepted")
	}
	if !t.Features.Cancel {
		return CancelOutcome{}, ErrServiceUnavailable
	}
	s := Step{Task: *t}
	if err := m.tick(&s, now); err != nil {
		return CancelOutcome{Step: s}, err
	}
	if s.Task.State.Terminal() {
		return CancelOutcome{Step: s}, conflict("task has already settled")
	}
	if req.ExpectedRevision != s.Task.Revision {
		return CancelOutcome{Step: s}, conflict("expected-revision is stale")
	}
	if p := s.Task.Pending; p != nil {
		s.Inputs = append(s.Inputs, InputRecord{RequestID: p.ID, Status: InputSuperseded})
		s.Task.Pending = nil
	}
	s.Task.State = StateCancelling
	payload, err := statusPayload(StateCancelling, stamp(now))
	if err != nil {
		return CancelOutcome{Step: s}, err
	}
	if err := m.emit(&s, EventStatus, payload, now); err != nil {
		return CancelOutcome{Step: s}, err
	}
	s.Task.Cancel = &Cancellation{
		ExpectedRevision: req.ExpectedRevision, HasReason: req.HasReason,
		Reason: req.Reason, Revision: s.Task.Revision,
	}
	return CancelOutcome{Step: s, Accepted: CancelAccepted{TaskID: t.ID, Revision: s.Task.Revision}}, nil
}

// State answers a <task-state-request/> ("Task Recovery") with the
// complete state: endpoint, pinned version and hash, state, revision,
// times, effective deadline, the pending input request while one is
// pending, and whether a result is available (exactly when terminal). It
// is read-only and does not run timers.
func (m *Machine) State(t *Task, caller, target jid.JID, req TaskStateRequest, now time.Time) (TaskState, error) {
	if err := authorize(t, req.TaskID, caller, target, now); err != nil {
		return TaskState{}, err
	}
	st := TaskState{
		TaskID:          t.ID,
		Endpoint:        t.Target.String(),
		State:           t.State,
		Revision:        t.Revision,
		APIVersion:      t.APIVersion,
		ManifestHash:    t.ManifestHash,
		Created:         t.Created,
		Updated:         t.Updated,
		Deadline:        t.Deadline,
		RetainUntil:     t.RetainUntil,
		ResultAvailable: t.State.Terminal(),
	}
	if t.Pending != nil {
		p, err := inputPayload(t.Pending)
		if err != nil {
			return TaskState{}, err
		}
		st.PendingInput = p
	}
	return st, nil
}

// Result answers a <task-result-request/> with the immutable terminal
// state and payload; a task that has not settled gives
// <unexpected-request/>.
func (m *Machine) Result(t *Task, caller, target jid.JID, req TaskResultRequest, now time.Time) (TaskResult, error) {
	if err := authorize(t, req.TaskID, caller, target, now); err != nil {
		return TaskResult{}, err
	}
	if !t.State.Terminal() {
		return TaskResult{}, &Error{Condition: ErrUnexpectedRequest.Condition, Text: "task has not settled"}
	}
	return TaskResult{TaskID: t.ID, State: t.State, Revision: t.Revision, Payload: t.Outcome}, nil
}
