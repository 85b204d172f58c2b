package mcpclient_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"agentgw/runtime/mcpclient"
	"agentgw/runtime/mcpclient/mcptest"
	"agentgw/runtime/runtimetest"
)

// The fixture of the conformance suite's tasks scenarios (mcptest's
// SuiteTasks) through the runtime: what an MCP face in front of the
// endpoint sees of each way a 2026-07-28 server runs a call.

func newSuiteTasks(t *testing.T) *mcpclient.Runtime {
	t.Helper()
	srv := mcptest.NewSuiteTasks()
	r, err := mcpclient.New(mcpclient.Options{Dial: srv.Dial, ColdStart: true, PollInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// Each tool's execution.taskSupport is imported as the server lists it.
func TestSuiteTasksImported(t *testing.T) {
	imp, err := newSuiteTasks(t).Import(context.Background(), jid)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Tools []struct {
			Name      string
			Execution *struct{ TaskSupport string }
		}
	}
	if err := json.Unmarshal(imp.Manifest, &m); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, tl := range m.Tools {
		if tl.Execution != nil {
			got[tl.Name] = tl.Execution.TaskSupport
		}
	}
	want := map[string]string{"greet": "forbidden", "slow_compute": "optional", "failing_job": "required",
		"protocol_error_job": "optional", "confirm_delete": "optional", "multi_input": "optional", "test_tool_with_task": "required"}
	for name, ts := range want {
		if got[name] != ts {
			t.Errorf("%s: taskSupport %q, want %q", name, got[name], ts)
		}
	}
}

// A task created without a status message is reported as progress before
// its result.
func TestSuiteTasksCreationProgress(t *testing.T) {
	rec := runtimetest.NewRecorder()
	start(t, newSuiteTasks(t), call("slow_compute", `{"seconds":0.2,"label":"p"}`), rec)
	rep := rec.Next(t, timeout)
	if rep.Kind != runtimetest.KindProgress || rep.Progress.Message != "The MCP server runs the call as a task." {
		t.Fatalf("first report %+v, want the task's creation", rep)
	}
	if got := textOf(t, nextSkipping(t, rec, runtimetest.KindComplete)); got != "slow_compute p: done after 0.2s" {
		t.Errorf("result %q", got)
	}
}

// MRTR, then a task: the input request comes before any progress, and
// the task, created on the retry, after it.
func TestSuiteTasksInputThenTask(t *testing.T) {
	rec := runtimetest.NewRecorder()
	e := start(t, newSuiteTasks(t), call("test_tool_with_task", `{}`), rec)
	if rep := rec.Next(t, timeout); rep.Kind != runtimetest.KindInput || rep.Input.Question != "What is your name?" {
		t.Fatalf("first report %+v, want the input request", rep)
	}
	if err := e.Input(json.RawMessage(`{"name":"Alice"}`)); err != nil {
		t.Fatal(err)
	}
	if rep := rec.Next(t, timeout); rep.Kind != runtimetest.KindProgress {
		t.Fatalf("report %+v, want the task's creation", rep)
	}
	if got := textOf(t, nextSkipping(t, rec, runtimetest.KindComplete)); got != "Hello, Alice!" {
		t.Errorf("result %q", got)
	}
}

// A task that fails with a JSON-RPC error fails the call with its code.
func TestSuiteTasksProtocolError(t *testing.T) {
	rec := runtimetest.NewRecorder()
	start(t, newSuiteTasks(t), call("protocol_error_job", `{}`), rec)
	rep := nextSkipping(t, rec, runtimetest.KindFail)
	if rep.Failure.Code != mcpclient.CodeTaskFailed || !strings.Contains(string(rep.Failure.Details), "-32603") {
		t.Errorf("failure %+v %s", rep.Failure, rep.Failure.Details)
	}
}
