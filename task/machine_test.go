package task_test

import (
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"agentgw/runtime"
	"agentgw/task"
	"agentgw/wire"
)

var allStates = []task.State{
	task.StateAccepted, task.StateRunning, task.StateInputRequired, task.StateCancelling,
	task.StateCancelled, task.StateFailed, task.StateCompleted,
}

// TestTransitionTable checks Permitted against the normative list of
// "Task States", for all 49 pairs.
func TestTransitionTable(t *testing.T) {
	terminal := []task.State{task.StateCancelled, task.StateFailed, task.StateCompleted}
	allowed := map[[2]task.State]bool{}
	add := func(from task.State, to ...task.State) {
		for _, s := range to {
			allowed[[2]task.State{from, s}] = true
		}
	}
	add(task.StateAccepted, append([]task.State{task.StateRunning, task.StateInputRequired, task.StateCancelling}, terminal...)...)
	add(task.StateRunning, append([]task.State{task.StateInputRequired, task.StateCancelling}, terminal...)...)
	add(task.StateInputRequired, append([]task.State{task.StateRunning, task.StateCancelling}, terminal...)...)
	add(task.StateCancelling, terminal...)
	for _, from := range allStates {
		if !from.Valid() {
			t.Errorf("%s not valid", from)
		}
		for _, to := range allStates {
			if got := task.Permitted(from, to); got != allowed[[2]task.State{from, to}] {
				t.Errorf("Permitted(%s, %s) = %v", from, to, got)
			}
		}
	}
	if task.State("paused").Valid() || task.Permitted("paused", task.StateRunning) {
		t.Error("unknown state accepted")
	}
}

// inState returns a task of forecast.get in state s, reached through the
// machine at times from t0 on.
func (f *fixture) inState(s task.State) task.Task {
	f.t.Helper()
	now := t0
	tk := f.admit("forecast.get", `{"city":"Riga"}`, "", now)
	step := func(st task.Step, err error) { tk = f.ok(st, err)(tk) }
	switch s {
	case task.StateAccepted:
	case task.StateRunning:
		step(f.m.Start(tk, now))
	case task.StateInputRequired:
		step(f.m.Start(tk, now))
		step(f.m.RequestInput(tk, askUnit, now))
	case task.StateCancelling:
		step(f.m.Start(tk, now))
		out, err := f.m.Cancel(&tk, f.caller, f.target, task.Cancel{TaskID: tk.ID, ExpectedRevision: tk.Revision}, now)
		step(out.Step, err)
	case task.StateCompleted:
		step(f.m.Complete(tk, summary("ok"), f.outputSchema(), now))
	case task.StateFailed:
		step(f.m.Fail(tk, runtime.Failure{Code: "unavailable", Message: "down", Retryable: true}, now))
	case task.StateCancelled:
		step(f.m.ConfirmCancel(tk, "", now))
	}
	if tk.State != s {
		f.t.Fatalf("reached %s, want %s", tk.State, s)
	}
	return tk
}

var askUnit = runtime.InputRequest{
	Question: "Which unit?",
	Schema:   json.RawMessage(`{"type":"object","properties":{"unit":{"enum":["C","F"]}},"required":["unit"]}`),
}

func summary(s string) runtime.Result {
	r, err := runtime.TextResult(s, map[string]string{"summary": s})
	if err != nil {
		panic(err)
	}
	return r
}

func (f *fixture) outputSchema() []byte {
	tool, _ := f.man.Tool("forecast.get")
	return tool.OutputSchema
}

