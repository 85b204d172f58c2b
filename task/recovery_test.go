package task_test

import (
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"agentgw/runtime"
	"agentgw/task"
	"agentgw/wire"

	"mellium.im/xmpp/jid"
	"mellium.im/xmpp/stanza"
)

func TestTaskState(t *testing.T) {
	f := newFixture(t, task.Config{Rand: &counter{}})
	s := f.store(f.running(t0))
	q := askUnit
	q.Timeout = time.Minute
	_ = s.report(f.m.RequestInput(s.task, q, t0.Add(2*time.Second)))

	st, err := f.m.State(&s.task, jid.MustParse("planner@agents.example/phone"), f.target, task.TaskStateRequest{TaskID: s.task.ID}, t0.Add(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	// The pending input in the state is the complete input_required
	// object, identical to the event payload.
	last := s.events[len(s.events)-1]
	if string(st.PendingInput) != string(last.Payload) || st.ResultAvailable || st.State != task.StateInputRequired ||
		st.Revision != 2 || st.Endpoint != "weather@agents.example" || !st.Deadline.Equal(s.task.Deadline) {
		t.Errorf("state %+v", st)
	}
	got := marshal(t, st.TokenReader())
	xsdCheck(t, got)
	golden(t, "task-state-input.xml", got)

	// Terminal: result available, no pending input, and <task-result/>
	// carries the terminal payload at the settlement revision.
	_ = s.report(f.m.Complete(s.task, summary("Light rain"), f.outputSchema(), t0.Add(4*time.Second)))
	st, _ = f.m.State(&s.task, f.caller, f.target, task.TaskStateRequest{TaskID: s.task.ID}, t0.Add(5*time.Second))
	if !st.ResultAvailable || st.PendingInput != nil || st.State != task.StateCompleted {
		t.Errorf("terminal state %+v", st)
	}
	res, err := f.m.Result(&s.task, f.caller, f.target, task.TaskResultRequest{TaskID: s.task.ID}, t0.Add(5*time.Second))
	if err != nil || res.Revision != s.task.Revision || string(res.Payload) != string(s.events[len(s.events)-1].Payload) {
		t.Errorf("result %+v %v", res, err)
	}
	got = marshal(t, res.TokenReader())
	xsdCheck(t, got)
	golden(t, "task-result-completed.xml", got)
}

func TestResultNotTerminal(t *testing.T) {
	f := newFixture(t, task.Config{})
	tk := f.inState(task.StateCancelling)
	_, err := f.m.Result(&tk, f.caller, f.target, task.TaskResultRequest{TaskID: tk.ID}, t0)
	if !errors.Is(err, task.ErrUnexpectedRequest) {
		t.Errorf("non-terminal result: %v", err)
	}
}

// TestNotFoundIndistinguishable: nonexistent, expired, other caller, other
// endpoint, wrong ID: the same error, byte for byte, for every operation.
func TestNotFoundIndistinguishable(t *testing.T) {
	f := newFixture(t, task.Config{Retention: time.Hour})
	tk := f.inState(task.StateCompleted)
	expired := tk.RetainUntil
	other := tk
	other.ID = "task-ffffffffffffffffffffffffffffffff"
	cases := []struct {
		name           string
		t              *task.Task
		caller, target jid.JID
		now            time.Time
	}{
		{"nonexistent", nil, f.caller, f.target, t0},
		{"expired", &tk, f.caller, f.target, expired},
		{"other caller", &tk, jid.MustParse("mallory@agents.example/worker"), f.target, t0},
		{"other domain", &tk, jid.MustParse("planner@evil.example/worker"), f.target, t0},
		{"other endpoint", &tk, f.caller, jid.MustParse("calendar@agents.example"), t0},
		{"other id", &other, f.caller, f.target, t0},
	}
	var want string
	for _, c := range cases {
		_, e1 := f.m.State(c.t, c.caller, c.target, task.TaskStateRequest{TaskID: tk.ID}, c.now)
		_, e2 := f.m.Result(c.t, c.caller, c.target, task.TaskResultRequest{TaskID: tk.ID}, c.now)
		o3, e3 := f.m.Cancel(c.t, c.caller, c.target, task.Cancel{TaskID: tk.ID}, c.now)
		o4, e4 := f.m.ProvideInput(c.t, nil, c.caller, c.target, task.ProvideInput{TaskID: tk.ID, RequestID: tk.ID, Input: "{}"}, c.now)
		if o3.Step.Changed() || o4.Step.Changed() {
			t.Errorf("%s: a refused request changed the task", c.name)
		}
		for _, err := range []error{e1, e2, e3, e4} {
			var se stanza.Error
			if !errors.As(err, &se) {
				t.Fatalf("%s: %v", c.name, err)
			}
			b := marshal(t, se.TokenReader())
			if want == "" {
				want = b
			}
			if b != want || err != task.ErrNotFound {
				t.Errorf("%s: %s", c.name, b)
			}
		}
	}
	// Just before retain-until the task is still there.
	if _, err := f.m.State(&tk, f.caller, f.target, task.TaskStateRequest{TaskID: tk.ID}, expired.Add(-time.Nanosecond)); err != nil {
		t.Errorf("before retain-until: %v", err)
	}
	// A non-terminal task never expires.
	run := f.inState(task.StateRunning)
	if _, err := f.m.State(&run, f.caller, f.target, task.TaskStateRequest{TaskID: run.ID}, run.RetainUntil.Add(time.Hour)); err != nil {
		t.Errorf("non-terminal past retain-until: %v", err)
	}
	if !tk.Purgeable(tk.PurgeAfter) || tk.Purgeable(tk.PurgeAfter.Add(-time.Nanosecond)) || run.Purgeable(run.PurgeAfter) {
		t.Error("Purgeable")
	}
}

// TestRestart walks the restart rules: tick, start what was accepted,
// interrupt what was running on a runtime that cannot resume.
func TestRestart(t *testing.T) {
	f := newFixture(t, task.Config{})
	accepted := f.inState(task.StateAccepted)
	s, err := f.m.Tick(accepted, t0.Add(time.Minute))
	if err != nil || s.Changed() {
		t.Fatal("tick changed an accepted task before its deadline")
	}
	if _, err := f.m.Start(accepted, t0.Add(time.Minute)); err != nil {
		t.Errorf("start after restart: %v", err)
	}
	running := f.inState(task.StateInputRequired)
	r := running.Resumption()
	if r.State != "input_required" || r.PendingInput == nil || r.PendingInput.Question != askUnit.Question || r.CancelRequested {
		t.Errorf("resumption %+v", r)
	}
	tool, _ := f.man.Tool("forecast.get")
	call := running.Call(tool)
	if call.Handle != task.Handle(running.ID) || strings.Contains(call.Handle, running.ID[5:]) || string(call.Arguments) != `{"city":"Riga"}` || !call.Tool.SupportsInput ||
		call.Tool.APIVersion != "1.4.0" || !call.Deadline.Equal(running.Deadline) {
		t.Errorf("call %+v", call)
	}
	st, err := f.m.Interrupt(running, t0.Add(time.Minute))
	if err != nil || st.Task.State != task.StateFailed {
		t.Errorf("interrupt: %v", err)
	}
	_ = runtime.ErrNotResumable
}

var update = flag.Bool("update", false, "rewrite golden files")

// golden compares got with testdata/golden/name, rewriting it under
// -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	p := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(got+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if string(want) != got+"\n" {
		t.Errorf("%s:\n got %s\nwant %s", name, got, want)
	}
	if _, err := wire.Parse(got); err != nil {
		t.Error(err)
	}
}

