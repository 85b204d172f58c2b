package taskd

import (
	"context"
	"errors"
	"time"

	"agentgw/db"
	"agentgw/surface"
	"agentgw/task"

	"mellium.im/xmpp/jid"
)

// The caller's operations (ProtoXEP "Task Recovery", "Interactive Input",
// "Cancellation and Deadlines"). Each is authorized against the caller's
// bare JID, from any of its resources, by package task: a task that does
// not exist, has expired, or belongs to another caller or endpoint answers
// <item-not-found/>, the same bytes in every case. Endpoint visibility
// plays no part. A malformed identifier is <bad-request/>.

// State answers a <task-state-request/> from the committed task. It is
// read-only.
func (s *Service) State(ctx context.Context, r surface.Request) (task.TaskState, error) {
	from, to, payload := r.From, r.To, r.Payload
	req, err := task.ParseTaskStateRequest(payload)
	if err != nil {
		return task.TaskState{}, err
	}
	t, err := s.read(ctx, req.TaskID, from, to)
	if err != nil {
		return task.TaskState{}, err
	}
	return s.m.State(t, from, to, req, s.clock.Now())
}

// Result answers a <task-result-request/>: the terminal state and payload,
// or <unexpected-request/> while the task runs.
func (s *Service) Result(ctx context.Context, r surface.Request) (task.TaskResult, error) {
	from, to, payload := r.From, r.To, r.Payload
	req, err := task.ParseTaskResultRequest(payload)
	if err != nil {
		return task.TaskResult{}, err
	}
	t, err := s.read(ctx, req.TaskID, from, to)
	if err != nil {
		return task.TaskResult{}, err
	}
	return s.m.Result(t, from, to, req, s.clock.Now())
}

