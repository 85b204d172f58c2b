package client_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"agentgw/cli/client"
	"agentgw/runtime"
	"agentgw/task"
)

// syncBuffer is a bytes.Buffer safe for a command writing while the test
// reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// jsonLines decodes -json output.
func jsonLines(t *testing.T, out string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("not a JSON line: %q", sc.Text())
		}
		lines = append(lines, m)
	}
	return lines
}

// kinds lists the "kind" of each JSON line, with the event type after a
// colon for events.
func kinds(lines []map[string]any) []string {
	var out []string
	for _, l := range lines {
		k, _ := l["kind"].(string)
		if k == "event" {
			k += ":" + l["type"].(string)
		}
		out = append(out, k)
	}
	return out
}

func TestCallEcho(t *testing.T) {
	f := newFakeTarget(t)
	trace := filepath.Join(t.TempDir(), "trace.jsonl")
	out, errs, err := f.runClient(userJID, "-trace", trace, "call", demoJID, "echo", `{"text":"hello, world"}`)
	if err != nil {
		t.Fatalf("call: %v\n%s%s", err, out, errs)
	}
	for _, want := range []string{"pinned: retrieved", "request req-", "accepted: task task-", "[1] status: running", "[2] completed",
		"result of task-", "completed at revision 2", "  hello, world\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// The client guide's order: endpoint info, manifest, tool node, input
	// schema, then the invocation and the result.
	want := []string{"query", "manifest-request", "query", "schema-request", "invoke", "task-result-request"}
	if got := f.received; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("requests %v, want %v", got, want)
	}
	// The trace holds the acceptance and both events, each a JSON line.
	raw, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	var accepted, events int
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var tl struct{ Kind, XML string }
		if err := json.Unmarshal([]byte(line), &tl); err != nil {
			t.Fatalf("trace line %q: %v", line, err)
		}
		accepted += strings.Count(tl.XML, "<accepted ")
		events += strings.Count(tl.XML, "<event ")
	}
	if accepted != 1 || events != 2 {
		t.Errorf("trace: %d acceptances, %d events:\n%s", accepted, events, raw)
	}
}

func TestCallJSON(t *testing.T) {
	f := newFakeTarget(t)
	out, errs, err := f.runClient(userJID, "-json", "call", demoJID, "count", `{"to":3,"interval_ms":0}`)
	if err != nil {
		t.Fatalf("call: %v\n%s%s", err, out, errs)
	}
	lines := jsonLines(t, out)
	want := "request accepted event:status event:progress event:progress event:progress event:completed result"
	if got := strings.Join(kinds(lines), " "); got != want {
		t.Fatalf("kinds %q, want %q", got, want)
	}
	acc := lines[1]
	res := lines[len(lines)-1]
	if acc["taskId"] != res["taskId"] || res["state"] != "completed" || res["revision"] != float64(5) {
		t.Errorf("accepted %v, result %v", acc, res)
	}
	// Every event payload printed satisfies the event schema.
	for _, l := range lines {
		if l["kind"] != "event" {
			continue
		}
		p, _ := json.Marshal(l["payload"])
		if err := task.ValidatePayload(task.EventType(l["type"].(string)), p); err != nil {
			t.Errorf("event %v: %v", l, err)
		}
	}
	if sc := res["payload"].(map[string]any)["result"].(map[string]any)["structuredContent"]; sc.(map[string]any)["counted"] != float64(3) {
		t.Errorf("result payload %v", res["payload"])
	}
}

func TestCallValidatesLocally(t *testing.T) {
	f := newFakeTarget(t)
	for _, tc := range []struct{ args, want string }{
		{`{"txt":"x"}`, "do not satisfy the input schema"},
		{`{"text":"a","text":"b"}`, "duplicate"},
		{`["text"]`, "must be a JSON object"},
		{`{"text":`, "arguments"},
	} {
		_, _, err := f.runClient(userJID, "call", demoJID, "echo", tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.args, err, tc.want)
		}
	}
	if n := f.count("invoke"); n != 0 {
		t.Errorf("%d invocations sent for invalid arguments", n)
	}
	_, _, err := f.runClient(userJID, "call", demoJID, "nosuchtool", `{}`)
	if err == nil || !strings.Contains(err.Error(), "has no tool") {
		t.Errorf("unknown tool: %v", err)
	}
}