// TestTransitions drives every row of the transition table through the
// machine and checks the event each produces.
func TestTransitions(t *testing.T) {
	f := newFixture(t, task.Config{})
	now := t0.Add(time.Second)
	type op struct {
		name string
		// from are the sources of the op's row of the table.
		from []task.State
		to   task.State
		ev   task.EventType
		run  func(task.Task) (task.Step, error)
	}
	ops := []op{
		{"start", []task.State{task.StateAccepted}, task.StateRunning, task.EventStatus, func(tk task.Task) (task.Step, error) { return f.m.Start(tk, now) }},
		{"request input", []task.State{task.StateAccepted, task.StateRunning}, task.StateInputRequired, task.EventInputRequired, func(tk task.Task) (task.Step, error) {
			return f.m.RequestInput(tk, askUnit, now)
		}},
		{"provide input", []task.State{task.StateInputRequired}, task.StateRunning, task.EventStatus, func(tk task.Task) (task.Step, error) {
			if tk.Pending == nil {
				return task.Step{Task: tk}, task.ErrConflict
			}
			rec := &task.InputRecord{RequestID: tk.Pending.ID, Status: task.InputPending}
			out, err := f.m.ProvideInput(&tk, rec, f.caller, f.target,
				task.ProvideInput{TaskID: tk.ID, RequestID: tk.Pending.ID, ExpectedRevision: tk.Revision, Input: `{"unit":"C"}`}, now)
			return out.Step, err
		}},
		{"cancel", []task.State{task.StateAccepted, task.StateRunning, task.StateInputRequired, task.StateCancelling}, task.StateCancelling, task.EventStatus, func(tk task.Task) (task.Step, error) {
			out, err := f.m.Cancel(&tk, f.caller, f.target, task.Cancel{TaskID: tk.ID, ExpectedRevision: tk.Revision, HasReason: true, Reason: "other"}, now)
			return out.Step, err
		}},
		{"complete", []task.State{task.StateAccepted, task.StateRunning, task.StateInputRequired, task.StateCancelling}, task.StateCompleted, task.EventCompleted, func(tk task.Task) (task.Step, error) {
			return f.m.Complete(tk, summary("done"), f.outputSchema(), now)
		}},
		{"fail", []task.State{task.StateAccepted, task.StateRunning, task.StateInputRequired, task.StateCancelling}, task.StateFailed, task.EventFailed, func(tk task.Task) (task.Step, error) {
			return f.m.Fail(tk, runtime.Failure{Code: "com.example:x", Message: "no", Retryable: false}, now)
		}},
		{"confirm cancel", []task.State{task.StateAccepted, task.StateRunning, task.StateInputRequired, task.StateCancelling}, task.StateCancelled, task.EventCancelled, func(tk task.Task) (task.Step, error) {
			return f.m.ConfirmCancel(tk, "stopped", now)
		}},
	}
	for _, from := range allStates {
		for _, o := range ops {
			before := f.inState(from)
			s, err := o.run(before)
			checkStep(t, before, s)
			if slices.Contains(o.from, from) && task.Permitted(from, o.to) {
				if err != nil || len(s.Events) != 1 || s.Task.State != o.to || s.Events[0].Type != o.ev {
					t.Errorf("%s from %s: state %s, %d events, err %v", o.name, from, s.Task.State, len(s.Events), err)
				}
				continue
			}
			if err == nil || s.Changed() {
				t.Errorf("%s from %s was applied (→ %s)", o.name, from, s.Task.State)
			}
			// Reports on terminal tasks are discarded as settled; caller
			// operations on them conflict.
			if from.Terminal() && (o.name == "cancel" || o.name == "provide input") {
				if !errors.Is(err, task.ErrConflict) {
					t.Errorf("%s from %s: %v, want conflict", o.name, from, err)
				}
			} else if from.Terminal() && !errors.Is(err, runtime.ErrSettled) {
				t.Errorf("%s from %s: %v, want ErrSettled", o.name, from, err)
			}
		}
	}
}

// TestRevisions walks one task through a long history and checks that
// revisions grow by one per event with no gaps.
func TestRevisions(t *testing.T) {
	f := newFixture(t, task.Config{})
	tk := f.running(t0)
	for i := 1; i <= 5; i++ {
		p := float64(i * 10)
		tk = f.ok(f.m.Progress(tk, runtime.Progress{Percent: &p, Stage: "s"}, t0))(tk)
	}
	tk = f.ok(f.m.RequestInput(tk, askUnit, t0))(tk)
	tk = f.ok(f.m.Progress(tk, runtime.Progress{Message: "still waiting"}, t0))(tk)
	tk = f.ok(f.m.Complete(tk, summary("x"), f.outputSchema(), t0))(tk)
	if tk.Revision != 9 || tk.State != task.StateCompleted {
		t.Errorf("revision %d state %s", tk.Revision, tk.State)
	}
	// Anything after settlement is discarded.
	for _, s := range []func() (task.Step, error){
		func() (task.Step, error) { return f.m.Progress(tk, runtime.Progress{Message: "late"}, t0) },
		func() (task.Step, error) { return f.m.Complete(tk, summary("y"), f.outputSchema(), t0) },
		func() (task.Step, error) { return f.m.Fail(tk, runtime.Failure{}, t0) },
		func() (task.Step, error) { return f.m.Tick(tk, t0.Add(48*time.Hour)) },
		func() (task.Step, error) { return f.m.Interrupt(tk, t0) },
	} {
		st, _ := s()
		checkStep(t, tk, st)
		if st.Changed() {
			t.Error("terminal task changed")
		}
	}
}

