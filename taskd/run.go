package taskd

import (
	"context"
	"errors"
	"time"

	"agentgw/db"
	"agentgw/runtime"
	"agentgw/task"
)

// failNotStarted settles a task whose runtime could not start it, or which
// has no runtime any more (its [[endpoint]] was removed from the
// configuration across a restart).
var failNotStarted = runtime.Failure{
	Code:      runtime.CodeUnavailable,
	Message:   "The tool's runtime is unavailable.",
	Retryable: true,
}

// dispatch commits accepted → running and starts the runtime: step 6 of
// the admission order. It runs once per task, after the <accepted/> has
// been written, or at recovery for a task a restart found accepted.
func (s *Service) dispatch(id string) {
	s.mu.Lock()
	lt := s.live[id]
	if lt == nil || lt.dispatched || s.closed {
		s.mu.Unlock()
		return
	}
	lt.dispatched = true
	target, version, toolName := lt.target, lt.version, lt.tool
	s.mu.Unlock()

	rt := s.opts.Runtimes[target]
	tool, err := s.tool(s.ctx, target, version, toolName)
	if rt == nil || err != nil {
		if err != nil {
			s.log.Error("taskd: pinned tool", "task", id, "err", err)
		}
		s.fail(id, failNotStarted)
		return
	}
	var call runtime.Call
	_, err = s.mutateHeld(s.ctx, id, func(_ *db.TaskTx, t *task.Task, now time.Time) (task.Step, error) {
		if t == nil {
			return task.Step{}, runtime.ErrSettled
		}
		st, err := s.m.Start(*t, now)
		call = st.Task.Call(tool)
		return st, err
	})
	if err != nil {
		// Settled by its deadline or a cancellation first (ErrSettled),
		// no longer accepted (ErrRejected), or the store failed: nothing
		// is dispatched.
		if !errors.Is(err, runtime.ErrSettled) && !errors.Is(err, runtime.ErrRejected) &&
			!errors.Is(err, db.ErrCommitterClosed) && s.ctx.Err() == nil {
			s.log.Error("taskd: start commit failed", "task", id, "err", err)
		}
		return
	}
	s.run(id, target, func(ctx context.Context) (runtime.Execution, error) {
		return rt.Start(ctx, call, reporter{s: s, id: id})
	})
}

// run starts (or resumes) an execution under the service's lifetime and
// attaches it to its task, and reports whether it did. If the runtime
// fails, the task is settled failed (unavailable) and the endpoint marked
// down, except for runtime.ErrNotResumable, which the caller handles.
func (s *Service) run(id, target string, start func(context.Context) (runtime.Execution, error)) bool {
	ctx, stop := context.WithCancel(s.ctx)
	s.mu.Lock()
	lt := s.live[id]
	if lt == nil {
		// Settled between the commit and now.
		s.mu.Unlock()
		stop()
		return false
	}
	lt.stop = stop
	s.mu.Unlock()

	exe, err := start(ctx)
	if err != nil {
		stop()
		if ctx.Err() == nil && !errors.Is(err, runtime.ErrNotResumable) {
			s.log.Warn("taskd: runtime failed to start a task", "task", id, "endpoint", target, "err", err)
			if a := s.opts.Availability; a != nil {
				a.MarkDown(target)
			}
			s.fail(id, failNotStarted)
		}
		return false
	}
	if a := s.opts.Availability; a != nil {
		a.MarkUp(target)
	}
	s.mu.Lock()
	lt = s.live[id]
	var (
		answers   [][]byte
		cancelled bool
	)
	if lt != nil {
		lt.exe = exe
		answers, cancelled = lt.answers, lt.cancelled
		lt.answers, lt.cancelled = nil, false
	}
	s.mu.Unlock()
	// What arrived while the runtime was starting, in order.
	for _, a := range answers {
		if err := exe.Input(a); err != nil {
			s.log.Warn("taskd: the execution refused an accepted input", "task", id, "err", err)
		}
	}
	if cancelled {
		exe.Cancel()
	}
	go s.reap(id, exe)
	return true
}

// reap logs how an execution ended, once it has.
func (s *Service) reap(id string, exe runtime.Execution) {
	<-exe.Done()
	if d := exe.Diagnostics(); d.Note != "" || d.Stderr != "" {
		s.log.Info("taskd: execution ended", "task", id, "exit", d.ExitCode, "note", d.Note, "stderr", d.Stderr)
	}
	s.mu.Lock()
	if lt := s.live[id]; lt != nil && lt.exe == exe {
		lt.exe = nil
	}
	s.mu.Unlock()
}