// TestCallRetriesLostAcceptance: the first two answers to <invoke/> are
// lost after the task was admitted; the client sends the identical request
// again, and gets the same task, executed once.
func TestCallRetriesLostAcceptance(t *testing.T) {
	f := newFakeTarget(t)
	f.loseAccept = 2
	out, errs, err := f.runClient(userJID, "call", demoJID, "echo", `{"text":"once"}`)
	if err != nil {
		t.Fatalf("call: %v\n%s%s", err, out, errs)
	}
	if len(f.invokes) != 3 || f.invokes[0] != f.invokes[1] || f.invokes[1] != f.invokes[2] {
		t.Fatalf("invocations sent: %q", f.invokes)
	}
	if len(f.tasks) != 1 {
		t.Fatalf("%d tasks admitted", len(f.tasks))
	}
	for id, n := range f.starts {
		if n != 1 {
			t.Errorf("task %s executed %d times", id, n)
		}
	}
	if !strings.Contains(out, "sending the identical request again") || !strings.Contains(out, "  once\n") {
		t.Errorf("output:\n%s", out)
	}
}

// TestCallRequestID: -request-id reuses a request ID, as a second process
// retrying a call whose acceptance it never saw would; the task is the
// same and runs once.
func TestCallRequestID(t *testing.T) {
	f := newFakeTarget(t)
	id := "req-0123456789abcdef0123456789abcdef"
	var taskIDs []string
	for i := 0; i < 2; i++ {
		out, errs, err := f.runClient(userJID, "-json", "call", "-request-id", id, "-deadline", "2099-01-01T00:00:00Z", demoJID, "echo", `{"text":"x"}`)
		if err != nil {
			t.Fatalf("call %d: %v\n%s%s", i, err, out, errs)
		}
		lines := jsonLines(t, out)
		if lines[0]["requestId"] != id || lines[0]["deadline"] != "2099-01-01T00:00:00Z" {
			t.Fatalf("request line %v", lines[0])
		}
		taskIDs = append(taskIDs, lines[1]["taskId"].(string))
	}
	if taskIDs[0] != taskIDs[1] || len(f.tasks) != 1 || f.starts[taskIDs[0]] != 1 {
		t.Fatalf("task IDs %v, %d tasks, starts %v", taskIDs, len(f.tasks), f.starts)
	}
	// The same request ID with other arguments is a conflict: no task.
	_, _, err := f.runClient(userJID, "call", "-request-id", id, "-deadline", "2099-01-01T00:00:00Z", demoJID, "echo", `{"text":"y"}`)
	if err == nil || !strings.Contains(err.Error(), "not accepted, no task was created") || !strings.Contains(err.Error(), "conflict") {
		t.Fatalf("reuse with other arguments: %v", err)
	}
}

// TestCallRevisionGap: a lost progress event makes the next one a gap;
// the client asks for the state instead of guessing.
func TestCallRevisionGap(t *testing.T) {
	f := newFakeTarget(t)
	f.drop = func(ev task.Event) bool { return ev.Revision == 2 }
	out, errs, err := f.runClient(userJID, "call", demoJID, "count", `{"to":4}`)
	if err != nil {
		t.Fatalf("call: %v\n%s%s", err, out, errs)
	}
	if f.count("task-state-request") == 0 || !strings.Contains(out, "revision gap: had 1, received 3") {
		t.Fatalf("no recovery:\n%s", out)
	}
	if !strings.Contains(out, "completed at revision 6") {
		t.Fatalf("output:\n%s", out)
	}
}