// TestTaskJSONRoundTrip: a Task survives encoding/json exactly, so a store
// may keep it as a JSON document beside its indexed columns.
func TestTaskJSONRoundTrip(t *testing.T) {
	f := newFixture(t, task.Config{})
	q := askUnit
	q.Timeout, q.Reasks = time.Minute, 2
	tk := f.running(t0.Add(1234567 * time.Nanosecond))
	tk = f.ok(f.m.RequestInput(tk, q, t0.Add(time.Second)))(tk)
	d, _ := task.ParseDateTime("2026-07-27T19:15:00.0000000001Z")
	tk.Deadline = d.Time()
	out, err := f.m.Cancel(&tk, f.caller, f.target, task.Cancel{TaskID: tk.ID, ExpectedRevision: tk.Revision, HasReason: true, Reason: "x"}, t0.Add(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []task.Task{tk, out.Step.Task} {
		raw, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		// The store keeps the addresses as JID strings.
		if want := `"Route":"` + f.caller.String() + `"`; !strings.Contains(string(raw), want) {
			t.Errorf("task document has no %s: %s", want, raw)
		}
		var back task.Task
		if err := json.Unmarshal(raw, &back); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back, v) {
			t.Errorf("round trip changed the task:\n%+v\n%+v", v, back)
		}
	}
}