func TestProgressRules(t *testing.T) {
	f := newFixture(t, task.Config{MaxEvents: 4})
	tk := f.running(t0)
	pct := func(v float64) *float64 { return &v }
	for _, p := range []runtime.Progress{
		{},
		{Percent: pct(-1)},
		{Percent: pct(100.5)},
		{Percent: pct(math.NaN())},
		{Percent: pct(math.Inf(1))},
		{Stage: strings.Repeat("s", 257)},
		{Message: strings.Repeat("m", 4097)},
		{Message: "bad \uFFFE char"},
		{Message: "bad utf-8 \xff"},
	} {
		s, err := f.m.Progress(tk, p, t0)
		checkStep(t, tk, s)
		if !errors.Is(err, runtime.ErrRejected) {
			t.Errorf("%+v: %v", p, err)
		}
	}
	tk = f.ok(f.m.Progress(tk, runtime.Progress{Percent: pct(50), Message: strings.Repeat("é", 4096)}, t0))(tk)
	tk = f.ok(f.m.Progress(tk, runtime.Progress{Percent: pct(50)}, t0))(tk)
	if _, err := f.m.Progress(tk, runtime.Progress{Percent: pct(49.9)}, t0); !errors.Is(err, runtime.ErrRejected) {
		t.Errorf("decreasing percent: %v", err)
	}
	tk = f.ok(f.m.Progress(tk, runtime.Progress{Stage: "no percent"}, t0))(tk)
	// MaxEvents caps progress, not settlement.
	if _, err := f.m.Progress(tk, runtime.Progress{Percent: pct(100)}, t0); !errors.Is(err, runtime.ErrRejected) {
		t.Errorf("event cap: %v", err)
	}
	f.ok(f.m.Complete(tk, summary("x"), f.outputSchema(), t0))(tk)

	// A tool without supportsProgress reports none.
	plain := f.admit("plain", `{}`, "", t0)
	if _, err := f.m.Progress(plain, runtime.Progress{Stage: "x"}, t0); !errors.Is(err, runtime.ErrRejected) {
		t.Errorf("undeclared progress: %v", err)
	}
}

func TestRequestInputRules(t *testing.T) {
	f := newFixture(t, task.Config{MaxInputRequests: 1})
	tk := f.running(t0)
	for name, q := range map[string]runtime.InputRequest{
		"no question":   {Schema: askUnit.Schema},
		"long question": {Question: strings.Repeat("q", 4097), Schema: askUnit.Schema},
		"no schema":     {Question: "q"},
		"array schema":  {Question: "q", Schema: json.RawMessage(`[]`)},
		"bad keyword":   {Question: "q", Schema: json.RawMessage(`{"frobnicate":1}`)},
		"external ref":  {Question: "q", Schema: json.RawMessage(`{"$ref":"file:///etc/passwd"}`)},
		"dup keys":      {Question: "q", Schema: json.RawMessage(`{"type":"object","type":"object"}`)},
	} {
		s, err := f.m.RequestInput(tk, q, t0)
		checkStep(t, tk, s)
		if !errors.Is(err, runtime.ErrRejected) {
			t.Errorf("%s: %v", name, err)
		}
	}
	tk = f.ok(f.m.RequestInput(tk, askUnit, t0))(tk)
	if _, err := f.m.RequestInput(tk, askUnit, t0); !errors.Is(err, runtime.ErrRejected) {
		t.Errorf("second pending request: %v", err)
	}
	rec := &task.InputRecord{RequestID: tk.Pending.ID, Status: task.InputPending}
	out, err := f.m.ProvideInput(&tk, rec, f.caller, f.target, task.ProvideInput{TaskID: tk.ID, RequestID: tk.Pending.ID, ExpectedRevision: tk.Revision, Input: `{"unit":"F"}`}, t0)
	tk = f.ok(out.Step, err)(tk)
	if _, err := f.m.RequestInput(tk, askUnit, t0); !errors.Is(err, runtime.ErrRejected) {
		t.Errorf("input request limit: %v", err)
	}
	plain := f.admit("plain", `{}`, "", t0)
	if _, err := f.m.RequestInput(plain, askUnit, t0); !errors.Is(err, runtime.ErrRejected) {
		t.Errorf("undeclared input: %v", err)
	}
}

