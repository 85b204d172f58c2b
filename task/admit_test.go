package task_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"agentgw/task"

	"mellium.im/xmpp/jid"
)

func TestIDs(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 1000; i++ {
		id, err := task.NewID(nil, "task-")
		if err != nil {
			t.Fatal(err)
		}
		if !task.ValidID(id) || len(id) != len("task-")+32 || seen[id] {
			t.Fatalf("bad or repeated id %q", id)
		}
		seen[id] = true
	}
	for s, ok := range map[string]bool{
		strings.Repeat("a", 21): false, strings.Repeat("a", 22): true, strings.Repeat("a", 128): true,
		strings.Repeat("a", 129): false, "req-91a6d2f49c514f44a2d223f0f97bd9fe": true,
		"A.b_c~d-e0123456789012345": true, "aaaaaaaaaaaaaaaaaaaaaa/": false, "aaaaaaaaaaaaaaaaaaaaaa é": false,
	} {
		if task.ValidID(s) != ok {
			t.Errorf("ValidID(%q) = %v", s, !ok)
		}
	}
	if _, err := task.NewID(nil, "bad prefix "); err == nil {
		t.Error("a prefix outside the grammar was accepted")
	}
}

// TestFingerprint checks that every listed input changes the fingerprint,
// and that equivalent spellings of the same request do not.
func TestFingerprint(t *testing.T) {
	d1, _ := task.ParseDateTime("2026-07-27T19:15:00Z")
	d2, _ := task.ParseDateTime("2026-07-27T21:15:00.000+02:00")
	d3, _ := task.ParseDateTime("2026-07-27T19:15:00.0000000001Z")
	base := task.FingerprintInput{
		Caller: "planner@agents.example", Target: "weather@agents.example", RequestID: "req-91a6d2f49c514f44a2d223f0f97bd9fe",
		Tool: "forecast.get", APIVersion: "1.4.0", ManifestHash: [32]byte{1}, Arguments: []byte(`{"city":"Riga"}`), Deadline: d1,
	}
	fp := task.Fingerprint(base)
	same := base
	same.Deadline = d2
	if task.Fingerprint(same) != fp {
		t.Error("the same deadline instant in another spelling changed the fingerprint")
	}
	for name, mutate := range map[string]func(*task.FingerprintInput){
		"caller":      func(in *task.FingerprintInput) { in.Caller = "other@agents.example" },
		"target":      func(in *task.FingerprintInput) { in.Target = "other@agents.example" },
		"request":     func(in *task.FingerprintInput) { in.RequestID += "x" },
		"tool":        func(in *task.FingerprintInput) { in.Tool = "forecast.get2" },
		"version":     func(in *task.FingerprintInput) { in.APIVersion = "1.4.1" },
		"hash":        func(in *task.FingerprintInput) { in.ManifestHash[31] = 1 },
		"arguments":   func(in *task.FingerprintInput) { in.Arguments = []byte(`{"city":"Oslo"}`) },
		"no deadline": func(in *task.FingerprintInput) { in.Deadline = task.Instant{} },
		"sub-ns":      func(in *task.FingerprintInput) { in.Deadline = d3 },
		// Length prefixes keep field boundaries: moving a byte between
		// neighbours must not collide.
		"boundary": func(in *task.FingerprintInput) {
			in.Caller, in.Target = "planner@agents.exampl", "eweather@agents.example"
		},
	} {
		in := base
		mutate(&in)
		if task.Fingerprint(in) == fp {
			t.Errorf("changing %s did not change the fingerprint", name)
		}
	}
}

