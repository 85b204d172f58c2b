package builtin_test

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"agentgw/runtime"
	"agentgw/runtime/builtin"
	"agentgw/runtime/runtimetest"
)

const timeout = 5 * time.Second

func newRecorder() *runtimetest.Recorder { return runtimetest.NewRecorder() }

// answering returns a recorder that answers every report with err.
func answering(err error) *runtimetest.Recorder {
	r := runtimetest.NewRecorder()
	r.Respond = func(runtimetest.Report) error { return err }
	return r
}

// clock hands out the channels count waits on, so the test decides when
// each step happens.
type clock struct{ waits chan chan time.Time }

func newClock() *clock { return &clock{waits: make(chan chan time.Time, 8)} }

func (c *clock) After(time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	c.waits <- ch
	return ch
}

func (c *clock) step(t *testing.T) {
	t.Helper()
	select {
	case ch := <-c.waits:
		ch <- time.Time{}
	case <-time.After(5 * time.Second):
		t.Fatal("count is not waiting")
	}
}

func call(tool, args string) runtime.Call {
	return runtime.Call{Handle: "h", Tool: runtime.ToolMeta{Name: tool}, Arguments: json.RawMessage(args)}
}

func wait(t *testing.T, e runtime.Execution) { t.Helper(); runtimetest.Wait(t, e, timeout) }