// TestCallLostTerminalEvent: without the terminal event the client finds
// out from the state after a quiet period.
func TestCallLostTerminalEvent(t *testing.T) {
	f := newFakeTarget(t)
	f.drop = func(ev task.Event) bool { return ev.Type == task.EventCompleted }
	out, errs, err := f.runClient(userJID, "call", "-poll", "20ms", demoJID, "echo", `{"text":"late"}`)
	if err != nil {
		t.Fatalf("call: %v\n%s%s", err, out, errs)
	}
	if f.count("task-state-request") != 1 || !strings.Contains(out, "task task-") || !strings.Contains(out, "  late\n") {
		t.Fatalf("output:\n%s", out)
	}
}

// TestCallIgnoresInvalidEvents: replays, forgeries and malformed events
// are ignored (and logged, without their payload); only the real events
// are printed, each once.
func TestCallIgnoresInvalidEvents(t *testing.T) {
	f := newFakeTarget(t)
	const secret = "SECRET-PAYLOAD"
	f.inject = func(ev task.Event) []string {
		msg := func(from, typ string, body string) string {
			return fmt.Sprintf(`<message xmlns='jabber:client' from='%s' type='%s'>%s</message>`, from, typ, body)
		}
		ev2 := ev
		ev2.ID = "evt-ffffffffffffffffffffffffffffffff"
		bad := ev
		bad.Type = task.EventProgress
		bad.Payload = []byte(`{"percent":500,"message":"` + secret + `"}`)
		el := marshal(t, ev.TokenReader())
		return []string{
			msg("mallory@evil.example", "normal", el),                 // forged sender
			msg(demoJID, "chat", el),                                  // wrong message type
			msg(demoJID, "normal", el+el),                             // two events
			msg(demoJID, "normal", marshal(t, bad.TokenReader())),     // payload breaks the schema
			msg(demoJID+"/x", "normal", `<event xmlns='urn:other'/>`), // not a task event at all
			f.eventMessage(ev, userJID),                               // exact replay: seen after the real one
			msg(demoJID, "normal", marshal(t, ev2.TokenReader())),     // same revision, other event ID
		}
	}
	out, errs, err := f.runClient(userJID, "call", demoJID, "echo", `{"text":"ok"}`)
	if err != nil {
		t.Fatalf("call: %v\n%s%s", err, out, errs)
	}
	if strings.Count(out, "[1] ") != 1 || strings.Count(out, "[2] ") != 1 {
		t.Errorf("events printed more than once:\n%s", out)
	}
	for _, want := range []string{"not sent by the endpoint", "not a message of type normal", "more than one event", "does not satisfy the event schema", "a different event for revision"} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	if strings.Contains(errs, secret) || strings.Contains(out, secret) {
		t.Errorf("an ignored payload was printed")
	}
}

// TestInputFromAnotherResource: call ask waits for input; another process
// (another resource of the same account) answers it with `client input`.
func TestInputFromAnotherResource(t *testing.T) {
	f := newFakeTarget(t)
	var out, errs syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- f.runClientIO(userJID, client.ClientIO{Stdout: &out, Stderr: &errs, Self: "demo/agent gw"},
			"-password-file", "demo/bob.password", "call", demoJID, "ask", `{"question":"Your name?"}`)
	}()
	tk := f.waitTask(task.StateInputRequired)
	waitOutput(t, &out, "answer from any resource of this account with:")
	// The command can be pasted: the binary as invoked, quoted for the
	// shell, the password file it used, and an answer of the schema's
	// shape.
	if want := "'demo/agent gw' client -jid " + userJID + " -password-file demo/bob.password input " + demoJID + " " + tk.ID + " " + tk.Pending.ID + ` '{"answer": "…"}'`; !strings.Contains(out.String(), want) {
		t.Fatalf("no answer hint %s:\n%s", want, out.String())
	}
	if strings.Contains(out.String(), "AGENTGW_PASSWORD") {
		t.Errorf("the hint names AGENTGW_PASSWORD though a password file was used:\n%s", out.String())
	}
	// A wrong answer is refused locally; a stale request ID is refused.
	if _, _, err := f.runClient(userJID, "input", demoJID, tk.ID, tk.Pending.ID, `{"answer":1}`); err == nil || !strings.Contains(err.Error(), "does not satisfy the requested schema") {
		t.Fatalf("wrong answer: %v", err)
	}
	if _, _, err := f.runClient(userJID, "input", demoJID, tk.ID, "input-00000000000000000000000000000000", `{"answer":"x"}`); err == nil || !strings.Contains(err.Error(), "no pending input request") {
		t.Fatalf("unknown request: %v", err)
	}
	in, _, err := f.runClient(userJID, "-json", "input", demoJID, tk.ID, tk.Pending.ID, `{"answer":"Alice"}`)
	if err != nil {
		t.Fatalf("input: %v", err)
	}
	if l := jsonLines(t, in); len(l) != 1 || l[0]["kind"] != "input-accepted" || l[0]["revision"] != float64(3) {
		t.Fatalf("input output %q", in)
	}
	if err := <-done; err != nil {
		t.Fatalf("call: %v\n%s%s", err, out.String(), errs.String())
	}
	if !strings.Contains(out.String(), "[4] completed") || !strings.Contains(out.String(), "  Alice\n") {
		t.Fatalf("call output:\n%s", out.String())
	}
	// The identical answer again, at its revision, is a replay.
	if _, _, err := f.runClient(userJID, "input", "-revision", "2", demoJID, tk.ID, tk.Pending.ID, `{"answer":"Alice"}`); err != nil {
		t.Fatalf("replayed input: %v", err)
	}
}

