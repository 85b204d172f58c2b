package taskd

import (
	"encoding/json"
	"strings"
	"testing"

	"agentgw/db"
	"agentgw/task"
)

// TestDecodeRefusesUnaddressableTask checks that a stored task whose
// caller, target or route is not a JID fails to load, naming the task,
// instead of loading and later dropping its events in publish.
func TestDecodeRefusesUnaddressableTask(t *testing.T) {
	good := task.Task{ID: "t1", Caller: "alice@example.org", Route: "alice@example.org/phone", Target: "weather@agents.example"}
	for name, mod := range map[string]func(*task.Task){
		"good":   func(*task.Task) {},
		"caller": func(t *task.Task) { t.Caller = "@bad" },
		"target": func(t *task.Task) { t.Target = "" },
		"route":  func(t *task.Task) { t.Route = "alice@" },
	} {
		tk := good
		mod(&tk)
		doc, err := json.Marshal(tk)
		if err != nil {
			t.Fatal(err)
		}
		_, err = decode(db.TaskRecord{ID: tk.ID, Doc: doc})
		switch {
		case name == "good" && err != nil:
			t.Errorf("good task: %v", err)
		case name != "good" && (err == nil || !strings.Contains(err.Error(), "task t1") || !strings.Contains(err.Error(), name)):
			t.Errorf("%s: decode = %v, want an error naming the task and the %s", name, err, name)
		}
	}
}
