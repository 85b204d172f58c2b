package exec_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"agentgw/manifest"
	"agentgw/runtime"
	"agentgw/runtime/exec"
	"agentgw/runtime/runtimetest"
)

const timeout = 10 * time.Second

// script writes an executable /bin/sh script to a temporary directory.
func script(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "tool.sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// cooperativeGrace is the Grace of the tests that check a tool stopped
// on its own (no note, exit code 0). newRuntime's short default keeps the
// tests of the kill paths quick, but it is also how long a tool may take
// to exit after its last message, and a loaded machine can stall a tool
// for that long: such a test would then see a termination it did not
// cause. A tool that does not stop still fails it, at this grace.
const cooperativeGrace = exec.DefaultGrace

// newRuntime returns a runtime for opts, with Grace and KillGrace of
// 200ms unless set, so that a tool that does not stop is killed quickly.
func newRuntime(t *testing.T, opts exec.Options) *exec.Runtime {
	t.Helper()
	if opts.Grace == 0 {
		opts.Grace = 200 * time.Millisecond
	}
	if opts.KillGrace == 0 {
		opts.KillGrace = 200 * time.Millisecond
	}
	r, err := exec.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func call(tool, args string) runtime.Call {
	return runtime.Call{
		Handle:    "task-0123456789abcdef0123456789abcdef",
		Tool:      runtime.ToolMeta{Name: tool, APIVersion: "1.0.0", SupportsProgress: true, SupportsCancellation: true, SupportsInput: true},
		Arguments: json.RawMessage(args),
		Deadline:  time.Now().Add(time.Minute),
	}
}

func start(t *testing.T, r *exec.Runtime, c runtime.Call, rec *runtimetest.Recorder) runtime.Execution {
	t.Helper()
	e, err := r.Start(context.Background(), c, rec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { runtimetest.Wait(t, e, timeout) })
	return e
}

// reportTool is the example tool; it needs bash.
func reportTool(t *testing.T) string {
	t.Helper()
	if _, err := osexec.LookPath("bash"); err != nil {
		t.Skip("bash is not installed")
	}
	p, err := filepath.Abs(filepath.Join("..", "..", "examples", "tools", "report-tool.sh"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestReportTool runs the example tool through a whole task: progress per
// section, an input request, the answer, and the result.
func TestReportTool(t *testing.T) {
	r := newRuntime(t, exec.Options{Command: []string{reportTool(t)}, Grace: cooperativeGrace})
	rec := runtimetest.NewRecorder()
	e := start(t, r, call("report.build", `{"sections":3,"title":"Q3 \"final\" <report>"}`), rec)
	for i, want := range []float64{33, 66, 100} {
		rep := rec.Next(t, timeout)
		if rep.Kind != runtimetest.KindProgress || rep.Progress.Percent == nil || *rep.Progress.Percent != want {
			t.Fatalf("report %d: %+v", i, rep)
		}
	}
	rep := rec.Next(t, timeout)
	if rep.Kind != runtimetest.KindInput || rep.Input.Question == "" || rep.Input.Timeout != 300*time.Second ||
		!strings.Contains(string(rep.Input.Schema), `"publish"`) {
		t.Fatalf("input request: %+v", rep)
	}
	if err := e.Input(json.RawMessage(`{"publish":true}`)); err != nil {
		t.Fatal(err)
	}
	if err := e.Input(json.RawMessage(`{"publish":true}`)); !errors.Is(err, runtime.ErrNotWaiting) {
		t.Errorf("second answer: %v", err)
	}
	rep = rec.Next(t, timeout)
	if rep.Kind != runtimetest.KindComplete || rep.Result.Summary != "Report built." {
		t.Fatalf("result: %+v", rep)
	}
	var res struct {
		StructuredContent struct {
			Title     string `json:"title"`
			Sections  int    `json:"sections"`
			Published bool   `json:"published"`
		} `json:"structuredContent"`
	}
	if err := json.Unmarshal(rep.Result.Raw, &res); err != nil {
		t.Fatalf("%v: %s", err, rep.Result.Raw)
	}
	if sc := res.StructuredContent; sc.Title != `Q3 "final" <report>` || sc.Sections != 3 || !sc.Published {
		t.Errorf("structured content %+v", sc)
	}
	runtimetest.Wait(t, e, timeout)
	d := e.Diagnostics()
	if d.ExitCode != 0 || !strings.Contains(d.Stderr, "built section 3 of 3") || d.Note != "" {
		t.Errorf("diagnostics %+v", d)
	}
	if rec.Len() != 0 {
		t.Error("reports after the result")
	}
}

// TestReportToolManifest checks that the example manifest registers.
func TestReportToolManifest(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "examples", "tools", "report-tool.manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Parse(raw, manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if tool, ok := m.Tool("report.build"); !ok || !tool.Ext.SupportsInput {
		t.Error("report.build")
	}
}

func TestReportToolCancel(t *testing.T) {
	r := newRuntime(t, exec.Options{Command: []string{reportTool(t)}, Grace: cooperativeGrace})
	rec := runtimetest.NewRecorder()
	e := start(t, r, call("report.build", `{"sections":50,"title":"t"}`), rec)
	if rep := rec.Next(t, timeout); rep.Kind != runtimetest.KindProgress {
		t.Fatalf("%+v", rep)
	}
	e.Cancel()
	for {
		rep := rec.Next(t, timeout)
		if rep.Kind == runtimetest.KindProgress {
			continue
		}
		if rep.Kind != runtimetest.KindCancelled || rep.Reason == "" {
			t.Errorf("after cancel: %+v", rep)
		}
		break
	}
	runtimetest.Wait(t, e, timeout)
	if d := e.Diagnostics(); d.ExitCode != 0 || d.Note != "" {
		t.Errorf("a cooperative cancel is not a kill: %+v", d)
	}
}

// TestInvokeMessage checks the first line a tool reads.
func TestInvokeMessage(t *testing.T) {
	out := filepath.Join(t.TempDir(), "invoke.json")
	r := newRuntime(t, exec.Options{
		Command: []string{script(t, `read -r line; printf '%s' "$line" > "$OUT"; echo '{"type":"result","result":{"content":[]}}'`)},
		Env:     []string{"OUT=" + out},
	})
	c := call("report.build", `{"a":"<&>"}`)
	c.Deadline = time.Date(2099, 7, 27, 19, 15, 0, 500, time.UTC)
	c.Tool.Title = "T"
	rec := runtimetest.NewRecorder()
	e := start(t, r, c, rec)
	if rep := rec.Next(t, timeout); rep.Kind != runtimetest.KindComplete || string(rep.Result.Raw) != `{"content":[]}` {
		t.Errorf("%+v", rep)
	}
	runtimetest.Wait(t, e, timeout)
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"invoke","protocol":"agentgw-exec/0","handle":"task-0123456789abcdef0123456789abcdef","tool":{"name":"report.build","title":"T","apiVersion":"1.0.0","supportsProgress":true,"supportsCancellation":true,"supportsInput":true},"arguments":{"a":"<&>"},"deadline":"2099-07-27T19:15:00.0000005Z"}`
	if string(raw) != want {
		t.Errorf("invoke:\n got %s\nwant %s", raw, want)
	}
}

// TestEnvironment: the tool gets PATH, LANG and Options.Env, nothing of
// the gateway's environment, and runs in Options.Dir.
func TestEnvironment(t *testing.T) {
	t.Setenv("AGENTGW_TEST_SECRET", "hunter2hunter2")
	dir := t.TempDir()
	r := newRuntime(t, exec.Options{
		Command: []string{script(t, `read -r line; env | sort >&2; pwd >&2; echo '{"type":"cancelled"}'`)},
		Env:     []string{"EXTRA=1"},
		Dir:     dir,
	})
	rec := runtimetest.NewRecorder()
	e := start(t, r, call("x", `{}`), rec)
	rec.Next(t, timeout)
	runtimetest.Wait(t, e, timeout)
	stderr := e.Diagnostics().Stderr
	for _, want := range []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", "EXTRA=1", dir} {
		if !strings.Contains(stderr, want) {
			t.Errorf("missing %q in %s", want, stderr)
		}
	}
	if strings.Contains(stderr, "hunter2") || strings.Contains(stderr, "HOME=") {
		t.Errorf("gateway environment leaked: %s", stderr)
	}
}

// TestStderrBoundedRedacted: only the tail of stderr is kept, argument and
// input strings are redacted, control characters are escaped.
func TestStderrBoundedRedacted(t *testing.T) {
	r := newRuntime(t, exec.Options{
		Command: []string{script(t, `read -r line
i=0; while [ $i -lt 200 ]; do echo "noise line $i" >&2; i=$((i+1)); done
printf '%s\n' "$line" >&2
printf 'bell\007\n' >&2
echo '{"type":"input_required","question":"q","inputSchema":{"type":"object"}}'
read -r answer; printf '%s\n' "$answer" >&2
echo '{"type":"error","code":"com.example:x","message":"m","retryable":false}'`)},
		MaxStderrBytes: 512,
	})
	rec := runtimetest.NewRecorder()
	e := start(t, r, call("x", `{"token":"sk-live-abcdef123456","n":"short"}`), rec)
	if rep := rec.Next(t, timeout); rep.Kind != runtimetest.KindInput {
		t.Fatalf("%+v", rep)
	}
	if err := e.Input(json.RawMessage(`{"password":"correct horse battery"}`)); err != nil {
		t.Fatal(err)
	}
	if rep := rec.Next(t, timeout); rep.Kind != runtimetest.KindFail || rep.Failure.Code != "com.example:x" {
		t.Fatalf("%+v", rep)
	}
	runtimetest.Wait(t, e, timeout)
	s := e.Diagnostics().Stderr
	if len(s) > 600 || !strings.HasPrefix(s, "[earlier output dropped]\n") || strings.Contains(s, "noise line 0\n") {
		t.Errorf("not bounded: %d bytes: %q", len(s), s)
	}
	if strings.Contains(s, "sk-live") || strings.Contains(s, "horse") || !strings.Contains(s, "[redacted]") {
		t.Errorf("not redacted: %q", s)
	}
	if strings.Contains(s, "\a") || !strings.Contains(s, "bell\uFFFD") {
		t.Errorf("control character kept: %q", s)
	}
}

// TestExitWithoutResult: exit without a terminal message is a failure.
func TestExitWithoutResult(t *testing.T) {
	r := newRuntime(t, exec.Options{Command: []string{script(t, `read -r line; echo '{"type":"progress","stage":"s"}'; exit 3`)}})
	rec := runtimetest.NewRecorder()
	e := start(t, r, call("x", `{}`), rec)
	rec.Next(t, timeout)
	rep := rec.Next(t, timeout)
	if rep.Kind != runtimetest.KindFail || rep.Failure.Code != runtime.CodeInternalError || rep.Failure.Retryable {
		t.Errorf("%+v", rep)
	}
	runtimetest.Wait(t, e, timeout)
	if d := e.Diagnostics(); d.ExitCode != 3 || d.Note == "" {
		t.Errorf("%+v", d)
	}
}

func TestProtocolViolations(t *testing.T) {
	for name, out := range map[string]string{
		"not json":       `echo 'hello'`,
		"no type":        `echo '{"stage":"s"}'`,
		"unknown type":   `echo '{"type":"frobnicate"}'`,
		"unknown member": `echo '{"type":"progress","stage":"s","colour":"red"}'`,
		"bad percent":    `echo '{"type":"progress","percent":"half"}'`,
		"result missing": `echo '{"type":"result"}'`,
		"bad timeout":    `echo '{"type":"input_required","question":"q","inputSchema":{},"timeoutSeconds":-1}'`,
		"long line":      `head -c 5000 /dev/zero | tr '\0' 'x'; echo`,
	} {
		r := newRuntime(t, exec.Options{Command: []string{script(t, "read -r line\n"+out+"\nsleep 30\n")}, MaxLineBytes: 4096})
		rec := runtimetest.NewRecorder()
		e := start(t, r, call("x", `{}`), rec)
		rep := rec.Next(t, timeout)
		if rep.Kind != runtimetest.KindFail || rep.Failure.Code != runtime.CodeInternalError {
			t.Errorf("%s: %+v", name, rep)
		}
		runtimetest.Wait(t, e, timeout)
		if d := e.Diagnostics(); !strings.HasPrefix(d.Note, "protocol violation") {
			t.Errorf("%s: note %q", name, d.Note)
		}
		if rec.Len() != 0 {
			t.Errorf("%s: reports after the failure", name)
		}
	}
}

// TestCancelIgnoredKillsGroup: a tool that ignores cancellation and
// SIGTERM is killed with its whole process group after the grace periods,
// and the task is reported cancelled.
func TestCancelIgnoredKillsGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	r := newRuntime(t, exec.Options{
		Command: []string{script(t, `trap '' TERM
sleep 300 &
echo $! > "$PIDFILE"
read -r line
echo '{"type":"progress","stage":"started"}'
while :; do read -r line || sleep 1; done`)},
		Env: []string{"PIDFILE=" + pidFile},
	})
	rec := runtimetest.NewRecorder()
	e := start(t, r, call("x", `{}`), rec)
	rec.Next(t, timeout)
	began := time.Now()
	e.Cancel()
	rep := rec.Next(t, timeout)
	if rep.Kind != runtimetest.KindCancelled {
		t.Errorf("%+v", rep)
	}
	runtimetest.Wait(t, e, timeout)
	if el := time.Since(began); el < 400*time.Millisecond {
		t.Errorf("killed after %v, before the grace periods", el)
	}
	if d := e.Diagnostics(); d.Note != "killed after the grace period" || d.ExitCode != -1 {
		t.Errorf("%+v", d)
	}
	assertGone(t, pidFile)
}

// assertGone checks that the process whose PID is in file has exited.
func assertGone(t *testing.T, file string) {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(timeout)
	for syscall.Kill(pid, 0) == nil {
		// A killed child of the tool may linger as a zombie until init
		// reaps it; /proc tells the difference.
		if st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil && strings.Contains(string(st), ") Z ") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d survived", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestDeadline: at the deadline the runtime reports deadline-expired and
// stops the tool.
func TestDeadline(t *testing.T) {
	r := newRuntime(t, exec.Options{Command: []string{script(t, `read -r line; exec sleep 30`)}})
	rec := runtimetest.NewRecorder()
	c := call("x", `{}`)
	c.Deadline = time.Now().Add(300 * time.Millisecond)
	e := start(t, r, c, rec)
	rep := rec.Next(t, timeout)
	if rep.Kind != runtimetest.KindFail || rep.Failure.Code != runtime.CodeDeadlineExpired || !rep.Failure.Retryable {
		t.Errorf("%+v", rep)
	}
	runtimetest.Wait(t, e, timeout)
	if rec.Len() != 0 {
		t.Error("reports after the deadline")
	}
}

// TestContextStops: ending the context (the gateway settled the task)
// stops the tool without any report.
func TestContextStops(t *testing.T) {
	r := newRuntime(t, exec.Options{Command: []string{script(t, `read -r line; echo '{"type":"progress","stage":"s"}'
while read -r line; do case "$line" in *cancel*) exit 0;; esac; done`)}, Grace: cooperativeGrace})
	rec := runtimetest.NewRecorder()
	ctx, cancel := context.WithCancel(context.Background())
	e, err := r.Start(ctx, call("x", `{}`), rec)
	if err != nil {
		t.Fatal(err)
	}
	rec.Next(t, timeout)
	cancel()
	runtimetest.Wait(t, e, timeout)
	if rec.Len() != 0 {
		t.Error("reports after the context ended")
	}
	if d := e.Diagnostics(); d.ExitCode != 0 {
		t.Errorf("the tool should have stopped on the cancel message: %+v", d)
	}
}

// TestSettledStopsTool: when the gateway answers ErrSettled (the task
// settled elsewhere), the tool is stopped and nothing more is reported.
func TestSettledStopsTool(t *testing.T) {
	r := newRuntime(t, exec.Options{Command: []string{script(t, `read -r line
while :; do echo '{"type":"progress","stage":"s"}'; sleep 0.05; done`)}})
	rec := runtimetest.NewRecorder()
	rec.Respond = func(runtimetest.Report) error { return runtime.ErrSettled }
	e := start(t, r, call("x", `{}`), rec)
	rec.Next(t, timeout)
	runtimetest.Wait(t, e, timeout)
	if rec.Len() != 0 {
		t.Errorf("%d reports after ErrSettled", rec.Len())
	}
}

// TestRejectedProgressContinues: a rejected progress report is dropped and
// the tool goes on; a rejected input request fails the task.
func TestRejected(t *testing.T) {
	r := newRuntime(t, exec.Options{Command: []string{script(t, `read -r line
echo '{"type":"progress","percent":50}'
echo '{"type":"input_required","question":"q","inputSchema":{"type":"object"}}'
read -r line`)}})
	rec := runtimetest.NewRecorder()
	rec.Respond = func(rep runtimetest.Report) error {
		if rep.Kind == runtimetest.KindProgress || rep.Kind == runtimetest.KindInput {
			return runtime.ErrRejected
		}
		return nil
	}
	e := start(t, r, call("x", `{}`), rec)
	kinds := []string{rec.Next(t, timeout).Kind, rec.Next(t, timeout).Kind, rec.Next(t, timeout).Kind}
	if strings.Join(kinds, ",") != "progress,input,fail" {
		t.Errorf("reports %v", kinds)
	}
	runtimetest.Wait(t, e, timeout)
	if err := e.Input(json.RawMessage(`{}`)); !errors.Is(err, runtime.ErrNotWaiting) {
		t.Errorf("input after end: %v", err)
	}
}

// TestTerminalThenHang: a tool that reports and keeps running is stopped
// after the grace period; its later output is ignored.
func TestTerminalThenHang(t *testing.T) {
	r := newRuntime(t, exec.Options{Command: []string{script(t, `trap '' TERM
read -r line
echo '{"type":"result","result":{"content":[]}}'
echo '{"type":"progress","stage":"late"}'
while :; do sleep 1; done`)}})
	rec := runtimetest.NewRecorder()
	e := start(t, r, call("x", `{}`), rec)
	if rep := rec.Next(t, timeout); rep.Kind != runtimetest.KindComplete {
		t.Errorf("%+v", rep)
	}
	runtimetest.Wait(t, e, timeout)
	if rec.Len() != 0 {
		t.Error("output after the result was reported")
	}
}

func TestNew(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, opts := range map[string]exec.Options{
		"empty":          {},
		"relative":       {Command: []string{"report-tool"}},
		"missing":        {Command: []string{filepath.Join(dir, "missing")}},
		"directory":      {Command: []string{dir}},
		"not executable": {Command: []string{plain}},
		"bad env":        {Command: []string{script(t, "")}, Env: []string{"NOEQUALS"}},
	} {
		if _, err := exec.New(opts); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	r, err := exec.New(exec.Options{Command: []string{script(t, "")}})
	if err != nil || r.CanResume() {
		t.Fatal(err)
	}
	if _, err := r.Resume(context.Background(), call("x", `{}`), runtimetest.NewRecorder()); !errors.Is(err, runtime.ErrNotResumable) {
		t.Error("Resume")
	}
	// A script whose interpreter is missing fails to start.
	bad := filepath.Join(dir, "bad.sh")
	if err := os.WriteFile(bad, []byte("#!/nonexistent/interpreter\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	rb, _ := exec.New(exec.Options{Command: []string{bad}})
	if _, err := rb.Start(context.Background(), call("x", `{}`), runtimetest.NewRecorder()); err == nil {
		t.Error("start of a broken command succeeded")
	}
}

// A program being replaced (missing for a moment, as between a remove and
// a rename) is started once it is back, within RestartWait; one that stays
// missing fails the start once RestartWait has passed.
func TestStartWaitsForReplacedProgram(t *testing.T) {
	p := script(t, `read -r line
echo '{"type":"result","result":{"content":[{"type":"text","text":"back"}],"isError":false}}'
`)
	r := newRuntime(t, exec.Options{Command: []string{p}})
	aside := p + ".new"
	if err := os.Rename(p, aside); err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(300 * time.Millisecond)
		os.Rename(aside, p)
	}()
	rec := runtimetest.NewRecorder()
	start(t, r, call("x", `{}`), rec)
	if rep := rec.Next(t, timeout); rep.Kind != runtimetest.KindComplete {
		t.Fatalf("report %+v", rep)
	}

	gone := newRuntime(t, exec.Options{Command: []string{p}, RestartWait: 200 * time.Millisecond})
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if _, err := gone.Start(context.Background(), call("x", `{}`), runtimetest.NewRecorder()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Start of a missing program: %v", err)
	}
}