// TestInputPrompt: on a terminal, call prompts for the answer itself.
func TestInputPrompt(t *testing.T) {
	f := newFakeTarget(t)
	var out, errs syncBuffer
	// A JSON object of the wrong shape is refused with what is expected;
	// plain text answers the schema's one string property.
	stdin := strings.NewReader("{\"answer\":7}\nseven\n")
	err := f.runClientIO(userJID, client.ClientIO{Stdout: &out, Stderr: &errs, Stdin: stdin, Interactive: true},
		"call", demoJID, "ask", `{"question":"How many?"}`)
	if err != nil {
		t.Fatalf("call: %v\n%s%s", err, out.String(), errs.String())
	}
	o := out.String()
	if strings.Count(o, "answer (text): ") != 2 || !strings.Contains(o, "input accepted at revision 3") || !strings.Contains(o, "  seven\n") {
		t.Fatalf("output:\n%s", o)
	}
	if !strings.Contains(o, `such as {"answer": "…"}`) || strings.Contains(o, "manifest") {
		t.Errorf("the refusal does not show the expected JSON, or speaks of a manifest:\n%s", o)
	}
	// Without -password-file the hint says the variable is needed.
	if !strings.Contains(o, "with AGENTGW_PASSWORD set") {
		t.Errorf("no password note:\n%s", o)
	}
}

// TestCancelFromAnotherResource: count runs (held by the fake); another
// resource cancels it; progress racing the cancellation makes the first
// expected-revision stale, which cancel retries at the new revision.
func TestCancelFromAnotherResource(t *testing.T) {
	f := newFakeTarget(t)
	f.holdCount = true
	raced := false
	f.onCancel = func(f *fakeTarget, id string) {
		if raced {
			return
		}
		raced = true
		pct := 10.0
		tk := f.tasks[id]
		f.step(f.m.Progress(tk, runtime.Progress{Percent: &pct}, time.Now()))
	}
	var out, errs syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- f.runClientIO(userJID, client.ClientIO{Stdout: &out, Stderr: &errs}, "call", demoJID, "count", `{"to":100,"interval_ms":1000}`)
	}()
	tk := f.waitTask(task.StateRunning)
	co, _, err := f.runClient(userJID, "cancel", "-reason", "enough", demoJID, tk.ID)
	if err != nil || !strings.Contains(co, "cancellation of "+tk.ID+" accepted at revision 3") {
		t.Fatalf("cancel: %v %q", err, co)
	}
	err = <-done
	if err == nil || !strings.Contains(err.Error(), "was cancelled") {
		t.Fatalf("call: %v\n%s", err, out.String())
	}
	if o := out.String(); !strings.Contains(o, "[3] status: cancelling") || !strings.Contains(o, "[4] cancelled") {
		t.Fatalf("call output:\n%s", o)
	}
	if f.count("cancel") != 2 {
		t.Errorf("%d cancel requests, want 2 (one stale)", f.count("cancel"))
	}
	// Settled: nothing left to cancel.
	if _, _, err := f.runClient(userJID, "cancel", demoJID, tk.ID); err == nil || !strings.Contains(err.Error(), "already settled") {
		t.Fatalf("cancel after settlement: %v", err)
	}
}