func TestCompleteRules(t *testing.T) {
	f := newFixture(t, task.Config{MaxResultBytes: 1024})
	for _, tc := range []struct {
		name  string
		raw   string
		state task.State
		code  string
	}{
		{"structured", `{"content":[{"type":"text","text":"t"}],"structuredContent":{"summary":"s"}}`, task.StateCompleted, ""},
		{"isError is a completion", `{"content":[{"type":"text","text":"boom"}],"isError":true}`, task.StateCompleted, ""},
		{"isError with bad structure", `{"content":[],"isError":true,"structuredContent":{"x":1}}`, task.StateFailed, "internal-error"},
		{"meta kept", `{"content":[],"structuredContent":{"summary":"s"},"_meta":{"k":[1,2]}}`, task.StateCompleted, ""},
		{"missing structured", `{"content":[{"type":"text","text":"t"}]}`, task.StateFailed, "internal-error"},
		{"schema mismatch", `{"content":[],"structuredContent":{"summary":5}}`, task.StateFailed, "internal-error"},
		{"unknown member", `{"content":[],"structuredContent":{"summary":"s"},"extra":1}`, task.StateFailed, "internal-error"},
		{"no content", `{"structuredContent":{"summary":"s"}}`, task.StateFailed, "internal-error"},
		{"not json", `{"content":`, task.StateFailed, "internal-error"},
		{"duplicate keys", `{"content":[],"content":[]}`, task.StateFailed, "internal-error"},
		{"too large", `{"content":[{"type":"text","text":"` + strings.Repeat("x", 2000) + `"}]}`, task.StateFailed, task.CodeResultTooLarge},
	} {
		tk := f.running(t0)
		s, err := f.m.Complete(tk, runtime.Result{Raw: json.RawMessage(tc.raw)}, f.outputSchema(), t0)
		checkStep(t, tk, s)
		if err != nil || s.Task.State != tc.state {
			t.Errorf("%s: %s %v", tc.name, s.Task.State, err)
			continue
		}
		if tc.code != "" && !strings.Contains(string(s.Task.Outcome), `"code":"`+tc.code+`"`) {
			t.Errorf("%s: outcome %s", tc.name, s.Task.Outcome)
		}
		if tc.state == task.StateCompleted && !strings.Contains(string(s.Task.Outcome), `{"result":`) {
			t.Errorf("%s: outcome %s", tc.name, s.Task.Outcome)
		}
	}
	// A summary is kept; without an output schema anything valid goes.
	tk := f.admit("plain", `{}`, "", t0)
	s, err := f.m.Complete(tk, runtime.Result{Raw: json.RawMessage(`{"content":[]}`), Summary: "done"}, nil, t0)
	if err != nil || string(s.Task.Outcome) != `{"result":{"content":[]},"summary":"done"}` {
		t.Errorf("summary: %s %v", s.Task.Outcome, err)
	}
}

// TestCompleteWireSize: a result is measured after XML escaping, so one
// under the raw limit that escapes past wire.MaxStanzaBytes settles failed
// with the documented code, and one that fits completes.
func TestCompleteWireSize(t *testing.T) {
	f := newFixture(t, task.Config{})
	// The text is JSON-escaped by hand: json.Marshal would write < as
	// \u003c.
	text := func(s string) json.RawMessage {
		s = strings.ReplaceAll(s, `"`, `\"`)
		return json.RawMessage(`{"content":[{"type":"text","text":"` + s + `"}]}`)
	}
	for _, tc := range []struct {
		name string
		raw  json.RawMessage
		want task.State
	}{
		// 200 KiB of " and <: over the raw limit too.
		{"200 KiB of quote and lt", text(strings.Repeat(`"<`, 100<<10)), task.StateFailed},
		// 120 KB of pairs: 180 KB of JSON, 600 KB escaped.
		{"120 KB of pairs", text(strings.Repeat(`"<`, 60_000)), task.StateFailed},
		{"200 KiB of plain text", text(strings.Repeat("x", 200<<10)), task.StateCompleted},
		{"70 KB of pairs", text(strings.Repeat(`"<`, 35_000)), task.StateCompleted},
	} {
		if len(tc.raw) > task.DefaultMaxResultBytes && tc.want == task.StateCompleted {
			t.Fatalf("%s: case over the raw limit", tc.name)
		}
		tk := f.admit("plain", `{}`, "", t0)
		s, err := f.m.Complete(tk, runtime.Result{Raw: tc.raw}, nil, t0)
		if err != nil || s.Task.State != tc.want {
			t.Errorf("%s: %s %v", tc.name, s.Task.State, err)
			continue
		}
		if tc.want == task.StateFailed {
			if !strings.Contains(string(s.Task.Outcome), `"code":"`+task.CodeResultTooLarge+`"`) {
				t.Errorf("%s: outcome %s", tc.name, s.Task.Outcome)
			}
			continue
		}
		if n := wire.EscapedLen(string(s.Task.Outcome)); n > task.MaxEventWireBytes {
			t.Errorf("%s: completed payload escapes to %d bytes, over %d", tc.name, n, task.MaxEventWireBytes)
		}
	}
}

