package mcpclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"agentgw/manifest"
	"agentgw/runtime"
	"agentgw/runtime/mcpclient"
	"agentgw/runtime/mcpclient/mcptest"
	"agentgw/runtime/runtimetest"
)

const (
	// timeout bounds each wait for a report or state: a bound for a
	// hang, not a speed claim (a restart under two suites at once took
	// over 10 s).
	timeout = 2 * time.Minute
	jid     = "tools@agents.example"
)

// TestMain doubles as the stdio fixture server: the stdio tests run this
// test binary again with agentgwMCPTestServe set.
func TestMain(m *testing.M) {
	if os.Getenv(serveEnv) != "" {
		if err := mcptest.ServeStdio(context.Background(), mcptest.Options{Crashable: true}); err != nil {
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

const serveEnv = "AGENTGW_MCPTEST_SERVE"

// newRuntime returns a runtime on a fresh in-memory fixture server.
func newRuntime(t *testing.T, opts mcpclient.Options) (*mcpclient.Runtime, *mcptest.Server) {
	t.Helper()
	srv := mcptest.New(mcptest.Options{})
	if opts.Command == nil && opts.URL == "" && opts.Dial == nil {
		opts.Dial = srv.Dial
	}
	opts.ColdStart = true
	if opts.PollInterval == 0 {
		opts.PollInterval = 50 * time.Millisecond
	}
	r, err := mcpclient.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, srv
}

func call(tool, args string) runtime.Call {
	return runtime.Call{
		Handle:    "task-0123456789abcdef0123456789abcdef",
		Tool:      runtime.ToolMeta{Name: tool, APIVersion: "mcp-0", SupportsProgress: true, SupportsCancellation: true, SupportsInput: true},
		Arguments: json.RawMessage(args),
		Deadline:  time.Now().Add(time.Minute),
	}
}

func start(t *testing.T, r *mcpclient.Runtime, c runtime.Call, rec *runtimetest.Recorder) runtime.Execution {
	t.Helper()
	e, err := r.Start(context.Background(), c, rec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { runtimetest.Wait(t, e, timeout) })
	return e
}

// next returns the next report, which must be of kind.
func next(t *testing.T, rec *runtimetest.Recorder, kind string) runtimetest.Report {
	t.Helper()
	rep := rec.Next(t, timeout)
	if rep.Kind != kind {
		t.Fatalf("report %s %+v, want %s", rep.Kind, rep, kind)
	}
	return rep
}

// resultOf decodes a completed result.
func resultOf(t *testing.T, rep runtimetest.Report) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(rep.Result.Raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestCallResultPreservedWhole(t *testing.T) {
	r, _ := newRuntime(t, mcpclient.Options{})
	rec := runtimetest.NewRecorder()
	start(t, r, call("echo", `{"text":"hi"}`), rec)
	m := resultOf(t, next(t, rec, runtimetest.KindComplete))
	for k, want := range map[string]string{
		"content":           `[{"type":"text","text":"hi"}]`,
		"structuredContent": `{"text":"hi"}`,
		"_meta":             `{"com.example/echoed":true}`,
	} {
		if string(m[k]) != want {
			t.Errorf("%s = %s, want %s", k, m[k], want)
		}
	}
}

func TestCallIsErrorIsACompletion(t *testing.T) {
	r, _ := newRuntime(t, mcpclient.Options{})
	rec := runtimetest.NewRecorder()
	start(t, r, call("fail", `{}`), rec)
	m := resultOf(t, next(t, rec, runtimetest.KindComplete))
	if string(m["isError"]) != "true" {
		t.Errorf("isError = %s", m["isError"])
	}
}

// The runtime preserves structuredContent as sent; checking it against
// outputSchema is the task layer's job.
func TestCallStructuredOutputPreserved(t *testing.T) {
	r, _ := newRuntime(t, mcpclient.Options{})
	rec := runtimetest.NewRecorder()
	start(t, r, call("bad-output", `{}`), rec)
	m := resultOf(t, next(t, rec, runtimetest.KindComplete))
	if string(m["structuredContent"]) != `{"n":"x"}` {
		t.Errorf("structuredContent = %s", m["structuredContent"])
	}
}

func TestCallProgress(t *testing.T) {
	r, _ := newRuntime(t, mcpclient.Options{})
	rec := runtimetest.NewRecorder()
	start(t, r, call("progress", `{"steps":4}`), rec)
	for i, want := range []float64{25, 50, 75, 100} {
		p := next(t, rec, runtimetest.KindProgress).Progress
		if p.Percent == nil || *p.Percent != want || p.Message != "step "+string(rune('1'+i)) {
			t.Fatalf("progress %d: %+v", i, p)
		}
	}
	next(t, rec, runtimetest.KindComplete)
}

func TestCallCancelled(t *testing.T) {
	r, srv := newRuntime(t, mcpclient.Options{})
	rec := runtimetest.NewRecorder()
	e := start(t, r, call("progress", `{"steps":1,"block":true}`), rec)
	next(t, rec, runtimetest.KindProgress)
	e.Cancel()
	next(t, rec, runtimetest.KindCancelled)
	waitEvent(t, srv, "cancelled:progress")
}

func waitEvent(t *testing.T, srv *mcptest.Server, want string) {
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

func TestElicitation(t *testing.T) {
	r, _ := newRuntime(t, mcpclient.Options{})
	rec := runtimetest.NewRecorder()
	e := start(t, r, call("ask", `{}`), rec)
	q := next(t, rec, runtimetest.KindInput).Input
	if q.Question != "What is your answer?" {
		t.Errorf("question %q", q.Question)
	}
	// The schema passes the version-0 rules the task layer applies.
	if _, err := manifest.CompileSchema(q.Schema, false, manifest.Options{}); err != nil {
		t.Fatalf("schema %s: %v", q.Schema, err)
	}
	if err := e.Input(json.RawMessage(`{"answer":"42"}`)); err != nil {
		t.Fatal(err)
	}
	if err := e.Input(json.RawMessage(`{"answer":"again"}`)); !errors.Is(err, runtime.ErrNotWaiting) {
		t.Errorf("second Input: %v", err)
	}
	m := resultOf(t, next(t, rec, runtimetest.KindComplete))
	if !strings.Contains(string(m["content"]), "action=accept answer=42") {
		t.Errorf("content %s", m["content"])
	}
}

func TestElicitationLegacyEnum(t *testing.T) {
	r, _ := newRuntime(t, mcpclient.Options{})
	rec := runtimetest.NewRecorder()
	e := start(t, r, call("ask-legacy", `{}`), rec)
	q := next(t, rec, runtimetest.KindInput).Input
	want := `{"$schema":"https://json-schema.org/draft/2020-12/schema","properties":{"colour":{"oneOf":[{"const":"r","title":"Red"},{"const":"g","title":"Green"}],"type":"string"}},"required":["colour"],"type":"object"}`
	if string(q.Schema) != want {
		t.Errorf("schema\n got %s\nwant %s", q.Schema, want)
	}
	if err := e.Input(json.RawMessage(`{"colour":"g"}`)); err != nil {
		t.Fatal(err)
	}
	m := resultOf(t, next(t, rec, runtimetest.KindComplete))
	if !strings.Contains(string(m["content"]), "colour=g") {
		t.Errorf("content %s", m["content"])
	}
}

func TestElicitationURLFails(t *testing.T) {
	r, _ := newRuntime(t, mcpclient.Options{})
	rec := runtimetest.NewRecorder()
	start(t, r, call("ask-url", `{}`), rec)
	f := next(t, rec, runtimetest.KindFail).Failure
	if f.Code != mcpclient.CodeURLElicitation || f.Retryable {
		t.Errorf("failure %+v", f)
	}
}

// Cancelling while input is pending answers the elicitation "cancel" and
// cancels the call.
func TestElicitationCancelled(t *testing.T) {
	r, _ := newRuntime(t, mcpclient.Options{})
	rec := runtimetest.NewRecorder()
	e := start(t, r, call("ask", `{}`), rec)
	next(t, rec, runtimetest.KindInput)
	e.Cancel()
	next(t, rec, runtimetest.KindCancelled)
	if err := e.Input(json.RawMessage(`{"answer":"late"}`)); !errors.Is(err, runtime.ErrNotWaiting) {
		t.Errorf("late Input: %v", err)
	}
}

// A settled task (the gateway cancels the context) ends the call without
// any further report.
func TestContextEndStopsCall(t *testing.T) {
	r, srv := newRuntime(t, mcpclient.Options{})
	rec := runtimetest.NewRecorder()
	ctx, cancel := context.WithCancel(context.Background())
	e, err := r.Start(ctx, call("progress", `{"steps":1,"block":true}`), rec)
	if err != nil {
		t.Fatal(err)
	}
	next(t, rec, runtimetest.KindProgress)
	cancel()
	runtimetest.Wait(t, e, timeout)
	waitEvent(t, srv, "cancelled:progress")
	if rec.Len() != 0 {
		t.Errorf("%d reports after the context ended", rec.Len())
	}
}

func TestTaskRequiredTool(t *testing.T) {
	r, _ := newRuntime(t, mcpclient.Options{})
	rec := runtimetest.NewRecorder()
	e := start(t, r, call("research", `{"topic":"xmpp","ambiguous":true}`), rec)
	var q runtimetest.Report
	for {
		rep := rec.Next(t, timeout)
		if rep.Kind == runtimetest.KindInput {
			q = rep
			break
		}
		if rep.Kind != runtimetest.KindProgress || rep.Progress.Message == "" {
			t.Fatalf("report %+v", rep)
		}
	}
	if q.Input.Question != "Which one?" {
		t.Errorf("question %q", q.Input.Question)
	}
	if err := e.Input(json.RawMessage(`{"interpretation":"b"}`)); err != nil {
		t.Fatal(err)
	}
	for {
		rep := rec.Next(t, timeout)
		if rep.Kind == runtimetest.KindProgress {
			continue
		}
		if rep.Kind != runtimetest.KindComplete {
			t.Fatalf("report %+v", rep)
		}
		m := resultOf(t, rep)
		if !strings.Contains(string(m["content"]), "report on xmpp (accept b)") {
			t.Errorf("content %s", m["content"])
		}
		if !strings.Contains(string(m["_meta"]), "io.modelcontextprotocol/related-task") {
			t.Errorf("_meta %s", m["_meta"])
		}
		return
	}
}

func TestTaskRequiredCancelled(t *testing.T) {
	r, srv := newRuntime(t, mcpclient.Options{})
	rec := runtimetest.NewRecorder()
	e := start(t, r, call("slow-task", `{}`), rec)
	p := next(t, rec, runtimetest.KindProgress).Progress
	if p.Message != "waiting" {
		t.Errorf("progress %+v", p)
	}
	e.Cancel()
	next(t, rec, runtimetest.KindCancelled)
	waitEvent(t, srv, "task-cancelled:")
}

func TestImport(t *testing.T) {
	r, _ := newRuntime(t, mcpclient.Options{AgentDescription: "Fixture tools."})
	imp, err := r.Import(context.Background(), jid)
	if err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Parse(imp.Manifest, manifest.Options{Domain: "agents.example"})
	if err != nil {
		t.Fatal(err)
	}
	if m.Version != imp.Version || !strings.HasPrefix(m.Version, "mcp-") {
		t.Errorf("version %q / %q", m.Version, imp.Version)
	}
	if m.ImplementationName != "mcptest" || m.ImplementationVersion != "1.2.3" || m.MCPProtocolVersion != mcpclient.LegacyProtocolVersion {
		t.Errorf("implementation %q %q, mcp %q", m.ImplementationName, m.ImplementationVersion, m.MCPProtocolVersion)
	}
	if m.Name != "mcptest" || m.Title != "MCP Test Server" || m.Description != "Fixture tools." {
		t.Errorf("agent %q %q %q", m.Name, m.Title, m.Description)
	}
	// Every page was listed (PageSize is 3), in server order.
	var names []string
	for _, tl := range m.Tools {
		names = append(names, tl.Name)
	}
	want := "ask ask-legacy ask-url bad-output draft07 echo fail progress research slow-task"
	if strings.Join(names, " ") != want {
		t.Errorf("tools %v, want %s", names, want)
	}
	skipped := map[string]string{}
	for _, s := range imp.Skipped {
		skipped[s.Tool] = s.Reason
	}
	if len(skipped) != 2 ||
		!strings.Contains(skipped["untranslatable"], "$defs is not part of draft-07") ||
		!strings.Contains(skipped["lookbehind"], "lookaround") {
		t.Errorf("skipped %q", imp.Skipped)
	}

	tools := toolsOf(t, imp.Manifest)
	echo := tools["echo"]
	for k, want := range map[string]string{
		"annotations":  `{"idempotentHint":false,"readOnlyHint":true}`,
		"_meta":        `{"com.example/origin":"mcptest"}`,
		"outputSchema": `{"properties":{"text":{"type":"string"}},"required":["text"],"type":"object"}`,
	} {
		if string(echo[k]) != want {
			t.Errorf("echo %s = %s, want %s", k, echo[k], want)
		}
	}
	if _, ok := echo["icons"]; ok {
		t.Error("icons kept")
	}
	if string(tools["research"]["execution"]) != `{"taskSupport":"required"}` {
		t.Errorf("research execution %s", tools["research"]["execution"])
	}
	wantDraft := `{"$defs":{"name":{"$anchor":"nameDef","minLength":1,"type":"string"}},` +
		`"$schema":"https://json-schema.org/draft/2020-12/schema",` +
		`"dependentRequired":{"card":["billing"]},"dependentSchemas":{"billing":{"required":["who"]}},` +
		`"properties":{"also":{"$ref":"#nameDef"},"billing":{"type":"string"},"card":{"type":"string"},` +
		`"list":{"items":{"type":"string"},"type":"array"},` +
		`"pair":{"items":false,"prefixItems":[{"type":"string"},{"type":"integer"}],"type":"array"},` +
		`"who":{"$ref":"#/$defs/name","description":"who"}},"required":["who"],"type":"object"}`
	if got := string(tools["draft07"]["inputSchema"]); got != wantDraft {
		t.Errorf("draft07 inputSchema\n got %s\nwant %s", got, wantDraft)
	}
	notes := map[string][]string{}
	for _, n := range imp.Notes {
		notes[n.Tool] = append(notes[n.Tool], n.Note)
	}
	if !strings.Contains(strings.Join(notes["echo"], ";"), "icons") ||
		!strings.Contains(strings.Join(notes["draft07"], ";"), "rewritten from draft-07") {
		t.Errorf("notes %q", imp.Notes)
	}

	// Identical tools, identical version and hash.
	again, err := r.Import(context.Background(), jid)
	if err != nil {
		t.Fatal(err)
	}
	if again.Version != imp.Version || string(again.Manifest) != string(imp.Manifest) {
		t.Error("a second import of the same tools differs")
	}
}

// toolsOf returns the raw members of each tool of a manifest.
func toolsOf(t *testing.T, raw []byte) map[string]map[string]json.RawMessage {
	t.Helper()
	var doc struct {
		Tools []map[string]json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]json.RawMessage{}
	for _, tl := range doc.Tools {
		var name string
		_ = json.Unmarshal(tl["name"], &name)
		out[name] = tl
	}
	return out
}

// statusLog records OnStatus calls.
type statusLog struct {
	ch chan mcpclient.Status
}

func newStatusLog() *statusLog { return &statusLog{ch: make(chan mcpclient.Status, 256)} }

func (l *statusLog) record(s mcpclient.Status) { l.ch <- s }

// waitState waits for a status report in state want.
func (l *statusLog) waitState(t *testing.T, want mcpclient.State) mcpclient.Status {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case s := <-l.ch:
			if s.State == want {
				return s
			}
		case <-deadline:
			t.Fatalf("status never became %s", want)
		}
	}
}

// With two calls in flight on one session, an elicitation without a
// related task cannot be attributed: it is answered "cancel" and neither
// task is asked (docs/mcp.md, "Where meaning is lost").
func TestElicitationAmbiguous(t *testing.T) {
	r, srv := newRuntime(t, mcpclient.Options{})
	blocker := runtimetest.NewRecorder()
	e := start(t, r, call("progress", `{"steps":1,"block":true}`), blocker)
	next(t, blocker, runtimetest.KindProgress)
	rec := runtimetest.NewRecorder()
	start(t, r, call("ask", `{}`), rec)
	if got := textOf(t, next(t, rec, runtimetest.KindComplete)); got != "action=cancel answer=<nil>" {
		t.Errorf("ask %q", got)
	}
	e.Cancel()
	next(t, blocker, runtimetest.KindCancelled)
	waitEvent(t, srv, "cancelled:progress")
}