// TestCallOutOfBandPins: a caller that may invoke but not see the endpoint
// pins from trusted data: nothing is retrieved.
func TestCallOutOfBandPins(t *testing.T) {
	f := newFakeTarget(t)
	out, errs, err := f.runClient(userJID, "call", "-version", f.man.Version, "-hash", f.man.HashBase64(), demoJID, "echo", `{"text":"blind"}`)
	if err != nil {
		t.Fatalf("call: %v\n%s%s", err, out, errs)
	}
	if got := strings.Join(f.received, " "); got != "invoke task-result-request" || !strings.Contains(out, "pinned: flags") {
		t.Fatalf("requests %q, output:\n%s", got, out)
	}
	// A trusted manifest file pins and validates locally.
	file := filepath.Join(t.TempDir(), "demo.json")
	os.WriteFile(file, f.man.Canonical, 0o600)
	f.received = nil
	if _, _, err := f.runClient(userJID, "call", "-manifest", file, demoJID, "echo", `{"nope":1}`); err == nil || !strings.Contains(err.Error(), "input schema") || len(f.received) != 0 {
		t.Fatalf("invalid arguments with -manifest: %v, requests %v", err, f.received)
	}
	if out, _, err := f.runClient(userJID, "call", "-manifest", file, "-hash", f.man.HashBase64(), demoJID, "echo", `{"text":"file"}`); err != nil || !strings.Contains(out, "pinned: manifest-file") {
		t.Fatalf("call with -manifest: %v\n%s", err, out)
	}
	if _, _, err := f.runClient(userJID, "call", "-manifest", file, "-version", "1.0", demoJID, "echo", `{"text":"x"}`); err == nil || !strings.Contains(err.Error(), "not 1.0") {
		t.Fatalf("-manifest with another version: %v", err)
	}
	// A stale hash is refused by the target before admission.
	_, _, err = f.runClient(userJID, "call", "-version", f.man.Version, "-hash", "K2/YdwvIBAlfUIeZHiNCyiYA4m4W2wrEOqXQDoQyXp4=", demoJID, "echo", `{"text":"x"}`)
	if err == nil || !strings.Contains(err.Error(), "no task was created") || !strings.Contains(err.Error(), "conflict") {
		t.Fatalf("stale hash: %v", err)
	}
}

// TestCallNotFound: an endpoint that does not exist (or is hidden) is
// reported without telling which.
func TestCallNotFound(t *testing.T) {
	f := newFakeTarget(t)
	_, _, err := f.runClient(userJID, "call", "nobody@agents.example", "echo", `{"text":"x"}`)
	if err == nil || !strings.Contains(err.Error(), "item-not-found (it does not exist, or you are not allowed to use it)") {
		t.Fatalf("error %v", err)
	}
}