func TestPrepare(t *testing.T) {
	f := newFixture(t, task.Config{})
	ok := f.invoke("forecast.get", ` { "city" : "Riga" } `, "")
	req, err := f.m.Prepare(ok, f.caller, f.man)
	if err != nil {
		t.Fatal(err)
	}
	if string(req.Args) != `{"city":"Riga"}` || req.Caller.String() != "planner@agents.example" ||
		req.Route.String() != "planner@agents.example/worker" || req.Target.String() != "weather@agents.example" ||
		!req.Features.Progress || !req.Features.Cancel || !req.Features.Input ||
		req.DefaultTimeout != 600*time.Second || req.MaxTimeout != time.Hour {
		t.Errorf("request: %+v", req)
	}
	// Insignificant whitespace and member order do not change the
	// canonical arguments, hence not the fingerprint.
	req2, _ := f.m.Prepare(f.invoke("forecast.get", `{"city":"Riga"}`, ""), f.caller, f.man)
	if req2.Fingerprint != req.Fingerprint {
		t.Error("canonical arguments differ")
	}
	// Another resource of the caller has the same fingerprint.
	req3, _ := f.m.Prepare(ok, jid.MustParse("planner@agents.example/phone"), f.man)
	if req3.Fingerprint != req.Fingerprint {
		t.Error("the resource must not be part of the fingerprint")
	}

	big := `{"city":"` + strings.Repeat("x", task.DefaultMaxArgumentBytes) + `"}`
	for _, tc := range []struct {
		name string
		inv  func() task.Invoke
		want error
	}{
		{"version", func() task.Invoke { v := ok; v.APIVersion = "9"; return v }, task.ErrNotFound},
		{"tool", func() task.Invoke { v := ok; v.Tool = "nope"; return v }, task.ErrNotFound},
		{"stale hash", func() task.Invoke { v := ok; v.ManifestHash[0] ^= 1; return v }, task.ErrConflict},
		{"syntax", func() task.Invoke { v := ok; v.Arguments = `{"city":`; return v }, task.ErrNotAcceptable},
		{"duplicate", func() task.Invoke { v := ok; v.Arguments = `{"city":"a","city":"b"}`; return v }, task.ErrNotAcceptable},
		{"surrogate", func() task.Invoke { v := ok; v.Arguments = `{"city":"\ud800"}`; return v }, task.ErrNotAcceptable},
		{"range", func() task.Invoke { v := ok; v.Arguments = `{"city":1e400}`; return v }, task.ErrNotAcceptable},
		{"trailing", func() task.Invoke { v := ok; v.Arguments = `{"city":"a"} x`; return v }, task.ErrNotAcceptable},
		{"schema", func() task.Invoke { v := ok; v.Arguments = `{"city":5}`; return v }, task.ErrNotAcceptable},
		{"extra", func() task.Invoke { v := ok; v.Arguments = `{"city":"a","x":1}`; return v }, task.ErrNotAcceptable},
		{"not object", func() task.Invoke { v := ok; v.Arguments = `"Riga"`; return v }, task.ErrNotAcceptable},
		{"too large", func() task.Invoke { v := ok; v.Arguments = big; return v }, task.ErrResourceConstraint},
		{"too deep", func() task.Invoke {
			v := ok
			v.Arguments = strings.Repeat("[", 100) + strings.Repeat("]", 100)
			return v
		}, task.ErrResourceConstraint},
	} {
		_, err := f.m.Prepare(tc.inv(), f.caller, f.man)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
			continue
		}
		// No error text reflects the request.
		if strings.Contains(err.Error(), "Riga") || strings.Contains(err.Error(), "xxxx") {
			t.Errorf("%s: error reflects input: %v", tc.name, err)
		}
	}
}

func TestAdmitAndReplay(t *testing.T) {
	f := newFixture(t, task.Config{Rand: &counter{}})
	req, err := f.m.Prepare(f.invoke("forecast.get", `{"city":"Riga"}`, ""), f.caller, f.man)
	if err != nil {
		t.Fatal(err)
	}
	a, err := f.m.Admit(req, nil, t0.Add(123456789))
	if err != nil {
		t.Fatal(err)
	}
	tk := a.Task
	if a.Replay || tk.State != task.StateAccepted || tk.Revision != 0 || !task.ValidID(tk.ID) ||
		!strings.HasPrefix(tk.ID, "task-") {
		t.Fatalf("admitted: %+v", tk)
	}
	// Times are recorded at millisecond resolution.
	created := t0.Add(123 * time.Millisecond)
	if !tk.Created.Equal(created) || !tk.Updated.Equal(created) {
		t.Errorf("created %s", tk.Created)
	}
	// The tool's default timeout applies without a caller deadline.
	if !tk.Deadline.Equal(created.Add(600*time.Second)) ||
		!tk.RetainUntil.Equal(tk.Deadline.Add(task.DefaultRetention)) || !tk.PurgeAfter.Equal(tk.RetainUntil) {
		t.Errorf("deadline %s retain %s purge %s", tk.Deadline, tk.RetainUntil, tk.PurgeAfter)
	}
	acc := marshal(t, a.Accepted().TokenReader())
	want := `<accepted created='2026-07-27T19:14:01.123Z' request-id='req-91a6d2f49c514f44a2d223f0f97bd9fe' retain-until='2026-07-28T19:24:01.123Z' revision='0' task-id='` + tk.ID + `' xmlns='urn:xmpp:agent-task:0'/>`
	if acc != want {
		t.Errorf("accepted:\n%s\n%s", acc, want)
	}
	xsdCheck(t, acc)

	// The task progresses; an identical retry from another resource gets
	// the original <accepted/> bytes and is not admitted again.
	tk = f.ok(f.m.Start(tk, t0.Add(time.Second)))(tk)
	req2, _ := f.m.Prepare(f.invoke("forecast.get", `{ "city":"Riga" }`, ""), jid.MustParse("planner@agents.example/phone"), f.man)
	r, err := f.m.Admit(req2, &tk, t0.Add(time.Hour))
	if err != nil || !r.Replay || !r.RouteChanged || r.Task.Route.String() != "planner@agents.example/phone" {
		t.Fatalf("replay: %+v %v", r, err)
	}
	if got := marshal(t, r.Accepted().TokenReader()); got != acc {
		t.Errorf("replay changed <accepted/>:\n%s", got)
	}
	if r.Task.State != task.StateRunning || r.Task.Revision != 1 {
		t.Error("a replay must not change the task")
	}
	// The same request ID with any difference: conflict. An expired
	// deadline does not matter for an identical replay but the conflict
	// check still comes first for a different one.
	for name, inv := range map[string]task.Invoke{
		"args":     f.invoke("forecast.get", `{"city":"Oslo"}`, ""),
		"deadline": f.invoke("forecast.get", `{"city":"Riga"}`, "2026-07-27T19:20:00Z"),
		"tool":     f.invoke("plain", `{"city":"Riga"}`, ""),
	} {
		rq, err := f.m.Prepare(inv, f.caller, f.man)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.m.Admit(rq, &tk, t0.Add(time.Hour)); !errors.Is(err, task.ErrConflict) {
			t.Errorf("%s: %v, want conflict", name, err)
		}
	}
}