func TestFailRules(t *testing.T) {
	f := newFixture(t, task.Config{})
	for _, tc := range []struct {
		in   runtime.Failure
		want string
	}{
		{runtime.Failure{Code: "unavailable", Message: "Provider down.", Retryable: true},
			`{"error":{"code":"unavailable","message":"Provider down.","retryable":true}}`},
		{runtime.Failure{Code: "com.example.weather:quota-exceeded", Message: "Quota.", Details: json.RawMessage(`{"com.example:limit":5}`)},
			`{"error":{"code":"com.example.weather:quota-exceeded","details":{"com.example:limit":5},"message":"Quota.","retryable":false}}`},
		{runtime.Failure{Code: "quota-exceeded", Message: "unqualified"},
			`{"error":{"code":"internal-error","message":"unqualified","retryable":false}}`},
		{runtime.Failure{Code: "a:", Message: ""},
			`{"error":{"code":"internal-error","message":"The tool failed.","retryable":false}}`},
		{runtime.Failure{Code: "x:y", Message: "m", Details: json.RawMessage(`[1]`)},
			`{"error":{"code":"x:y","message":"m","retryable":false}}`},
		{runtime.Failure{Code: "x:y z", Message: strings.Repeat("m", 5000)},
			`{"error":{"code":"internal-error","message":"` + strings.Repeat("m", task.MaxFailureMessageChars-1) + `…","retryable":false}}`},
		{runtime.Failure{Code: "x:y", Message: "bell\a and\ttab\nline"},
			`{"error":{"code":"x:y","message":"bell` + "\uFFFD" + ` and\ttab\nline","retryable":false}}`},
		{runtime.Failure{Code: "x:y", Message: "bad \xff utf-8"},
			`{"error":{"code":"x:y","message":"The tool failed.","retryable":false}}`},
	} {
		tk := f.running(t0)
		s, err := f.m.Fail(tk, tc.in, t0)
		checkStep(t, tk, s)
		if err != nil || string(s.Task.Outcome) != tc.want {
			t.Errorf("%+v:\n got %s\nwant %s (%v)", tc.in, s.Task.Outcome, tc.want, err)
		}
	}
}

