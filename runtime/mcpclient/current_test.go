package mcpclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"agentgw/manifest"
	"agentgw/runtime"
	"agentgw/runtime/mcpclient"
	"agentgw/runtime/mcpclient/mcptest"
	"agentgw/runtime/runtimetest"
)

// newCurrent returns a runtime on a fresh in-memory 2026-07-28 fixture
// server (go-sdk v1.8.0's server plus the tasks extension of mcptest).
func newCurrent(t *testing.T) (*mcpclient.Runtime, *mcptest.Current) {
	t.Helper()
	srv := mcptest.NewCurrent()
	r, err := mcpclient.New(mcpclient.Options{Dial: srv.Dial, ColdStart: true, PollInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, srv
}

func waitCurrentEvent(t *testing.T, srv *mcptest.Current, want string) {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case ev := <-srv.Events():
			if strings.HasPrefix(ev, want) {
				return
			}
		case <-deadline:
			t.Fatalf("server never saw %s", want)
		}
	}
}

// nextSkipping returns the next report that is not progress.
func nextSkipping(t *testing.T, rec *runtimetest.Recorder, kind string) runtimetest.Report {
	t.Helper()
	for {
		rep := rec.Next(t, timeout)
		if rep.Kind == runtimetest.KindProgress {
			continue
		}
		if rep.Kind != kind {
			t.Fatalf("report %+v, want %s", rep, kind)
		}
		return rep
	}
}

// A server on 2026-07-28 is reached at that revision, through
// server/discover, and its serverInfo is kept.
func TestCurrentRevisionNegotiated(t *testing.T) {
	r, _ := newCurrent(t)
	imp, err := r.Import(context.Background(), jid)
	if err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Parse(imp.Manifest, manifest.Options{Domain: "agents.example"})
	if err != nil {
		t.Fatal(err)
	}
	if m.MCPProtocolVersion != "2026-07-28" || m.ImplementationName != "mcptest-current" || m.ImplementationVersion != "2.0.0" {
		t.Errorf("mcp %q, implementation %q %q", m.MCPProtocolVersion, m.ImplementationName, m.ImplementationVersion)
	}
	if st := r.Status(); st.ProtocolVersion != mcpclient.ProtocolVersion || st.ServerName != "mcptest-current" {
		t.Errorf("status %+v", st)
	}
}

// MRTR: the input_required result becomes an input request; the answer
// goes back as inputResponses (with the requestState) on the retry, whose
// result completes the call.
func TestMRTRInput(t *testing.T) {
	r, _ := newCurrent(t)
	rec := runtimetest.NewRecorder()
	e := start(t, r, call("greet", `{}`), rec)
	q := next(t, rec, runtimetest.KindInput).Input
	if q.Question != "What is your name?" {
		t.Errorf("question %q", q.Question)
	}
	if _, err := manifest.CompileSchema(q.Schema, false, manifest.Options{}); err != nil {
		t.Fatalf("schema %s: %v", q.Schema, err)
	}
	if err := e.Input(json.RawMessage(`{"name":"Ada"}`)); err != nil {
		t.Fatal(err)
	}
	rep := next(t, rec, runtimetest.KindComplete)
	if got := textOf(t, rep); got != "Hello, Ada!" {
		t.Errorf("result %q", got)
	}
	if _, ok := resultOf(t, rep)["resultType"]; ok {
		t.Errorf("resultType kept: %s", rep.Result.Raw)
	}
}

func TestMRTRCancelled(t *testing.T) {
	r, _ := newCurrent(t)
	rec := runtimetest.NewRecorder()
	e := start(t, r, call("greet", `{}`), rec)
	next(t, rec, runtimetest.KindInput)
	e.Cancel()
	next(t, rec, runtimetest.KindCancelled)
	if err := e.Input(json.RawMessage(`{"name":"late"}`)); !errors.Is(err, runtime.ErrNotWaiting) {
		t.Errorf("late Input: %v", err)
	}
}

// The tasks extension: the server answers tools/call with a task; its
// status messages are progress, its inputRequests an input request
// answered with tasks/update, and its result the completion.
func TestExtTaskInput(t *testing.T) {
	r, srv := newCurrent(t)
	rec := runtimetest.NewRecorder()
	e := start(t, r, call("paint", `{}`), rec)
	var sawProgress bool
	for {
		rep := rec.Next(t, timeout)
		if rep.Kind == runtimetest.KindProgress {
			sawProgress = sawProgress || rep.Progress.Message == "Mixing"
			continue
		}
		if rep.Kind != runtimetest.KindInput || rep.Input.Question != "Which colour?" {
			t.Fatalf("report %+v", rep)
		}
		break
	}
	if !sawProgress {
		t.Error("no progress from the task's statusMessage")
	}
	if err := e.Input(json.RawMessage(`{"colour":"blue"}`)); err != nil {
		t.Fatal(err)
	}
	waitCurrentEvent(t, srv, "ext-input:")
	if got := textOf(t, nextSkipping(t, rec, runtimetest.KindComplete)); got != "painted blue" {
		t.Errorf("result %q", got)
	}
}

// Cancelling a running extension task sends tasks/cancel.
func TestExtTaskCancelled(t *testing.T) {
	r, srv := newCurrent(t)
	rec := runtimetest.NewRecorder()
	e := start(t, r, call("paint", `{"block":true}`), rec)
	nextSkipping(t, rec, runtimetest.KindInput)
	if err := e.Input(json.RawMessage(`{"colour":"red"}`)); err != nil {
		t.Fatal(err)
	}
	waitCurrentEvent(t, srv, "ext-input:")
	e.Cancel()
	nextSkipping(t, rec, runtimetest.KindCancelled)
	waitCurrentEvent(t, srv, "ext-cancelled:")
}

// Cancelling while the task waits for input answers nothing and cancels
// the task.
func TestExtTaskCancelledAtInput(t *testing.T) {
	r, srv := newCurrent(t)
	rec := runtimetest.NewRecorder()
	e := start(t, r, call("paint", `{}`), rec)
	nextSkipping(t, rec, runtimetest.KindInput)
	e.Cancel()
	nextSkipping(t, rec, runtimetest.KindCancelled)
	waitCurrentEvent(t, srv, "ext-cancelled:")
}

// At 2026-07-28 a change of the server's tool list arrives on the
// subscriptions/listen stream the go-sdk opens, and reaches
// OnToolsChanged as it does at 2025-11-25.
func TestCurrentToolListChanged(t *testing.T) {
	srv := mcptest.NewCurrent()
	changed := make(chan struct{}, 8)
	r, err := mcpclient.New(mcpclient.Options{Dial: srv.Dial, KeepWarm: true,
		OnToolsChanged: func() { changed <- struct{}{} }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	if _, err := r.Import(context.Background(), jid); err != nil {
		t.Fatal(err)
	}
	srv.AddEcho("late-echo")
	select {
	case <-changed:
	case <-time.After(timeout):
		t.Fatal("OnToolsChanged was not called")
	}
	imp, err := r.Import(context.Background(), jid)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(imp.Manifest), `"late-echo"`) {
		t.Errorf("the new tool is not imported: %s", imp.Manifest)
	}
}
