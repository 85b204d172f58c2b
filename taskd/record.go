package taskd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"agentgw/db"
	"agentgw/task"
)

// record encodes t as its store row: the whole task as JSON (task.Task
// round-trips exactly through encoding/json) beside the columns it is
// looked up by.
func record(t *task.Task) (db.TaskRecord, error) {
	doc, err := t.Document()
	if err != nil {
		return db.TaskRecord{}, fmt.Errorf("taskd: encode task: %w", err)
	}
	return db.TaskRecord{
		ID: t.ID, Caller: t.Caller.String(), Target: t.Target.String(), RequestID: t.RequestID,
		APIVersion: t.APIVersion, State: string(t.State), Terminal: t.State.Terminal(),
		Revision: t.Revision, NextWake: t.NextWake(), Doc: doc,
	}, nil
}

// decode is the inverse of record. A task whose document does not parse,
// or whose caller, target or route is not a JID (task.Task.UnmarshalJSON),
// is an error naming the task: it is never loaded, so that its events
// cannot be lost later for want of an address.
func decode(rec db.TaskRecord) (task.Task, error) {
	t, err := task.ParseDocument(rec.Doc)
	if err != nil {
		return task.Task{}, fmt.Errorf("taskd: decode task %s: %w", rec.ID, err)
	}
	return t, nil
}

func decodeInput(in db.TaskInput) (task.InputRecord, error) {
	var r task.InputRecord
	if err := json.Unmarshal(in.Doc, &r); err != nil {
		return task.InputRecord{}, fmt.Errorf("taskd: decode input %s of task %s: %w", in.RequestID, in.TaskID, err)
	}
	return r, nil
}

// writeStep writes a step in the closure's transaction, as the persistence
// contract of package task has it: the task row, every event, every input
// record. A step without events writes nothing.
func writeStep(tx *db.TaskTx, s task.Step) error {
	if !s.Changed() {
		return nil
	}
	rec, err := record(&s.Task)
	if err != nil {
		return err
	}
	if err := tx.UpdateTask(rec); err != nil {
		return err
	}
	evs := make([]db.TaskEvent, len(s.Events))
	for i, ev := range s.Events {
		evs[i] = db.TaskEvent{TaskID: ev.TaskID, Revision: ev.Revision, ID: ev.ID, Type: string(ev.Type), Payload: ev.Payload}
	}
	if err := tx.InsertEvents(evs); err != nil {
		return err
	}
	ins := make([]db.TaskInput, len(s.Inputs))
	for i, r := range s.Inputs {
		doc, err := json.Marshal(r)
		if err != nil {
			return fmt.Errorf("taskd: encode input record: %w", err)
		}
		ins[i] = db.TaskInput{TaskID: s.Task.ID, RequestID: r.RequestID, Doc: doc}
	}
	return tx.PutInputs(ins)
}

// command computes the step of one command on a task inside a group commit.
// t is the committed task, or nil if there is none; now is the commit
// instant. The error is the command's answer: the step is committed all the
// same (a due deadline may settle a task that then refuses the command).
type command func(tx *db.TaskTx, t *task.Task, now time.Time) (task.Step, error)

// mutate runs cmd on task id in a group commit and returns its step and
// answer once the step is durable. After the commit, and before mutate
// returns, the step's events are queued for sending in commit order and
// the task's execution and timer follow its new state (see committed). A
// store fault that may clear is retried until the task's deadline or the
// end of ctx (retry.go); one that persists is returned as the error, with
// nothing written.
func (s *Service) mutate(ctx context.Context, id string, cmd command) (task.Step, error) {
	return s.mutateAs(ctx, id, false, cmd)
}

// mutateHeld is mutate for a step only the task's holder may commit: its
// runtime's reports, its start, its timers, its recovery. If another
// gateway holds the task now, nothing is written, the answer is
// errLeaseLost, and the task is dropped here.
func (s *Service) mutateHeld(ctx context.Context, id string, cmd command) (task.Step, error) {
	step, err := s.mutateAs(ctx, id, true, cmd)
	if isLeaseLost(err) {
		s.drop(id)
	}
	return step, err
}

func (s *Service) mutateAs(ctx context.Context, id string, held bool, cmd command) (task.Step, error) {
	var (
		step   task.Step
		answer error
	)
	err := s.commit(ctx, s.retryUntil(id), false, func(tx *db.TaskTx) error {
		step, answer = task.Step{}, nil
		var cur *task.Task
		rec, err := tx.Task(id)
		switch {
		case err == nil:
			t, err := decode(rec)
			if err != nil {
				return err
			}
			cur = &t
		case !errors.Is(err, db.ErrNotFound):
			return err
		}
		if held {
			if err := s.held(tx, id, cur); err != nil {
				if isLeaseLost(err) {
					answer = err
					return nil
				}
				return err
			}
		}
		step, answer = cmd(tx, cur, tx.Now())
		if err := writeStep(tx, step); err != nil {
			return err
		}
		if cur != nil {
			if !step.Changed() {
				step.Task = *cur
			}
			done := step
			tx.OnCommit(func() { s.committed(done) })
		}
		return nil
	})
	if err != nil {
		return task.Step{}, err
	}
	return step, answer
}

// committed runs after a step of a known task has committed (changed or
// not), in commit order: it moves the task's timer, or, if the task
// settled, forgets it and ends its execution; then it queues the events
// for sending, so that whoever sees an event sees the service already
// following it. It must not block.
func (s *Service) committed(step task.Step) {
	s.follow(&step.Task)
	if len(step.Events) > 0 {
		s.publish(&step.Task, step.Events)
	}
}

// publish queues events for the notifier: from the endpoint to the route
// that invoked the task. A full queue drops them (progress first, see
// notes.go): events are best-effort, and task-state recovers what was lost.
func (s *Service) publish(t *task.Task, evs []task.Event) {
	for _, ev := range evs {
		if !s.notes.push(note{from: t.Target, to: t.Route, ev: ev}) {
			// Warn once per spell, not once per event: a long outage
			// with busy tasks would flood the log.
			if s.dropped.Add(1) == 1 {
				s.log.Warn("event queue full: dropping task events until it drains; task-state recovers them", "task", t.ID, "revision", ev.Revision)
			}
		}
	}
}