// fail settles a task failed with f, the way its runtime would have.
func (s *Service) fail(id string, f runtime.Failure) {
	if err := (reporter{s: s, id: id}).Fail(f); err != nil && !errors.Is(err, runtime.ErrSettled) &&
		!errors.Is(err, db.ErrCommitterClosed) {
		s.log.Error("taskd: settle failed", "task", id, "err", err)
	}
}

// recover brings one task a restart found unsettled back: timers first
// (the deadline may have passed while the gateway was down); then a task
// still accepted is dispatched as if just admitted; any other is resumed
// if its runtime can, and otherwise settled failed (unavailable,
// retryable) by Machine.Interrupt.
func (s *Service) recover(id string) {
	step, err := s.mutateHeld(s.ctx, id, func(_ *db.TaskTx, t *task.Task, now time.Time) (task.Step, error) {
		if t == nil {
			return task.Step{}, runtime.ErrSettled
		}
		return s.m.Tick(*t, now)
	})
	if err != nil {
		if !isLeaseLost(err) {
			s.log.Error("taskd: recover", "task", id, "err", err)
		}
		return
	}
	t := step.Task
	switch {
	case t.State.Terminal():
		return
	case t.State == task.StateAccepted:
		s.mu.Lock()
		if lt := s.live[id]; lt != nil {
			lt.dispatched = false
		}
		s.mu.Unlock()
		s.dispatch(id)
		return
	}
	target := t.Target.String()
	rt := s.opts.Runtimes[target]
	if rt != nil && rt.CanResume() {
		tool, err := s.tool(s.ctx, target, t.APIVersion, t.Tool)
		if err == nil {
			call := t.Call(tool)
			call.Resume = t.Resumption()
			if s.run(id, target, func(ctx context.Context) (runtime.Execution, error) {
				return rt.Resume(ctx, call, reporter{s: s, id: id})
			}) {
				return
			}
		}
	}
	_, err = s.mutateHeld(s.ctx, id, func(_ *db.TaskTx, t *task.Task, now time.Time) (task.Step, error) {
		if t == nil {
			return task.Step{}, runtime.ErrSettled
		}
		return s.m.Interrupt(*t, now)
	})
	if err != nil && !errors.Is(err, runtime.ErrSettled) {
		s.log.Error("taskd: interrupt", "task", id, "err", err)
	}
}

// reporter is the runtime.Reporter of one execution: each report is one
// Machine step, committed before the method returns. Only the target
// reports: nothing a caller sends reaches these methods.
type reporter struct {
	s  *Service
	id string
}

var _ runtime.Reporter = reporter{}

// report commits the step f computes from the committed task. A task that
// is gone or terminal answers runtime.ErrSettled.
func (r reporter) report(f func(t task.Task, now time.Time) (task.Step, error)) error {
	_, err := r.s.mutateHeld(context.Background(), r.id, func(_ *db.TaskTx, t *task.Task, now time.Time) (task.Step, error) {
		if t == nil {
			return task.Step{}, runtime.ErrSettled
		}
		return f(*t, now)
	})
	return err
}

// Progress implements runtime.Reporter.
func (r reporter) Progress(p runtime.Progress) error {
	return r.report(func(t task.Task, now time.Time) (task.Step, error) { return r.s.m.Progress(t, p, now) })
}

// RequestInput implements runtime.Reporter.
func (r reporter) RequestInput(q runtime.InputRequest) error {
	return r.report(func(t task.Task, now time.Time) (task.Step, error) { return r.s.m.RequestInput(t, q, now) })
}

// Complete implements runtime.Reporter. The result is checked against the
// pinned tool's output schema.
func (r reporter) Complete(res runtime.Result) error {
	var schema []byte
	r.s.mu.Lock()
	lt := r.s.live[r.id]
	r.s.mu.Unlock()
	if lt != nil {
		tool, err := r.s.tool(r.s.ctx, lt.target, lt.version, lt.tool)
		if err != nil {
			return err
		}
		schema = tool.OutputSchema
	}
	return r.report(func(t task.Task, now time.Time) (task.Step, error) {
		return r.s.m.Complete(t, res, schema, now)
	})
}

// Fail implements runtime.Reporter.
func (r reporter) Fail(f runtime.Failure) error {
	return r.report(func(t task.Task, now time.Time) (task.Step, error) { return r.s.m.Fail(t, f, now) })
}

// Cancelled implements runtime.Reporter.
func (r reporter) Cancelled(reason string) error {
	return r.report(func(t task.Task, now time.Time) (task.Step, error) { return r.s.m.ConfirmCancel(t, reason, now) })
}