func TestStateAndResult(t *testing.T) {
	f := newFakeTarget(t)
	if _, _, err := f.runClient(userJID, "call", "-detach", demoJID, "ask", `{"question":"Q?"}`); err != nil {
		t.Fatal(err)
	}
	tk := f.waitTask(task.StateInputRequired)
	out, _, err := f.runClient(userJID, "state", demoJID, tk.ID)
	if err != nil || !strings.Contains(out, "input_required, revision 2") || !strings.Contains(out, "pending input "+tk.Pending.ID+": Q?") {
		t.Fatalf("state: %v\n%s", err, out)
	}
	if _, _, err := f.runClient(userJID, "result", demoJID, tk.ID); err == nil || !strings.Contains(err.Error(), "has not settled yet") {
		t.Fatalf("result before settlement: %v", err)
	}
	out, _, err = f.runClient(userJID, "-json", "state", demoJID, tk.ID)
	if l := jsonLines(t, out); err != nil || len(l) != 1 || l[0]["state"] != "input_required" || l[0]["pendingInput"].(map[string]any)["question"] != "Q?" {
		t.Fatalf("state -json: %v %q", err, out)
	}
	if _, _, err := f.runClient(userJID, "input", demoJID, tk.ID, tk.Pending.ID, `{"answer":"A"}`); err != nil {
		t.Fatal(err)
	}
	out, _, err = f.runClient(userJID, "-json", "result", demoJID, tk.ID)
	l := jsonLines(t, out)
	if err != nil || len(l) != 1 || l[0]["state"] != "completed" || l[0]["revision"] != float64(4) {
		t.Fatalf("result -json: %v %q", err, out)
	}
	// Another account's task IDs are not found.
	if _, _, err := f.runClient("mallory@home.example", "state", demoJID, tk.ID); err == nil || !strings.Contains(err.Error(), "item-not-found") {
		t.Fatalf("state of another's task: %v", err)
	}
}

func TestToolsCommand(t *testing.T) {
	f := newFakeTarget(t)
	out, _, err := f.runClient(userJID, "-json", "tools", demoJID)
	if err != nil {
		t.Fatal(err)
	}
	l := jsonLines(t, out)
	tools := l[0]["tools"].([]any)
	if len(l) != 1 || l[0]["version"] != f.man.Version || len(tools) != 3 {
		t.Fatalf("tools: %q", out)
	}
	count := tools[1].(map[string]any)
	if count["name"] != "count" || fmt.Sprint(count["features"]) != "[urn:xmpp:agent-task:0#progress urn:xmpp:agent-task:0#cancel]" {
		t.Fatalf("count: %v", count)
	}
}

// waitOutput waits until out contains s.
func waitOutput(t *testing.T, out *syncBuffer, s string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if strings.Contains(out.String(), s) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("output never contained %q:\n%s", s, out.String())
}

// TestCallSessionLost: the session ends while call follows the task; it
// logs in again (a new resource, where no event will come) and recovers
// the task from its state.
func TestCallSessionLost(t *testing.T) {
	f := newFakeTarget(t)
	f.drop = func(ev task.Event) bool {
		if ev.Revision != 1 {
			return true
		}
		for _, c := range f.conns { // the lock is held
			if !c.closed {
				c.closed = true
				close(c.in)
				close(c.done)
			}
		}
		return true
	}
	out, errs, err := f.runClient(userJID, "call", demoJID, "echo", `{"text":"again"}`)
	if err != nil {
		t.Fatalf("call: %v\n%s%s", err, out, errs)
	}
	if !strings.Contains(out, "the XMPP session was lost; logging in again") || !strings.Contains(out, "  again\n") || f.nextConn != 2 {
		t.Fatalf("%d logins, output:\n%s", f.nextConn, out)
	}
}

// TestCallInconsistentEvent: a next-revision event that the transition
// table forbids (running → running) is ignored, and the state is asked for.
func TestCallInconsistentEvent(t *testing.T) {
	f := newFakeTarget(t)
	f.inject = func(ev task.Event) []string {
		if ev.Type != task.EventCompleted {
			return nil
		}
		bogus := task.Event{TaskID: ev.TaskID, ID: "evt-eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee", Revision: ev.Revision, Type: task.EventStatus,
			Payload: []byte(`{"state":"running","updatedAt":"2026-01-01T00:00:00Z"}`)}
		return []string{f.eventMessage(bogus, userJID+"/r1")}
	}
	out, errs, err := f.runClient(userJID, "call", demoJID, "echo", `{"text":"sure"}`)
	if err != nil {
		t.Fatalf("call: %v\n%s%s", err, out, errs)
	}
	if !strings.Contains(errs, "status event at revision 2 is inconsistent with the task") || f.count("task-state-request") != 1 ||
		!strings.Contains(out, "completed at revision 2") {
		t.Fatalf("stderr:\n%s\nstdout:\n%s", errs, out)
	}
}
