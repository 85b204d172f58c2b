package task_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"agentgw/manifest"
	"agentgw/runtime"
	"agentgw/runtime/builtin"
	"agentgw/task"

	"mellium.im/xmpp/jid"
)

// service is a minimal in-memory version of the gateway's task service,
// built only on the exported API: a mutex stands in for the store's single
// writer, every change is a Machine step committed whole, events go out
// after the commit, and each task's execution is driven from the runtime's
// goroutines through a Reporter.
type service struct {
	t      *testing.T
	m      *task.Machine
	man    *manifest.Manifest
	rt     runtime.Runtime
	target jid.JID

	mu     sync.Mutex
	now    time.Time
	tasks  map[string]*entry
	events chan task.Event
}

type entry struct {
	task   task.Task
	inputs map[string]task.InputRecord
	exe    runtime.Execution
	stop   context.CancelFunc
}

func newService(t *testing.T, rt runtime.Runtime) *service {
	man, err := builtin.Manifest("demo@agents.example")
	if err != nil {
		t.Fatal(err)
	}
	return &service{
		t: t, m: task.NewMachine(task.Config{}), man: man, rt: rt,
		target: jid.MustParse("demo@agents.example"),
		now:    t0, tasks: map[string]*entry{}, events: make(chan task.Event, 1024),
	}
}

// commitLocked writes a step and publishes its events; mu is held.
func (s *service) commitLocked(e *entry, st task.Step) {
	checkStep(s.t, e.task, st)
	if !st.Changed() {
		return
	}
	e.task = st.Task
	for _, r := range st.Inputs {
		e.inputs[r.RequestID] = r
	}
	for _, ev := range st.Events {
		s.events <- ev
	}
	if st.Settled() && e.stop != nil {
		e.stop()
	}
}

// apply runs one transition of task id in one "transaction".
func (s *service) apply(id string, f func(task.Task, time.Time) (task.Step, error)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.tasks[id]
	st, err := f(e.task, s.now)
	s.commitLocked(e, st)
	return err
}

// reporter is the Reporter of one task.
type reporter struct {
	s  *service
	id string
}

func (r reporter) Progress(p runtime.Progress) error {
	return r.s.apply(r.id, func(t task.Task, now time.Time) (task.Step, error) { return r.s.m.Progress(t, p, now) })
}
func (r reporter) RequestInput(q runtime.InputRequest) error {
	return r.s.apply(r.id, func(t task.Task, now time.Time) (task.Step, error) { return r.s.m.RequestInput(t, q, now) })
}
func (r reporter) Complete(res runtime.Result) error {
	return r.s.apply(r.id, func(t task.Task, now time.Time) (task.Step, error) {
		// The output schema of the pinned tool.
		tool, _ := r.s.man.Tool(t.Tool)
		return r.s.m.Complete(t, res, tool.OutputSchema, now)
	})
}
func (r reporter) Fail(f runtime.Failure) error {
	return r.s.apply(r.id, func(t task.Task, now time.Time) (task.Step, error) { return r.s.m.Fail(t, f, now) })
}
func (r reporter) Cancelled(reason string) error {
	return r.s.apply(r.id, func(t task.Task, now time.Time) (task.Step, error) { return r.s.m.ConfirmCancel(t, reason, now) })
}

// invoke admits, commits, starts and dispatches, in the documented order.
func (s *service) invoke(from jid.JID, requestID, tool, args string) task.Accepted {
	inv := task.Invoke{RequestID: requestID, Tool: tool, APIVersion: s.man.Version, ManifestHash: s.man.Hash, Arguments: args}
	req, err := s.m.Prepare(inv, from, s.man)
	if err != nil {
		s.t.Fatal(err)
	}
	s.mu.Lock()
	var prior *task.Task
	for _, e := range s.tasks {
		if e.task.Caller.Equal(req.Caller) && e.task.Target.Equal(req.Target) && e.task.RequestID == req.RequestID {
			prior = &e.task
		}
	}
	a, err := s.m.Admit(req, prior, s.now)
	if err != nil {
		s.mu.Unlock()
		s.t.Fatal(err)
	}
	if a.Replay {
		s.mu.Unlock()
		return a.Accepted()
	}
	e := &entry{task: a.Task, inputs: map[string]task.InputRecord{}}
	s.tasks[a.Task.ID] = e
	st, err := s.m.Start(e.task, s.now)
	s.commitLocked(e, st)
	if err != nil {
		s.mu.Unlock()
		return a.Accepted()
	}
	ctx, stop := context.WithCancel(context.Background())
	e.stop = stop
	mt, _ := s.man.Tool(tool)
	call := e.task.Call(mt)
	s.mu.Unlock()
	exe, err := s.rt.Start(ctx, call, reporter{s, a.Task.ID})
	if err != nil {
		s.t.Fatal(err)
	}
	s.mu.Lock()
	e.exe = exe
	s.mu.Unlock()
	return a.Accepted()
}

