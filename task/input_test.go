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

// store is an in-memory stand-in for the gateway's persistence of one
// task: it commits steps exactly as the persistence contract says.
type store struct {
	f      *fixture
	task   task.Task
	inputs map[string]task.InputRecord
	events []task.Event
}

func (f *fixture) store(tk task.Task) *store {
	return &store{f: f, task: tk, inputs: map[string]task.InputRecord{}}
}

// commit writes a step (with any error it came with) and returns the
// error.
func (s *store) commit(st task.Step, err error) error {
	s.f.t.Helper()
	checkStep(s.f.t, s.task, st)
	if st.Changed() {
		s.task = st.Task
		s.events = append(s.events, st.Events...)
		for _, r := range st.Inputs {
			s.inputs[r.RequestID] = r
		}
	}
	return err
}

func (s *store) record(id string) *task.InputRecord {
	if r, ok := s.inputs[id]; ok {
		return &r
	}
	return nil
}

func (s *store) provide(from jid.JID, requestID string, rev int64, input string, now time.Time) (task.InputAccepted, error) {
	s.f.t.Helper()
	tk := s.task
	out, err := s.f.m.ProvideInput(&tk, s.record(requestID), from, s.f.target,
		task.ProvideInput{TaskID: tk.ID, RequestID: requestID, ExpectedRevision: rev, Input: input}, now)
	if err == nil && out.Answer == nil && out.Step.Changed() {
		s.f.t.Error("an accepted answer must be dispatched")
	}
	return out.Accepted, s.commit(out.Step, err)
}

func (s *store) cancel(from jid.JID, rev int64, reason *string, now time.Time) (task.CancelAccepted, error) {
	s.f.t.Helper()
	tk := s.task
	c := task.Cancel{TaskID: tk.ID, ExpectedRevision: rev}
	if reason != nil {
		c.HasReason, c.Reason = true, *reason
	}
	out, err := s.f.m.Cancel(&tk, from, s.f.target, c, now)
	return out.Accepted, s.commit(out.Step, err)
}

func (s *store) report(st task.Step, err error) error {
	s.f.t.Helper()
	return s.commit(st, err)
}

