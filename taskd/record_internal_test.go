package taskd

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"agentgw/db"
	"agentgw/task"

	"mellium.im/xmpp/jid"
)

// TestDecodeRefusesUnaddressableTask checks that a stored task whose
// caller, target or route is not a JID fails to load, naming the task,
// instead of loading and later dropping its events in publish.
func TestDecodeRefusesUnaddressableTask(t *testing.T) {
	good, err := json.Marshal(task.Task{
		ID: "t1", Caller: jid.MustParse("alice@example.org"),
		Route: jid.MustParse("alice@example.org/phone"), Target: jid.MustParse("weather@agents.example"),
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, bad := range map[string]struct{ key, value string }{
		"good":   {},
		"caller": {"Caller", "@bad"},
		"target": {"Target", ""},
		"route":  {"Route", "alice@"},
	} {
		var fields map[string]any
		if err := json.Unmarshal(good, &fields); err != nil {
			t.Fatal(err)
		}
		if bad.key != "" {
			if _, ok := fields[bad.key]; !ok {
				t.Fatalf("the task document has no %s: %s", bad.key, good)
			}
			fields[bad.key] = bad.value
		}
		doc, err := json.Marshal(fields)
		if err != nil {
			t.Fatal(err)
		}
		tk, err := decode(db.TaskRecord{ID: "t1", Doc: doc})
		switch {
		case name == "good" && (err != nil || tk.Route.String() != "alice@example.org/phone"):
			t.Errorf("good task: %+v, %v", tk, err)
		case name != "good" && (err == nil || !strings.Contains(err.Error(), "task t1") || !strings.Contains(err.Error(), name)):
			t.Errorf("%s: decode = %v, want an error naming the task and the %s", name, err, name)
		}
	}
}

// BenchmarkRecordRoundTrip: a task encoded as its store row and decoded
// back, addresses parsed, as every commit of a transition does.
func BenchmarkRecordRoundTrip(b *testing.B) {
	tk := benchTask()
	b.ReportAllocs()
	for b.Loop() {
		rec, err := record(&tk)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := decode(rec); err != nil {
			b.Fatal(err)
		}
	}
}

// benchTask is a running task with every address set.
func benchTask() task.Task {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	return task.Task{
		ID: "task-0123456789abcdef0123456789abcdef", RequestID: "req-0123456789abcdef0123456789abcdef",
		Caller: jid.MustParse("alice@home.example"), Route: jid.MustParse("alice@home.example/phone"),
		Target: jid.MustParse("weather@agents.example"), Tool: "forecast.get", APIVersion: "1.4.0",
		Args: []byte(`{"city":"Riga","days":3}`), State: task.StateRunning, Revision: 3,
		Created: now, Updated: now, Deadline: now.Add(time.Hour), RetainUntil: now.Add(25 * time.Hour),
		PurgeAfter: now.Add(25 * time.Hour), Percent: 50,
	}
}