// TestDeadlineAtEveryBoundary checks that every mutation committed at or
// after the deadline settles the task as failed/deadline-expired instead,
// and that a nanosecond earlier it is applied.
func TestDeadlineAtEveryBoundary(t *testing.T) {
	f := newFixture(t, task.Config{})
	fresh := func(s task.State, deadline string) task.Task {
		tk := f.inState(s)
		d, _ := task.ParseDateTime(deadline)
		tk.Deadline = d.Time()
		return tk
	}
	const deadline = "2026-07-27T19:20:00.5Z"
	dl := time.Date(2026, 7, 27, 19, 20, 0, 500_000_000, time.UTC)
	pct := 10.0
	for _, tc := range []struct {
		name string
		from task.State
		run  func(tk task.Task, now time.Time) (task.Step, error)
	}{
		{"start", task.StateAccepted, func(tk task.Task, now time.Time) (task.Step, error) { return f.m.Start(tk, now) }},
		{"progress", task.StateRunning, func(tk task.Task, now time.Time) (task.Step, error) {
			return f.m.Progress(tk, runtime.Progress{Percent: &pct}, now)
		}},
		{"request input", task.StateRunning, func(tk task.Task, now time.Time) (task.Step, error) { return f.m.RequestInput(tk, askUnit, now) }},
		{"complete", task.StateCancelling, func(tk task.Task, now time.Time) (task.Step, error) {
			return f.m.Complete(tk, summary("late"), f.outputSchema(), now)
		}},
		{"fail", task.StateRunning, func(tk task.Task, now time.Time) (task.Step, error) {
			return f.m.Fail(tk, runtime.Failure{Code: "unavailable", Message: "x"}, now)
		}},
		{"confirm cancel", task.StateCancelling, func(tk task.Task, now time.Time) (task.Step, error) { return f.m.ConfirmCancel(tk, "", now) }},
		{"interrupt", task.StateRunning, func(tk task.Task, now time.Time) (task.Step, error) { return f.m.Interrupt(tk, now) }},
		{"tick", task.StateInputRequired, func(tk task.Task, now time.Time) (task.Step, error) { return f.m.Tick(tk, now) }},
		{"provide input", task.StateInputRequired, func(tk task.Task, now time.Time) (task.Step, error) {
			rec := &task.InputRecord{RequestID: tk.Pending.ID, Status: task.InputPending}
			out, err := f.m.ProvideInput(&tk, rec, f.caller, f.target,
				task.ProvideInput{TaskID: tk.ID, RequestID: tk.Pending.ID, ExpectedRevision: tk.Revision, Input: `{"unit":"C"}`}, now)
			return out.Step, err
		}},
		{"cancel", task.StateInputRequired, func(tk task.Task, now time.Time) (task.Step, error) {
			out, err := f.m.Cancel(&tk, f.caller, f.target, task.Cancel{TaskID: tk.ID, ExpectedRevision: tk.Revision}, now)
			return out.Step, err
		}},
	} {
		// At the deadline: settled failed/deadline-expired, one event.
		tk := fresh(tc.from, deadline)
		s, err := tc.run(tk, dl)
		checkStep(t, tk, s)
		if s.Task.State != task.StateFailed || len(s.Events) != 1 ||
			!strings.Contains(string(s.Task.Outcome), `"code":"deadline-expired"`) {
			t.Errorf("%s at deadline: %s %s", tc.name, s.Task.State, s.Task.Outcome)
		}
		switch tc.name {
		case "provide input", "cancel":
			if !errors.Is(err, task.ErrConflict) {
				t.Errorf("%s at deadline: %v, want conflict", tc.name, err)
			}
		case "tick":
			if err != nil {
				t.Errorf("tick: %v", err)
			}
		default:
			if !errors.Is(err, runtime.ErrSettled) {
				t.Errorf("%s at deadline: %v, want ErrSettled", tc.name, err)
			}
		}
		if tc.from == task.StateInputRequired && (len(s.Inputs) != 1 || s.Inputs[0].Status != task.InputSuperseded) {
			t.Errorf("%s: pending input not superseded: %+v", tc.name, s.Inputs)
		}
		// A nanosecond before: applied normally.
		tk = fresh(tc.from, deadline)
		s, err = tc.run(tk, dl.Add(-time.Nanosecond))
		checkStep(t, tk, s)
		if tc.name != "tick" && (err != nil || s.Task.State == task.StateFailed && tc.name != "fail" && tc.name != "interrupt") {
			t.Errorf("%s before deadline: %s %v", tc.name, s.Task.State, err)
		}
	}
	// A settlement committed before the deadline is immutable.
	tk := fresh(task.StateCompleted, deadline)
	s, _ := f.m.Tick(tk, dl.Add(time.Hour))
	if s.Changed() {
		t.Error("deadline changed a settled task")
	}
}

// TestInterrupt checks the restart settlement: unavailable and retryable.
func TestInterrupt(t *testing.T) {
	f := newFixture(t, task.Config{})
	tk := f.inState(task.StateInputRequired)
	s, err := f.m.Interrupt(tk, t0)
	checkStep(t, tk, s)
	if err != nil || string(s.Task.Outcome) != `{"error":{"code":"unavailable","message":"The task was interrupted by a gateway restart.","retryable":true}}` {
		t.Errorf("%s %v", s.Task.Outcome, err)
	}
	if len(s.Inputs) != 1 || s.Inputs[0].Status != task.InputSuperseded {
		t.Errorf("inputs %+v", s.Inputs)
	}
}