func TestManifest(t *testing.T) {
	m, err := builtin.Manifest("demo@agents.example")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^demo-[0-9a-f]{12}$`).MatchString(m.Version) {
		t.Errorf("version %q", m.Version)
	}
	again, _ := builtin.Manifest("demo@agents.example")
	other, _ := builtin.Manifest("demo2@agents.example")
	if again.Hash != m.Hash || again.Version != m.Version || other.Version == m.Version {
		t.Error("version must be a function of the content")
	}
	want := map[string][3]bool{ // progress, cancellation, input
		builtin.ToolEcho: {false, false, false}, builtin.ToolCount: {true, true, false}, builtin.ToolAsk: {false, true, true},
	}
	if len(m.Tools) != 3 {
		t.Fatalf("%d tools", len(m.Tools))
	}
	for _, tool := range m.Tools {
		f, ok := want[tool.Name]
		got := [3]bool{tool.Ext.SupportsProgress, tool.Ext.SupportsCancellation, tool.Ext.SupportsInput}
		if !ok || got != f || tool.OutputSchema == nil || tool.Ext.DefaultTimeoutSeconds == 0 {
			t.Errorf("%s: %v", tool.Name, got)
		}
	}
}

func TestEcho(t *testing.T) {
	rec := newRecorder()
	e, err := builtin.New(builtin.Options{}).Start(context.Background(), call("echo", `{"text":"hi <there>"}`), rec)
	if err != nil {
		t.Fatal(err)
	}
	r := rec.Next(t, timeout)
	wait(t, e)
	var res struct {
		Content           []map[string]any  `json:"content"`
		StructuredContent map[string]string `json:"structuredContent"`
		IsError           bool              `json:"isError"`
	}
	if r.Kind != "complete" || json.Unmarshal(r.Result.Raw, &res) != nil ||
		res.StructuredContent["text"] != "hi <there>" || res.Content[0]["text"] != "hi <there>" || res.IsError {
		t.Errorf("%+v %s", r, r.Result.Raw)
	}
	if e.Input(json.RawMessage(`{}`)) != runtime.ErrNotWaiting || e.Diagnostics().ExitCode != -1 {
		t.Error("echo accepted input")
	}
}

func TestCount(t *testing.T) {
	clk := newClock()
	rt := builtin.New(builtin.Options{After: clk.After})
	rec := newRecorder()
	e, err := rt.Start(context.Background(), call("count", `{"to":3,"interval_ms":10}`), rec)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []float64{100.0 / 3, 200.0 / 3, 100} {
		clk.step(t)
		r := rec.Next(t, timeout)
		if r.Kind != "progress" || r.Progress.Percent == nil || *r.Progress.Percent != want {
			t.Fatalf("step %d: %+v", i, r)
		}
	}
	r := rec.Next(t, timeout)
	wait(t, e)
	if r.Kind != "complete" || !regexp.MustCompile(`"structuredContent":\{"counted":3\}`).Match(r.Result.Raw) {
		t.Errorf("%+v %s", r, r.Result.Raw)
	}

	// Cancellation between steps.
	rec = newRecorder()
	e, _ = rt.Start(context.Background(), call("count", `{"to":5,"interval_ms":1000}`), rec)
	clk.step(t)
	rec.Next(t, timeout)
	<-clk.waits // waiting for step 2
	e.Cancel()
	e.Cancel() // idempotent
	if r := rec.Next(t, timeout); r.Kind != "cancelled" {
		t.Errorf("after cancel: %+v", r)
	}
	wait(t, e)

	// The task settled elsewhere (deadline): count stops at once.
	rec = answering(runtime.ErrSettled)
	e, _ = rt.Start(context.Background(), call("count", `{"to":100,"interval_ms":0}`), rec)
	rec.Next(t, timeout)
	wait(t, e)
	if rec.Len() != 0 {
		t.Error("count reported after ErrSettled")
	}

	// Zero steps, and the context ending the execution silently.
	rec = newRecorder()
	e, _ = rt.Start(context.Background(), call("count", `{"to":0}`), rec)
	if r := rec.Next(t, timeout); r.Kind != "complete" {
		t.Errorf("to 0: %+v", r)
	}
	wait(t, e)
	ctx, cancel := context.WithCancel(context.Background())
	rec = newRecorder()
	e, _ = rt.Start(ctx, call("count", `{"to":2}`), rec)
	<-clk.waits
	cancel()
	wait(t, e)
	if rec.Len() != 0 {
		t.Error("count reported after its context ended")
	}
}

func TestAsk(t *testing.T) {
	rt := builtin.New(builtin.Options{})
	rec := newRecorder()
	e, _ := rt.Start(context.Background(), call("ask", `{"question":"Colour?"}`), rec)
	r := rec.Next(t, timeout)
	if r.Kind != "input" || r.Input.Question != "Colour?" || len(r.Input.Schema) == 0 {
		t.Fatalf("%+v", r)
	}
	if err := e.Input(json.RawMessage(`{"answer":"blue"}`)); err != nil {
		t.Fatal(err)
	}
	r = rec.Next(t, timeout)
	wait(t, e)
	if r.Kind != "complete" || !regexp.MustCompile(`"structuredContent":\{"answer":"blue"\}`).Match(r.Result.Raw) {
		t.Errorf("%+v %s", r, r.Result.Raw)
	}

	// Cancelled while waiting.
	rec = newRecorder()
	e, _ = rt.Start(context.Background(), call("ask", `{"question":"Colour?"}`), rec)
	rec.Next(t, timeout)
	e.Cancel()
	if r := rec.Next(t, timeout); r.Kind != "cancelled" {
		t.Errorf("%+v", r)
	}
	wait(t, e)
	if !errors.Is(e.Input(json.RawMessage(`{"answer":"x"}`)), runtime.ErrNotWaiting) {
		t.Error("input accepted after the end")
	}

	// The input request is refused: the tool fails.
	rec = answering(runtime.ErrRejected)
	e, _ = rt.Start(context.Background(), call("ask", `{"question":"Colour?"}`), rec)
	rec.Next(t, timeout)
	if r := rec.Next(t, timeout); r.Kind != "fail" || r.Failure.Code != runtime.CodeInternalError {
		t.Errorf("%+v", r)
	}
	wait(t, e)
}

func TestStartErrors(t *testing.T) {
	rt := builtin.New(builtin.Options{})
	if _, err := rt.Start(context.Background(), call("nope", `{}`), newRecorder()); err == nil {
		t.Error("unknown tool started")
	}
	if rt.CanResume() {
		t.Error("CanResume")
	}
	if _, err := rt.Resume(context.Background(), call("echo", `{}`), newRecorder()); !errors.Is(err, runtime.ErrNotResumable) {
		t.Error("Resume")
	}
	rec := newRecorder()
	e, _ := rt.Start(context.Background(), call("echo", `{"text":5}`), rec)
	if r := rec.Next(t, timeout); r.Kind != "fail" {
		t.Errorf("%+v", r)
	}
	wait(t, e)
}

// TestTitlesDiffer: two builtin endpoints of one gateway have different
// titles, so that discover and search tell them apart; demo@ keeps the
// plain one.
func TestTitlesDiffer(t *testing.T) {
	demo, err := builtin.Manifest("demo@agents.example")
	if err != nil {
		t.Fatal(err)
	}
	chat, err := builtin.Manifest("chat-demo@agents.example")
	if err != nil {
		t.Fatal(err)
	}
	if demo.Title != "Demo Agent (builtin)" || chat.Title == demo.Title || !strings.Contains(chat.Title, "chat-demo") {
		t.Errorf("titles %q and %q", demo.Title, chat.Title)
	}
}
