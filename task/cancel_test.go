package task_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"agentgw/runtime"
	"agentgw/task"

	"mellium.im/xmpp/jid"
)

func ptr[T any](v T) *T { return &v }

// TestCancelReplay: the identical tuple is recognized before the
// revision, cancelling and terminal checks, also after settlement; any
// other tuple conflicts.
func TestCancelReplay(t *testing.T) {
	f := newFixture(t, task.Config{})
	s := f.store(f.running(t0))
	rev := s.task.Revision
	acc, err := s.cancel(f.caller, rev, ptr("Trip was cancelled"), t0)
	if err != nil || acc.Revision != rev+1 || s.task.State != task.StateCancelling {
		t.Fatalf("cancel: %+v %v", acc, err)
	}
	xsdCheck(t, marshal(t, acc.TokenReader()))
	last := s.events[len(s.events)-1]
	if last.Type != task.EventStatus || !strings.Contains(string(last.Payload), `"state":"cancelling"`) {
		t.Errorf("event %s %s", last.Type, last.Payload)
	}
	// Cancelling is advisory and does not suppress output.
	if err := s.report(f.m.Progress(s.task, runtime.Progress{Stage: "cleanup"}, t0)); err != nil {
		t.Errorf("progress while cancelling: %v", err)
	}
	if err := s.report(f.m.ConfirmCancel(s.task, "stopped", t0)); err != nil {
		t.Fatal(err)
	}
	if string(s.task.Outcome) != `{"reason":"stopped"}` {
		t.Errorf("outcome %s", s.task.Outcome)
	}
	// Identical replays (any resource) return the original acceptance.
	for _, from := range []string{"planner@agents.example/worker", "planner@agents.example/phone"} {
		a, err := s.cancel(jid.MustParse(from), rev, ptr("Trip was cancelled"), t0.Add(time.Hour))
		if err != nil || a != acc {
			t.Errorf("replay: %+v %v", a, err)
		}
	}
	// Any difference in the tuple: conflict.
	for name, c := range map[string]struct {
		rev    int64
		reason *string
	}{
		"revision":       {rev + 1, ptr("Trip was cancelled")},
		"no reason":      {rev, nil},
		"empty reason":   {rev, ptr("")},
		"other reason":   {rev, ptr("Trip was cancelled ")},
		"current (late)": {s.task.Revision, ptr("Trip was cancelled")},
	} {
		if _, err := s.cancel(f.caller, c.rev, c.reason, t0); !errors.Is(err, task.ErrConflict) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// Tool output after terminal cancelled is discarded.
	for _, st := range []func() (task.Step, error){
		func() (task.Step, error) { return f.m.Complete(s.task, summary("late"), f.outputSchema(), t0) },
		func() (task.Step, error) {
			return f.m.Fail(s.task, runtime.Failure{Code: "unavailable", Message: "x"}, t0)
		},
		func() (task.Step, error) { return f.m.Progress(s.task, runtime.Progress{Stage: "x"}, t0) },
	} {
		if err := s.report(st()); !errors.Is(err, runtime.ErrSettled) || s.task.State != task.StateCancelled {
			t.Errorf("late output: %v %s", err, s.task.State)
		}
	}
}

// TestCancelAbsentVersusEmptyReason: a missing <reason/> and an empty one
// are different tuples.
func TestCancelAbsentVersusEmptyReason(t *testing.T) {
	f := newFixture(t, task.Config{})
	s := f.store(f.running(t0))
	rev := s.task.Revision
	if _, err := s.cancel(f.caller, rev, nil, t0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.cancel(f.caller, rev, ptr(""), t0); !errors.Is(err, task.ErrConflict) {
		t.Errorf("empty reason after none: %v", err)
	}
	if _, err := s.cancel(f.caller, rev, nil, t0); err != nil {
		t.Errorf("replay: %v", err)
	}
}

// TestCancelRaces: completion or failure may still win after cancelling;
// a cancel after settlement conflicts; a stale revision conflicts.
func TestCancelRaces(t *testing.T) {
	f := newFixture(t, task.Config{})
	for _, settle := range []struct {
		name  string
		state task.State
		run   func(task.Task) (task.Step, error)
	}{
		{"complete", task.StateCompleted, func(tk task.Task) (task.Step, error) {
			return f.m.Complete(tk, summary("won"), f.outputSchema(), t0)
		}},
		{"fail", task.StateFailed, func(tk task.Task) (task.Step, error) {
			return f.m.Fail(tk, runtime.Failure{Code: "unavailable", Message: "x"}, t0)
		}},
	} {
		s := f.store(f.running(t0))
		if _, err := s.cancel(f.caller, s.task.Revision, nil, t0); err != nil {
			t.Fatal(err)
		}
		if err := s.report(settle.run(s.task)); err != nil || s.task.State != settle.state {
			t.Errorf("%s after cancelling: %s %v", settle.name, s.task.State, err)
		}
		// The accepted cancellation is still replayable.
		if _, err := s.cancel(f.caller, 1, nil, t0); err != nil {
			t.Errorf("%s: replay after settlement: %v", settle.name, err)
		}
	}
	// Settlement before any cancellation: conflict.
	s := f.store(f.running(t0))
	_ = s.report(f.m.Complete(s.task, summary("done"), f.outputSchema(), t0))
	if _, err := s.cancel(f.caller, s.task.Revision, nil, t0); !errors.Is(err, task.ErrConflict) {
		t.Errorf("cancel after settlement: %v", err)
	}
	// Stale revision.
	s = f.store(f.running(t0))
	_ = s.report(f.m.Progress(s.task, runtime.Progress{Stage: "x"}, t0))
	if _, err := s.cancel(f.caller, s.task.Revision-1, nil, t0); !errors.Is(err, task.ErrConflict) {
		t.Errorf("stale cancel: %v", err)
	}
	// Before dispatch: accepted → cancelling, then confirmed at once.
	s = f.store(f.admit("forecast.get", `{"city":"Riga"}`, "", t0))
	if _, err := s.cancel(f.caller, 0, nil, t0); err != nil {
		t.Fatal(err)
	}
	if _, err := f.m.Start(s.task, t0); !errors.Is(err, runtime.ErrRejected) {
		t.Errorf("start after cancel: %v", err)
	}
	if err := s.report(f.m.ConfirmCancel(s.task, "", t0)); err != nil || string(s.task.Outcome) != `{}` {
		t.Errorf("confirm: %v %s", err, s.task.Outcome)
	}
}

func TestCancelChecks(t *testing.T) {
	f := newFixture(t, task.Config{MaxReasonBytes: 10})
	s := f.store(f.admit("plain", `{}`, "", t0))
	if _, err := s.cancel(f.caller, 0, nil, t0); !errors.Is(err, task.ErrServiceUnavailable) {
		t.Errorf("undeclared cancellation: %v", err)
	}
	s = f.store(f.running(t0))
	if _, err := s.cancel(f.caller, s.task.Revision, ptr(strings.Repeat("r", 11)), t0); !errors.Is(err, task.ErrResourceConstraint) {
		t.Errorf("long reason: %v", err)
	}
	if _, err := s.cancel(jid.MustParse("planner@other.example/worker"), s.task.Revision, nil, t0); err != task.ErrNotFound {
		t.Errorf("other caller: %v", err)
	}
}