// read loads committed task id from the reader pool if it is the task of
// from's bare JID at the endpoint to, or returns nil: a task of another
// caller is not even decoded, so that it takes no longer to refuse than one
// that does not exist. Package task authorizes what it returns.
func (s *Service) read(ctx context.Context, id string, from, to jid.JID) (*task.Task, error) {
	rec, err := s.store.CallerTask(ctx, id, from.Bare().String(), to.Bare().String())
	switch {
	case errors.Is(err, db.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, err
	}
	t, err := decode(rec)
	if err != nil {
		return nil, err
	}
	return &t, nil
}

// ProvideInput applies a <provide-input/> (task.Machine.ProvideInput) in a
// group commit and, once the answer is durable, hands it to the execution.
// An identical replay returns the original <input-accepted/> and hands
// nothing over.
func (s *Service) ProvideInput(ctx context.Context, r surface.Request) (task.InputAccepted, error) {
	from, to, payload := r.From, r.To, r.Payload
	req, err := task.ParseProvideInput(payload)
	if err != nil {
		return task.InputAccepted{}, err
	}
	var (
		out    task.InputOutcome
		remote bool // another gateway holds the task: signalled
	)
	_, err = s.callerCommand(ctx, req.TaskID, from, to, func(tx *db.TaskTx, t *task.Task, now time.Time) (task.Step, error) {
		var rec *task.InputRecord
		// The input record is looked up only for the task's own caller:
		// nothing else may learn whether a request ID exists.
		if t != nil && t.Caller.Equal(from.Bare()) {
			in, err := tx.Input(t.ID, req.RequestID)
			switch {
			case err == nil:
				r, err := decodeInput(in)
				if err != nil {
					return task.Step{}, err
				}
				rec = &r
			case !errors.Is(err, db.ErrNotFound):
				return task.Step{}, err
			}
		}
		var err error
		out, err = s.m.ProvideInput(t, rec, from, to, req, now)
		remote = false
		if err == nil && out.Answer != nil {
			var serr error
			if remote, serr = s.signal(tx, &out.Step.Task, db.SignalInput, out.Answer); serr != nil {
				return task.Step{}, serr
			}
		}
		return out.Step, err
	})
	if err != nil {
		return task.InputAccepted{}, err
	}
	if out.Answer != nil && !remote {
		s.deliverInput(req.TaskID, out.Answer)
	}
	return out.Accepted, nil
}

// Cancel applies a <cancel/> (task.Machine.Cancel) in a group commit and,
// once it is durable, tells the execution. A task that was never
// dispatched is confirmed cancelled at once, in the same commit. An
// identical replay returns the original <cancel-accepted/> and tells
// nobody.
func (s *Service) Cancel(ctx context.Context, r surface.Request) (task.CancelAccepted, error) {
	from, to, payload := r.From, r.To, r.Payload
	req, err := task.ParseCancel(payload)
	if err != nil {
		return task.CancelAccepted{}, err
	}
	var (
		out    task.CancelOutcome
		remote bool // another gateway holds the task: signalled
	)
	step, err := s.callerCommand(ctx, req.TaskID, from, to, func(tx *db.TaskTx, t *task.Task, now time.Time) (task.Step, error) {
		var err error
		out, err = s.m.Cancel(t, from, to, req, now)
		remote = false
		if err != nil || out.Replay {
			return out.Step, err
		}
		if t.State != task.StateAccepted {
			var serr error
			if remote, serr = s.signal(tx, &out.Step.Task, db.SignalCancel, nil); serr != nil {
				return task.Step{}, serr
			}
			return out.Step, err
		}
		// Never dispatched: nothing runs that could confirm, so confirm
		// now. Two transitions, two events, one commit.
		confirm, err := s.m.ConfirmCancel(out.Step.Task, "", now)
		if err != nil {
			return out.Step, err
		}
		return task.Step{
			Task:   confirm.Task,
			Events: append(out.Step.Events, confirm.Events...),
			Inputs: append(out.Step.Inputs, confirm.Inputs...),
		}, nil
	})
	if err != nil {
		return task.CancelAccepted{}, err
	}
	if !out.Replay && !remote && !step.Task.State.Terminal() {
		s.deliverCancel(req.TaskID)
	}
	return out.Accepted, nil
}

// callerCommand runs cmd, a command of from on task id at the endpoint to,
// once preauthorize lets it queue for the writer, retrying store faults for
// callerRetryWindow. Its errors are the answers to send (commandError).
func (s *Service) callerCommand(ctx context.Context, id string, from, to jid.JID, cmd command) (task.Step, error) {
	if err := s.preauthorize(ctx, id, from, to); err != nil {
		return task.Step{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, callerRetryWindow)
	defer cancel()
	step, err := s.mutate(ctx, id, cmd)
	if err != nil {
		return task.Step{}, commandError(err)
	}
	return step, nil
}

// preauthorize authorizes a task command against a read of the committed
// task (task.Authorize), before it queues for the group committer: a
// command from anyone but the task's caller, or for a task that does not
// exist, never reaches the single writer. It answers <item-not-found/>,
// the same bytes as the authorization in the transaction.
//
// The read itself selects on the ID, the caller and the target, and a task
// that is not terminal cannot have expired, so only a settled task's
// document is decoded, for its retention (task.Task.Expired).
func (s *Service) preauthorize(ctx context.Context, id string, from, to jid.JID) error {
	rec, err := s.store.CallerTask(ctx, id, from.Bare().String(), to.Bare().String())
	switch {
	case errors.Is(err, db.ErrNotFound):
		return task.ErrNotFound
	case err != nil:
		return err
	case !rec.Terminal && rec.ID == id:
		return nil
	}
	t, err := decode(rec)
	if err != nil {
		return err
	}
	return task.Authorize(&t, id, from, to, s.clock.Now())
}

// commandError turns a closed service into <service-unavailable/>, and a
// store fault that outlasted its retries (retry.go) into
// <resource-constraint/>, type wait: the identical command may be sent
// again. Every other error is returned as it is.
func commandError(err error) error {
	switch {
	case errors.Is(err, db.ErrCommitterClosed):
		return task.ErrServiceUnavailable
	case db.Transient(err):
		return task.ErrResourceConstraint
	}
	return err
}

// deliverInput hands an accepted answer to the task's execution, or keeps
// it for the execution the runtime has not returned yet.
func (s *Service) deliverInput(id string, answer []byte) {
	s.mu.Lock()
	lt := s.live[id]
	if lt == nil {
		s.mu.Unlock()
		return
	}
	exe := lt.exe
	if exe == nil {
		lt.answers = append(lt.answers, answer)
	}
	s.mu.Unlock()
	if exe != nil {
		if err := exe.Input(answer); err != nil {
			s.log.Warn("taskd: the execution refused an accepted input", "task", id, "err", err)
		}
	}
}

// deliverCancel tells the task's execution about an accepted cancellation,
// or remembers it for the execution the runtime has not returned yet.
func (s *Service) deliverCancel(id string) {
	s.mu.Lock()
	lt := s.live[id]
	if lt == nil {
		s.mu.Unlock()
		return
	}
	exe := lt.exe
	if exe == nil {
		lt.cancelled = true
	}
	s.mu.Unlock()
	if exe != nil {
		exe.Cancel()
	}
}
