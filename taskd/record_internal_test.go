package taskd

import (
	"encoding/json"
	"strings"
	"testing"

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