func (s *service) provide(from jid.JID, pi task.ProvideInput) (task.InputAccepted, error) {
	s.mu.Lock()
	e := s.tasks[pi.TaskID]
	var rec *task.InputRecord
	if r, ok := e.inputs[pi.RequestID]; ok {
		rec = &r
	}
	tk := e.task
	out, err := s.m.ProvideInput(&tk, rec, from, s.target, pi, s.now)
	s.commitLocked(e, out.Step)
	exe := e.exe
	s.mu.Unlock()
	if err == nil && out.Answer != nil {
		if derr := exe.Input(out.Answer); derr != nil {
			s.t.Errorf("dispatch input: %v", derr)
		}
	}
	return out.Accepted, err
}

func (s *service) cancel(from jid.JID, c task.Cancel) (task.CancelAccepted, error) {
	s.mu.Lock()
	e := s.tasks[c.TaskID]
	tk := e.task
	out, err := s.m.Cancel(&tk, from, s.target, c, s.now)
	s.commitLocked(e, out.Step)
	exe := e.exe
	s.mu.Unlock()
	if err == nil && !out.Replay {
		exe.Cancel()
	}
	return out.Accepted, err
}

func (s *service) state(from jid.JID, id string) task.TaskState {
	s.mu.Lock()
	defer s.mu.Unlock()
	tk := s.tasks[id].task
	st, err := s.m.State(&tk, from, s.target, task.TaskStateRequest{TaskID: id}, s.now)
	if err != nil {
		s.t.Fatal(err)
	}
	return st
}

// next returns the next event, which must be of type typ.
func (s *service) next(typ task.EventType) task.Event {
	s.t.Helper()
	select {
	case ev := <-s.events:
		if ev.Type != typ {
			s.t.Fatalf("event %s %s, want %s", ev.Type, ev.Payload, typ)
		}
		return ev
	case <-time.After(5 * time.Second):
		s.t.Fatalf("no %s event", typ)
	}
	return task.Event{}
}