// TestAdmitDeadline covers deadline admission, exact to the nanosecond
// and beyond, and the effective deadline.
func TestAdmitDeadline(t *testing.T) {
	f := newFixture(t, task.Config{})
	admit := func(tool, deadline string, now time.Time) (task.Task, error) {
		req, err := f.m.Prepare(f.invoke(tool, `{"city":"Riga"}`, deadline), f.caller, f.man)
		if err != nil {
			t.Fatal(err)
		}
		a, err := f.m.Admit(req, nil, now)
		return a.Task, err
	}
	d := time.Date(2026, 7, 27, 19, 15, 0, 0, time.UTC)
	for _, tc := range []struct {
		deadline string
		now      time.Time
		ok       bool
	}{
		{"2026-07-27T19:15:00Z", d.Add(-time.Nanosecond), true},
		{"2026-07-27T19:15:00Z", d, false},
		{"2026-07-27T21:15:00+02:00", d, false},
		{"2026-07-27T19:15:00.0000000001Z", d, true},
		{"2026-07-27T19:15:00.0000000001Z", d.Add(time.Nanosecond), false},
		{"2026-07-27T19:14:59.999Z", d.Add(-time.Millisecond), false},
	} {
		_, err := admit("forecast.get", tc.deadline, tc.now)
		if tc.ok != (err == nil) || !tc.ok && !errors.Is(err, task.ErrNotAcceptable) {
			t.Errorf("deadline %s at %s: %v", tc.deadline, tc.now.Format(time.RFC3339Nano), err)
		}
	}
	// The caller's deadline is kept to the nanosecond (rounded up past
	// it) when it is earlier than the tool's maximum.
	tk, err := admit("forecast.get", "2026-07-27T19:15:00.0000000001Z", t0)
	if err != nil || !tk.Deadline.Equal(d.Add(time.Nanosecond)) {
		t.Errorf("deadline %s %v", tk.Deadline, err)
	}
	// A later one is capped by maximumTimeoutSeconds (1 h).
	tk, _ = admit("forecast.get", "2026-07-29T00:00:00Z", t0)
	if !tk.Deadline.Equal(t0.Add(time.Hour)) {
		t.Errorf("capped deadline %s", tk.Deadline)
	}
	// A tool without timeouts gets the gateway's default, capped by the
	// gateway's maximum.
	tk, _ = admit("plain", "", t0)
	if !tk.Deadline.Equal(t0.Add(task.DefaultTimeout)) {
		t.Errorf("default deadline %s", tk.Deadline)
	}
	f2 := newFixture(t, task.Config{MaxTimeout: time.Minute, ReplayWindow: 72 * time.Hour, Retention: time.Hour})
	req, _ := f2.m.Prepare(f2.invoke("plain", `{}`, "2030-01-01T00:00:00Z"), f2.caller, f2.man)
	a, _ := f2.m.Admit(req, nil, t0)
	if !a.Task.Deadline.Equal(t0.Add(time.Minute)) || !a.Task.RetainUntil.Equal(t0.Add(61*time.Minute)) ||
		!a.Task.PurgeAfter.Equal(t0.Add(72*time.Hour)) {
		t.Errorf("config caps: %+v", a.Task)
	}
}

func TestFeatures(t *testing.T) {
	f := newFixture(t, task.Config{})
	all, _ := f.man.Tool("forecast.get")
	plain, _ := f.man.Tool("plain")
	if got := strings.Join(task.ToolFeatures(all), " "); got != strings.Join(task.Implemented, " ") {
		t.Errorf("tool features %s", got)
	}
	if len(task.ToolFeatures(plain)) != 0 {
		t.Error("plain declares nothing")
	}
	if got := strings.Join(task.EndpointFeatures(f.man), " "); got != "urn:xmpp:agent-task:0 urn:xmpp:agent-task:0#progress urn:xmpp:agent-task:0#cancel urn:xmpp:agent-task:0#input" {
		t.Errorf("endpoint features %s", got)
	}
}
