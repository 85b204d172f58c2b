package task_test

import (
	"encoding/xml"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"agentgw/internal/xsdtest"
	"agentgw/manifest"
	"agentgw/task"
	"agentgw/wire"

	"mellium.im/xmpp/jid"
)

// t0 is the admission time of most tests, the spec examples' instant.
var t0 = time.Date(2026, 7, 27, 19, 14, 1, 0, time.UTC)

// testManifest has a tool with every feature and an output schema, and
// one with none.
const testManifest = `{
 "manifestSpecVersion": "0",
 "agent": {"jid": "weather@agents.example", "name": "weather", "version": "1.4.0"},
 "tools": [
  {"name": "forecast.get",
   "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"], "additionalProperties": false},
   "outputSchema": {"type": "object", "properties": {"summary": {"type": "string"}},
                    "required": ["summary"]},
   "urn:xmpp:agent-api:0": {"supportsProgress": true, "supportsCancellation": true,
                            "supportsInput": true, "defaultTimeoutSeconds": 600,
                            "maximumTimeoutSeconds": 3600}},
  {"name": "plain", "inputSchema": {"type": "object"}}
 ]
}`

// counter is a deterministic stand-in for crypto/rand in tests.
type counter struct{ n byte }

func (c *counter) Read(p []byte) (int, error) {
	for i := range p {
		c.n++
		p[i] = c.n
	}
	return len(p), nil
}

type fixture struct {
	t      *testing.T
	m      *task.Machine
	man    *manifest.Manifest
	caller jid.JID
	target jid.JID
}

func newFixture(t *testing.T, cfg task.Config) *fixture {
	t.Helper()
	man, err := manifest.Parse([]byte(testManifest), manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{
		t:      t,
		m:      task.NewMachine(cfg),
		man:    man,
		caller: jid.MustParse("planner@agents.example/worker"),
		target: jid.MustParse("weather@agents.example"),
	}
}

// invoke returns an <invoke/> for the fixture's manifest.
func (f *fixture) invoke(tool, args, deadline string) task.Invoke {
	f.t.Helper()
	inv := task.Invoke{
		RequestID:    "req-91a6d2f49c514f44a2d223f0f97bd9fe",
		Tool:         tool,
		APIVersion:   f.man.Version,
		ManifestHash: f.man.Hash,
		Arguments:    args,
	}
	if deadline != "" {
		d, err := task.ParseDateTime(deadline)
		if err != nil {
			f.t.Fatal(err)
		}
		inv.Deadline = d
	}
	return inv
}

// admit admits a new task of tool at now.
func (f *fixture) admit(tool, args, deadline string, now time.Time) task.Task {
	f.t.Helper()
	req, err := f.m.Prepare(f.invoke(tool, args, deadline), f.caller, f.man)
	if err != nil {
		f.t.Fatalf("prepare: %v", err)
	}
	a, err := f.m.Admit(req, nil, now)
	if err != nil {
		f.t.Fatalf("admit: %v", err)
	}
	return a.Task
}

// running admits forecast.get and starts it.
func (f *fixture) running(now time.Time) task.Task {
	f.t.Helper()
	tk := f.admit("forecast.get", `{"city":"Riga"}`, "", now)
	return f.ok(f.m.Start(tk, now))(tk)
}

// ok returns a function that checks a step taken from before and returns
// its task; the step must have committed exactly one event.
func (f *fixture) ok(s task.Step, err error) func(before task.Task) task.Task {
	return func(before task.Task) task.Task {
		f.t.Helper()
		if err != nil {
			f.t.Fatalf("step: %v", err)
		}
		checkStep(f.t, before, s)
		if len(s.Events) != 1 {
			f.t.Fatalf("step has %d events, want 1", len(s.Events))
		}
		return s.Task
	}
}

// checkStep checks the invariants of every step: nothing changes without
// an event; events have consecutive revisions that end at the task's, and
// valid IDs and payloads, and XSD-valid XML; a terminal task never
// changes; states move only along the transition table.
func checkStep(t *testing.T, before task.Task, s task.Step) {
	t.Helper()
	if len(s.Events) == 0 {
		// Caller operations refused before looking at the task return a
		// zero Step; anything else must be the task unchanged.
		if s.Task.ID != "" && !reflect.DeepEqual(before, s.Task) || len(s.Inputs) != 0 {
			t.Errorf("a step without events changed something: %+v", s)
		}
		return
	}
	if before.State.Terminal() {
		t.Errorf("a step changed terminal task (%s)", before.State)
	}
	for i, ev := range s.Events {
		if want := before.Revision + int64(i) + 1; ev.Revision != want {
			t.Errorf("event %d has revision %d, want %d", i, ev.Revision, want)
		}
		if ev.TaskID != before.ID || !task.ValidID(ev.ID) || !strings.HasPrefix(ev.ID, "evt-") {
			t.Errorf("event %d has bad identifiers %q %q", i, ev.TaskID, ev.ID)
		}
		if err := task.ValidatePayload(ev.Type, ev.Payload); err != nil {
			t.Errorf("event %d (%s) payload %s: %v", i, ev.Type, ev.Payload, err)
		}
		xsdCheck(t, marshal(t, ev.TokenReader()))
	}
	if last := s.Events[len(s.Events)-1]; last.Revision != s.Task.Revision {
		t.Errorf("task revision %d, last event %d", s.Task.Revision, last.Revision)
	}
	if before.State != s.Task.State && !task.Permitted(before.State, s.Task.State) {
		// A re-issued input request passes through no other state, so
		// equal states are fine; anything else must be in the table.
		t.Errorf("transition %s → %s is not in the table", before.State, s.Task.State)
	}
	if s.Task.State.Terminal() {
		if s.Task.Outcome == nil || s.Task.Pending != nil {
			t.Errorf("terminal task without outcome or with pending input")
		}
		last := s.Events[len(s.Events)-1]
		if string(last.Type) != map[task.State]string{task.StateCompleted: "completed", task.StateFailed: "failed", task.StateCancelled: "cancelled"}[s.Task.State] ||
			string(last.Payload) != string(s.Task.Outcome) {
			t.Errorf("terminal event %s %s does not match state %s", last.Type, last.Payload, s.Task.State)
		}
	}
	if (s.Task.State == task.StateInputRequired) != (s.Task.Pending != nil) {
		t.Errorf("state %s with pending %v", s.Task.State, s.Task.Pending)
	}
}

func marshal(t testing.TB, r xml.TokenReader) string {
	t.Helper()
	s, err := wire.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func parse(t testing.TB, s string) wire.Element {
	t.Helper()
	el, err := wire.Parse(s)
	if err != nil {
		t.Fatalf("parse %s: %v", s, err)
	}
	return el
}

// xsdCheck validates doc against testdata/agent-task.xsd when the test
// ends (internal/xsdtest).
func xsdCheck(t *testing.T, doc string) {
	t.Helper()
	xsdtest.Check(t, agentTaskXSD, doc)
}

// agentTaskXSD is the normative schema, copied from the spec.
var agentTaskXSD = filepath.Join("..", "testdata", "agent-task.xsd")