// TestEndToEndBuiltin runs the three demo tools through the machine.
func TestEndToEndBuiltin(t *testing.T) {
	ticks := make(chan chan time.Time, 16)
	rt := builtin.New(builtin.Options{After: func(time.Duration) <-chan time.Time {
		ch := make(chan time.Time, 1)
		ticks <- ch
		return ch
	}})
	s := newService(t, rt)
	alice := jid.MustParse("alice@example.org/laptop")

	// echo: running, then completed with the structured text.
	acc := s.invoke(alice, "req-echo-0123456789abcdef01", "echo", `{"text":"hello"}`)
	s.next(task.EventStatus)
	ev := s.next(task.EventCompleted)
	if ev.Revision != 2 || !strings.Contains(string(ev.Payload), `"structuredContent":{"text":"hello"}`) {
		t.Errorf("echo: %s", ev.Payload)
	}
	// An identical retry returns the same acceptance and runs nothing.
	if again := s.invoke(alice, "req-echo-0123456789abcdef01", "echo", `{"text":"hello"}`); again != acc {
		t.Errorf("replay: %+v", again)
	}

	// count: progress per step, then completed.
	s.invoke(alice, "req-count-0123456789abcdef0", "count", `{"to":2,"interval_ms":100}`)
	s.next(task.EventStatus)
	for _, pct := range []string{`"percent":50`, `"percent":100`} {
		(<-ticks) <- time.Time{}
		if ev := s.next(task.EventProgress); !strings.Contains(string(ev.Payload), pct) {
			t.Errorf("progress %s", ev.Payload)
		}
	}
	if ev := s.next(task.EventCompleted); ev.Revision != 4 || !strings.Contains(string(ev.Payload), `{"counted":2}`) {
		t.Errorf("count: %d %s", ev.Revision, ev.Payload)
	}

	// count, cancelled after one step: cancelling, then cancelled.
	acc = s.invoke(alice, "req-count-cancel-0123456789", "count", `{"to":5,"interval_ms":100}`)
	s.next(task.EventStatus)
	(<-ticks) <- time.Time{}
	s.next(task.EventProgress)
	<-ticks // count waits for its second step
	ca, err := s.cancel(alice, task.Cancel{TaskID: acc.TaskID, ExpectedRevision: 2, HasReason: true, Reason: "enough"})
	if err != nil || ca.Revision != 3 {
		t.Fatalf("cancel: %+v %v", ca, err)
	}
	s.next(task.EventStatus)
	if ev := s.next(task.EventCancelled); ev.Revision != 4 {
		t.Errorf("cancelled at %d", ev.Revision)
	}
	if st := s.state(alice, acc.TaskID); st.State != task.StateCancelled || !st.ResultAvailable {
		t.Errorf("state %+v", st)
	}

	// ask: input_required; the caller recovers the request from
	// task-state on another resource and answers it.
	acc = s.invoke(alice, "req-ask-0123456789abcdef012", "ask", `{"question":"Colour?"}`)
	s.next(task.EventStatus)
	s.next(task.EventInputRequired)
	phone := jid.MustParse("alice@example.org/phone")
	st := s.state(phone, acc.TaskID)
	var pending struct {
		RequestID string `json:"requestId"`
		Question  string `json:"question"`
	}
	if err := json.Unmarshal(st.PendingInput, &pending); err != nil || pending.Question != "Colour?" {
		t.Fatalf("pending %s %v", st.PendingInput, err)
	}
	ia, err := s.provide(phone, task.ProvideInput{TaskID: acc.TaskID, RequestID: pending.RequestID, ExpectedRevision: st.Revision, Input: `{"answer":"blue"}`})
	if err != nil || ia.Revision != 3 {
		t.Fatalf("provide: %+v %v", ia, err)
	}
	s.next(task.EventStatus)
	if ev := s.next(task.EventCompleted); !strings.Contains(string(ev.Payload), `{"answer":"blue"}`) {
		t.Errorf("ask: %s", ev.Payload)
	}
	// The same answer again is the original acceptance, not a second
	// dispatch (the execution has ended and would refuse it).
	if again, err := s.provide(phone, task.ProvideInput{TaskID: acc.TaskID, RequestID: pending.RequestID, ExpectedRevision: st.Revision, Input: `{"answer":"blue"}`}); err != nil || again != ia {
		t.Errorf("input replay: %+v %v", again, err)
	}

	// The deadline settles a waiting task; the tool is stopped.
	acc = s.invoke(alice, "req-ask-deadline-0123456789", "ask", `{"question":"Still there?"}`)
	s.next(task.EventStatus)
	s.next(task.EventInputRequired)
	s.mu.Lock()
	e := s.tasks[acc.TaskID]
	s.now = e.task.NextWake()
	s.mu.Unlock()
	if err := s.apply(acc.TaskID, s.m.Tick); err != nil {
		t.Fatal(err)
	}
	if ev := s.next(task.EventFailed); !strings.Contains(string(ev.Payload), "deadline-expired") {
		t.Errorf("deadline: %s", ev.Payload)
	}
	select {
	case <-e.exe.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the tool kept running after settlement")
	}
	if _, err := s.provide(alice, task.ProvideInput{TaskID: acc.TaskID, RequestID: "input-00000000000000000000000000000000", ExpectedRevision: 2, Input: `{}`}); !errors.Is(err, task.ErrNotFound) {
		t.Errorf("unknown request: %v", err)
	}
}