// TestInputReplay: an identical answer is recognized before any expiry,
// revision or terminal check, also after later transitions, and never
// dispatched twice; any other answer to the same request conflicts.
func TestInputReplay(t *testing.T) {
	f := newFixture(t, task.Config{})
	s := f.store(f.running(t0))
	q := askUnit
	q.Timeout = time.Minute
	if err := s.report(f.m.RequestInput(s.task, q, t0)); err != nil {
		t.Fatal(err)
	}
	req := s.task.Pending
	if !strings.HasPrefix(req.ID, "input-") || !req.Expires.Equal(t0.Add(time.Minute)) || s.inputs[req.ID].Status != task.InputPending {
		t.Fatalf("pending %+v", req)
	}
	rev := s.task.Revision
	acc, err := s.provide(f.caller, req.ID, rev, ` {"unit" : "C"} `, t0.Add(time.Second))
	if err != nil || acc.Revision != rev+1 || s.task.State != task.StateRunning {
		t.Fatalf("accept: %+v %v", acc, err)
	}
	xsdCheck(t, marshal(t, acc.TokenReader()))
	// The task moves on and settles; the request has long expired.
	if err := s.report(f.m.Complete(s.task, summary("ok"), f.outputSchema(), t0.Add(2*time.Second))); err != nil {
		t.Fatal(err)
	}
	later := t0.Add(10 * time.Minute)
	tk := s.task
	for _, from := range []string{"planner@agents.example/worker", "planner@agents.example/other"} {
		// Identical tuple (other whitespace, same canonical bytes; the
		// resource is not part of it): the original acceptance.
		out, err := f.m.ProvideInput(&tk, s.record(req.ID), jid.MustParse(from), f.target,
			task.ProvideInput{TaskID: tk.ID, RequestID: req.ID, ExpectedRevision: rev, Input: `{"unit":"C"}`}, later)
		if err != nil || out.Accepted != acc || out.Answer != nil || out.Step.Changed() {
			t.Errorf("replay from %s: %+v %v", from, out, err)
		}
	}
	for name, in := range map[string]task.ProvideInput{
		"other input":    {TaskID: tk.ID, RequestID: req.ID, ExpectedRevision: rev, Input: `{"unit":"F"}`},
		"other revision": {TaskID: tk.ID, RequestID: req.ID, ExpectedRevision: rev + 1, Input: `{"unit":"C"}`},
	} {
		if _, err := f.m.ProvideInput(&tk, s.record(req.ID), f.caller, f.target, in, later); !errors.Is(err, task.ErrConflict) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// Another caller, or an unknown request: not found.
	if _, err := f.m.ProvideInput(&tk, s.record(req.ID), jid.MustParse("mallory@example.com/x"), f.target,
		task.ProvideInput{TaskID: tk.ID, RequestID: req.ID, ExpectedRevision: rev, Input: `{"unit":"C"}`}, later); err != task.ErrNotFound {
		t.Errorf("other caller: %v", err)
	}
	if _, err := f.m.ProvideInput(&tk, nil, f.caller, f.target,
		task.ProvideInput{TaskID: tk.ID, RequestID: "input-00000000000000000000000000000000", ExpectedRevision: rev, Input: `{}`}, later); err != task.ErrNotFound {
		t.Errorf("unknown request: %v", err)
	}
}

func TestInputChecks(t *testing.T) {
	f := newFixture(t, task.Config{MaxInputBytes: 64})
	s := f.store(f.running(t0))
	if err := s.report(f.m.RequestInput(s.task, askUnit, t0)); err != nil {
		t.Fatal(err)
	}
	id, rev := s.task.Pending.ID, s.task.Revision
	for _, tc := range []struct {
		rev   int64
		input string
		want  error
	}{
		{rev, `{"unit":"K"}`, task.ErrNotAcceptable},
		{rev, `{"unit":"C","unit":"F"}`, task.ErrNotAcceptable},
		{rev, `{"unit":`, task.ErrNotAcceptable},
		{rev, `{"unit":"` + strings.Repeat("C", 100) + `"}`, task.ErrResourceConstraint},
		{rev - 1, `{"unit":"C"}`, task.ErrConflict},
		{rev + 1, `{"unit":"C"}`, task.ErrConflict},
	} {
		if _, err := s.provide(f.caller, id, tc.rev, tc.input, t0); !errors.Is(err, tc.want) {
			t.Errorf("rev %d %s: %v, want %v", tc.rev, tc.input, err, tc.want)
		}
	}
	// Progress while input is pending makes the old revision stale; the
	// caller recovers the state and answers with the current one.
	if err := s.report(f.m.Progress(s.task, runtime.Progress{Message: "waiting"}, t0)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.provide(f.caller, id, rev, `{"unit":"C"}`, t0); !errors.Is(err, task.ErrConflict) {
		t.Errorf("stale after progress: %v", err)
	}
	if _, err := s.provide(f.caller, id, s.task.Revision, `{"unit":"C"}`, t0); err != nil {
		t.Errorf("current revision: %v", err)
	}
}

// TestInputExpiry: input is refused at or after expiresAt; the expiry
// settles the task or re-issues the request, and a late answer to an
// expired request is a conflict, not item-not-found.
func TestInputExpiry(t *testing.T) {
	f := newFixture(t, task.Config{})
	q := askUnit
	q.Timeout = 30 * time.Second
	expires := t0.Add(30 * time.Second)

	// Just before expiresAt: accepted.
	s := f.store(f.running(t0))
	_ = s.report(f.m.RequestInput(s.task, q, t0))
	if _, err := s.provide(f.caller, s.task.Pending.ID, s.task.Revision, `{"unit":"C"}`, expires.Add(-time.Nanosecond)); err != nil {
		t.Errorf("before expiry: %v", err)
	}

	// At expiresAt, with no re-issue: the same commit settles the task
	// (failed, agentgw:input-expired) and the answer conflicts.
	s = f.store(f.running(t0))
	_ = s.report(f.m.RequestInput(s.task, q, t0))
	id, rev := s.task.Pending.ID, s.task.Revision
	if _, err := s.provide(f.caller, id, rev, `{"unit":"C"}`, expires); !errors.Is(err, task.ErrConflict) {
		t.Errorf("at expiry: %v", err)
	}
	if s.task.State != task.StateFailed || !strings.Contains(string(s.task.Outcome), task.CodeInputExpired) ||
		s.inputs[id].Status != task.InputExpired {
		t.Errorf("after expiry: %s %s %+v", s.task.State, s.task.Outcome, s.inputs[id])
	}
	if _, err := s.provide(f.caller, id, rev, `{"unit":"C"}`, expires.Add(time.Hour)); !errors.Is(err, task.ErrConflict) {
		t.Errorf("late answer: %v, want conflict", err)
	}

	// With re-issues: Tick issues a new request (new ID, same question,
	// state unchanged, one input_required event); the old ID conflicts.
	q.Reasks = 1
	s = f.store(f.running(t0))
	_ = s.report(f.m.RequestInput(s.task, q, t0))
	old := s.task.Pending.ID
	if err := s.report(f.m.Tick(s.task, expires)); err != nil {
		t.Fatal(err)
	}
	p := s.task.Pending
	last := s.events[len(s.events)-1]
	if s.task.State != task.StateInputRequired || p.ID == old || p.Question != q.Question || p.Reasks != 0 ||
		!p.Expires.Equal(expires.Add(30*time.Second)) || last.Type != task.EventInputRequired ||
		s.inputs[old].Status != task.InputExpired || s.inputs[p.ID].Status != task.InputPending {
		t.Fatalf("re-issue: %+v %+v", s.task, s.inputs)
	}
	if _, err := s.provide(f.caller, old, s.task.Revision, `{"unit":"C"}`, expires); !errors.Is(err, task.ErrConflict) {
		t.Errorf("old request: %v", err)
	}
	// Nothing is due between timers.
	if st, _ := f.m.Tick(s.task, expires.Add(time.Second)); st.Changed() {
		t.Error("tick without a due timer changed the task")
	}
	if !s.task.NextWake().Equal(p.Expires) {
		t.Errorf("next wake %s", s.task.NextWake())
	}
	// The second expiry has no re-issue left: settled.
	if err := s.report(f.m.Tick(s.task, p.Expires)); err != nil || s.task.State != task.StateFailed {
		t.Errorf("second expiry: %s %v", s.task.State, err)
	}
	if !s.task.NextWake().Equal(s.task.PurgeAfter) {
		t.Error("a settled task wakes for purging")
	}
}

// TestInputRaces orders input against cancellation, settlement and the
// deadline by commit.
func TestInputRaces(t *testing.T) {
	f := newFixture(t, task.Config{})
	setup := func() (*store, string, int64) {
		s := f.store(f.running(t0))
		_ = s.report(f.m.RequestInput(s.task, askUnit, t0))
		return s, s.task.Pending.ID, s.task.Revision
	}
	// Cancel commits first: the answer conflicts.
	s, id, rev := setup()
	if _, err := s.cancel(f.caller, rev, nil, t0); err != nil {
		t.Fatal(err)
	}
	if s.inputs[id].Status != task.InputSuperseded || s.task.Pending != nil {
		t.Errorf("cancel did not supersede the request")
	}
	if _, err := s.provide(f.caller, id, rev, `{"unit":"C"}`, t0); !errors.Is(err, task.ErrConflict) {
		t.Errorf("answer after cancel: %v", err)
	}
	// Input commits first: it stays valid; the cancel with the old
	// revision is stale, with the new one accepted.
	s, id, rev = setup()
	acc, err := s.provide(f.caller, id, rev, `{"unit":"C"}`, t0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.cancel(f.caller, rev, nil, t0); !errors.Is(err, task.ErrConflict) {
		t.Errorf("stale cancel: %v", err)
	}
	if _, err := s.cancel(f.caller, s.task.Revision, nil, t0); err != nil {
		t.Errorf("cancel: %v", err)
	}
	if a2, err := s.provide(f.caller, id, rev, `{"unit":"C"}`, t0); err != nil || a2 != acc {
		t.Errorf("input replay after cancel: %v", err)
	}
	// Settlement commits first: conflict.
	s, id, rev = setup()
	_ = s.report(f.m.Fail(s.task, runtime.Failure{Code: "unavailable", Message: "x"}, t0))
	if _, err := s.provide(f.caller, id, rev, `{"unit":"C"}`, t0); !errors.Is(err, task.ErrConflict) {
		t.Errorf("answer after settlement: %v", err)
	}
	// Deadline: the answer's own commit settles the task.
	s, id, rev = setup()
	if _, err := s.provide(f.caller, id, rev, `{"unit":"C"}`, s.task.Deadline); !errors.Is(err, task.ErrConflict) ||
		!strings.Contains(string(s.task.Outcome), "deadline-expired") {
		t.Errorf("answer at deadline: %v %s", err, s.task.Outcome)
	}
}
