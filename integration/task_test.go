package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"agentgw/c2s"
	"agentgw/internal/harness"
	"agentgw/runtime/builtin"
	"agentgw/task"
)

// The endpoints of the task tests. demo runs the builtin demo tools;
// ledger runs examples/tools/ledger-tool.sh (exec), whose side effect is a
// line in a file per execution.
const (
	demoEndpoint   = "demo@" + harness.ComponentDomain
	ledgerEndpoint = "ledger@" + harness.ComponentDomain
	ghostEndpoint  = "nobody@" + harness.ComponentDomain
	ledgerManifest = "../examples/tools/ledger-tool.manifest.json"
	ledgerTool     = "ledger.append"
	ledgerVersion  = "1.0.0"
)

// taskConfig is the TOML the task tests add: the two endpoints and the
// grants. alice (home.example) sees and may invoke both; bob, on the
// federated server, sees and may invoke demo; carol may invoke demo's
// echo and count but sees nothing, so she must pin out of band.
func taskConfig(ledgerFile string) (string, error) {
	tool, err := filepath.Abs("../examples/tools/ledger-tool.sh")
	if err != nil {
		return "", err
	}
	return fmt.Sprintf(`
[[endpoint]]
jid = %[1]q
runtime = "builtin"

[[endpoint]]
jid = %[2]q
runtime = "exec"
command = [%[3]q, %[4]q]
sandbox_write = [%[7]q]

[[policy.invoke]]
principals = [%[5]q]
endpoints = [%[1]q, %[2]q]
tools = ["*"]

[[policy.visibility]]
principals = ["bob@%[6]s"]
endpoints = [%[1]q]

[[policy.invoke]]
principals = ["bob@%[6]s"]
endpoints = [%[1]q]
tools = ["*"]

[[policy.invoke]]
principals = ["carol@%[6]s"]
endpoints = [%[1]q]
tools = ["echo", "count"]
`, demoEndpoint, ledgerEndpoint, tool, ledgerFile, harness.HomeDomain, harness.RemoteDomain, filepath.Dir(ledgerFile)), nil
}

// withTaskEndpoints configures the task endpoints and grants and restarts
// the gateway; when the test ends it restores the suite's configuration and
// deactivates both endpoints, so that the directory the other tests count
// is the seeded one. It returns the ledger file.
func withTaskEndpoints(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// Outside suite.dir, which holds the configuration and the database:
	// the tool may write only there (sandbox_write).
	ledger := filepath.Join(t.TempDir(), "ledger.log")
	extra, err := taskConfig(ledger)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := agentgw(ctx, "endpoint", "register", "-config", suite.config, "-activate", ledgerManifest); err != nil {
		t.Fatalf("register ledger: %v %s", err, out)
	}
	useConfig(t, extra, demoEndpoint, ledgerEndpoint)
	return ledger
}

// activeVersion reads the active version and hash of an endpoint from
// `agentgw endpoint status`: the operator's trusted channel.
func activeVersion(t *testing.T, ep string) (version, hash string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := agentgw(ctx, "endpoint", "status", "-config", suite.config, ep)
	if err != nil {
		t.Fatalf("endpoint status %s: %v %s", ep, err, out)
	}
	m := regexp.MustCompile(`(?m)^ \* (\S+) sha-256 (\S+) `).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no active version in:\n%s", out)
	}
	return m[1], m[2]
}

// TestTasks runs the task protocol end to end, through Prosody and, for
// bob and carol, ejabberd over s2s.
func TestTasks(t *testing.T) {
	need(t)
	ledger := withTaskEndpoints(t)
	t.Run("FederatedCall", testFederatedCall)
	t.Run("PinnedWithoutVisibility", testPinnedWithoutVisibility)
	t.Run("NoGrantIsItemNotFound", testNoGrantIsItemNotFound)
	t.Run("ProgressAndCancelFromAnotherResource", testCancelFromAnotherResource)
	t.Run("InputFromAnotherResource", testInputFromAnotherResource)
	t.Run("ReplayAfterLostAcceptance", func(t *testing.T) { testReplayAfterLostAcceptance(t, ledger) })
	t.Run("ClientReplay", func(t *testing.T) { testClientReplay(t, ledger) })
	t.Run("StateAndResult", testStateAndResult)
	t.Run("DiscoverySubcommands", testDiscoverySubcommands)
}

// testFederatedCall is the README's demo: bob, on the federated server,
// calls a demo tool with `agentgw client call`, which discovers and pins
// the manifest over s2s, validates, invokes and follows the events.
func testFederatedCall(t *testing.T) {
	w := newTaskWire(t)
	out, errs, err := runClient(t, w, "bob", harness.RemoteDomain, "call", demoEndpoint, "echo", `{"text":"hello across the federation"}`)
	if err != nil {
		t.Fatalf("call: %v\n%s%s", err, out, errs)
	}
	t.Logf("bob@%s: agentgw client call %s echo:\n%s", harness.RemoteDomain, demoEndpoint, out)
	for _, want := range []string{"pinned: retrieved", "accepted: task task-", "[1] status: running", "[2] completed", "  hello across the federation\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// Progress events, machine-readable.
	out, errs, err = runClient(t, w, "bob", harness.RemoteDomain, "-json", "call", demoEndpoint, "count", `{"to":3,"interval_ms":100}`)
	if err != nil {
		t.Fatalf("call count: %v\n%s%s", err, out, errs)
	}
	var kinds []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not JSON: %q", l)
		}
		k := m["kind"].(string)
		if k == "event" {
			k += ":" + m["type"].(string)
		}
		kinds = append(kinds, k)
	}
	want := "request accepted event:status event:progress event:progress event:progress event:completed result"
	if got := strings.Join(kinds, " "); got != want {
		t.Errorf("kinds %q, want %q\n%s", got, want, out)
	}
}

// testPinnedWithoutVisibility: carol may invoke echo and count but sees
// nothing: discovery answers item-not-found, and she invokes with the
// exact version and hash from trusted out-of-band data.
func testPinnedWithoutVisibility(t *testing.T) {
	w := newTaskWire(t)
	if _, _, err := runClient(t, w, "carol", harness.RemoteDomain, "describe", demoEndpoint); err == nil {
		t.Fatal("carol could describe the demo endpoint")
	}
	_, errs, err := runClient(t, w, "carol", harness.RemoteDomain, "call", demoEndpoint, "echo", `{"text":"x"}`)
	if err == nil || !strings.Contains(errs, "item-not-found") {
		t.Fatalf("carol's full-flow call: %v %s", err, errs)
	}
	version, hash := activeVersion(t, demoEndpoint)
	out, errs, err := runClient(t, w, "carol", harness.RemoteDomain, "call", "-version", version, "-hash", hash, demoEndpoint, "echo", `{"text":"pinned out of band"}`)
	if err != nil || !strings.Contains(out, "pinned: flags") || !strings.Contains(out, "  pinned out of band\n") {
		t.Fatalf("pinned call: %v\n%s%s", err, out, errs)
	}
	// A trusted copy of the manifest pins it and validates the arguments
	// locally.
	raw, err := builtin.ManifestJSON(demoEndpoint)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "demo.json")
	if err := os.WriteFile(file, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	out, errs, err = runClient(t, w, "carol", harness.RemoteDomain, "call", "-manifest", file, "-hash", hash, demoEndpoint, "count", `{"to":2,"interval_ms":50}`)
	if err != nil || !strings.Contains(out, "pinned: manifest-file") || !strings.Contains(out, "progress: 100%") || !strings.Contains(out, "completed") {
		t.Fatalf("call with -manifest: %v\n%s%s", err, out, errs)
	}
	if _, errs, err := runClient(t, w, "carol", harness.RemoteDomain, "call", "-manifest", file, demoEndpoint, "count", `{"to":"two"}`); err == nil || !strings.Contains(errs, "input schema") {
		t.Fatalf("invalid arguments: %v %s", err, errs)
	}
}

// testNoGrantIsItemNotFound: an invocation without a grant gets the same
// bytes as an invocation of an endpoint that does not exist, whatever is
// visible; so does another caller's task.
func testNoGrantIsItemNotFound(t *testing.T) {
	w := newTaskWire(t)
	carol := login(t, "carol", harness.RemoteDomain)
	bob := login(t, "bob", harness.RemoteDomain)
	alice := login(t, "alice", harness.HomeDomain)
	w.drain(alice)
	version, hash := activeVersion(t, demoEndpoint)
	digest := mustDigest(t, hash)
	invoke := func(tool, version string, sum [32]byte) string {
		return marshalTask(t, task.Invoke{RequestID: newRequestID(t), Tool: tool, APIVersion: version, ManifestHash: sum, Arguments: `{"question":"q"}`})
	}
	_, ghost := w.taskIQ(carol, "set", ghostEndpoint, invoke("ask", version, digest))
	if !strings.Contains(ghost, "<item-not-found") {
		t.Fatalf("nonexistent endpoint: %s", ghost)
	}
	for name, c := range map[string]struct {
		c        *c2s.Client
		to, tool string
	}{
		"carol, ungranted tool":       {carol, demoEndpoint, "ask"},
		"bob, ungranted endpoint":     {bob, ledgerEndpoint, ledgerTool},
		"carol, tool that is missing": {carol, demoEndpoint, "nope"},
	} {
		_, raw := w.taskIQ(c.c, "set", c.to, invoke(c.tool, version, digest))
		if stripAddrs(raw) != stripAddrs(ghost) {
			t.Errorf("%s:\n%s\nnonexistent endpoint:\n%s", name, raw, ghost)
		}
	}
	// Another caller's task, and a task that does not exist.
	el, raw := w.taskIQ(alice, "set", demoEndpoint, invoke("ask", version, digest))
	acc, err := task.ParseAccepted(el.Children()[0])
	if err != nil {
		t.Fatalf("alice's invocation: %v %s", err, raw)
	}
	_, theirs := w.taskIQ(bob, "get", demoEndpoint, marshalTask(t, task.TaskStateRequest{TaskID: acc.TaskID}))
	_, none := w.taskIQ(bob, "get", demoEndpoint, marshalTask(t, task.TaskStateRequest{TaskID: "task-00000000000000000000000000000000"}))
	if !strings.Contains(theirs, "<item-not-found") || stripAddrs(theirs) != stripAddrs(none) {
		t.Errorf("another's task:\n%s\nno task:\n%s", theirs, none)
	}
	// Leave nothing waiting for input.
	w.taskIQ(alice, "set", demoEndpoint, marshalTask(t, task.Cancel{TaskID: acc.TaskID}))
}

var (
	acceptedLine = regexp.MustCompile(`accepted: task (task-[0-9a-f]+)`)
	progressLine = regexp.MustCompile(`\[\d+\] progress: `)
	inputHint    = regexp.MustCompile(`input ` + regexp.QuoteMeta(demoEndpoint) + ` (task-[0-9a-f]+) (input-[0-9a-f]+) '`)
)

// testCancelFromAnotherResource: alice calls count from one process (one
// resource) and follows its progress; another process, another resource
// of the same account, cancels it.
func testCancelFromAnotherResource(t *testing.T) {
	w := newTaskWire(t)
	call := startClient(t, "alice", harness.HomeDomain, "call", demoEndpoint, "count", `{"to":100,"interval_ms":200}`)
	taskID := call.waitOutput(t, acceptedLine, 30*time.Second)[1]
	call.waitOutput(t, progressLine, 30*time.Second)
	out, errs, err := runClient(t, w, "alice", harness.HomeDomain, "cancel", "-reason", "enough counting", demoEndpoint, taskID)
	if err != nil || !strings.Contains(out, "cancellation of "+taskID+" accepted at revision") {
		t.Fatalf("cancel: %v\n%s%s", err, out, errs)
	}
	out, errs, err = call.wait(t, 60*time.Second)
	w.trace(call.trace)
	if err == nil || !strings.Contains(errs, "task "+taskID+" was cancelled") {
		t.Fatalf("call: %v\n%s%s", err, out, errs)
	}
	for _, want := range []string{"status: cancelling", "] cancelled", "result of " + taskID + ": cancelled"} {
		if !strings.Contains(out, want) {
			t.Errorf("call output lacks %q:\n%s", want, out)
		}
	}
	// The events the caller saw have no gaps: revisions 1, 2, 3, ...
	revs := regexp.MustCompile(`(?m)^\[(\d+)\] `).FindAllStringSubmatch(out, -1)
	for i, m := range revs {
		if m[1] != fmt.Sprint(i+1) {
			t.Fatalf("event %d has revision %s:\n%s", i+1, m[1], out)
		}
	}
}

// testInputFromAnotherResource: alice calls ask, which waits for input;
// another process (resource) answers with `agentgw client input`.
func testInputFromAnotherResource(t *testing.T) {
	w := newTaskWire(t)
	call := startClient(t, "alice", harness.HomeDomain, "call", demoEndpoint, "ask", `{"question":"What is the answer?"}`)
	m := call.waitOutput(t, inputHint, 30*time.Second)
	taskID, requestID := m[1], m[2]
	if !strings.Contains(call.out.String(), "): What is the answer?") {
		t.Errorf("no question:\n%s", call.out.String())
	}
	// The state, from yet another resource, holds the pending request.
	out, errs, err := runClient(t, w, "alice", harness.HomeDomain, "state", demoEndpoint, taskID)
	if err != nil || !strings.Contains(out, "input_required") || !strings.Contains(out, "pending input "+requestID) {
		t.Fatalf("state: %v\n%s%s", err, out, errs)
	}
	out, errs, err = runClient(t, w, "alice", harness.HomeDomain, "input", demoEndpoint, taskID, requestID, `{"answer":"forty-two"}`)
	if err != nil || !strings.Contains(out, "input for "+taskID+" accepted at revision") {
		t.Fatalf("input: %v\n%s%s", err, out, errs)
	}
	out, errs, err = call.wait(t, 60*time.Second)
	w.trace(call.trace)
	if err != nil || !strings.Contains(out, "] completed") || !strings.Contains(out, "  forty-two\n") {
		t.Fatalf("call: %v\n%s%s", err, out, errs)
	}
}

// testReplayAfterLostAcceptance: alice sends an invocation and drops its
// answer (sent without waiting for it), then sends the identical
// invocation twice: the same task each time, and the tool ran once.
func testReplayAfterLostAcceptance(t *testing.T, ledger string) {
	w := newTaskWire(t)
	alice := login(t, "alice", harness.HomeDomain)
	w.drain(alice)
	_, hash := activeVersion(t, ledgerEndpoint)
	key := "replay-" + newRequestID(t)[4:]
	inv := marshalTask(t, task.Invoke{
		RequestID: newRequestID(t), Tool: ledgerTool, APIVersion: ledgerVersion, ManifestHash: mustDigest(t, hash),
		Arguments: `{"key":"` + key + `","delay_ms":300}`,
	})
	sendRaw(t, alice, `<iq type='set' id='answer-dropped' to='`+ledgerEndpoint+`'>`+inv+`</iq>`)
	var accepted []string
	var taskID string
	for i := 0; i < 2; i++ {
		el, raw := w.taskIQ(alice, "set", ledgerEndpoint, inv)
		kids := el.Children()
		if len(kids) != 1 {
			t.Fatalf("retry %d: %s", i, raw)
		}
		acc, err := task.ParseAccepted(kids[0])
		if err != nil {
			t.Fatalf("retry %d: %v %s", i, err, raw)
		}
		taskID = acc.TaskID
		accepted = append(accepted, marshalTask(t, acc))
	}
	if accepted[0] != accepted[1] {
		t.Fatalf("replays differ:\n%s\n%s", accepted[0], accepted[1])
	}
	st := w.awaitSettled(alice, ledgerEndpoint, taskID)
	if st.State != task.StateCompleted {
		t.Fatalf("task %s settled as %s", taskID, st.State)
	}
	lines := ledgerLines(t, ledger, key)
	if len(lines) != 1 || !strings.HasPrefix(lines[0], task.Handle(taskID)+" ") {
		t.Fatalf("ledger lines for %s: %q (task handle %s)", key, lines, task.Handle(taskID))
	}
}

// testClientReplay: `agentgw client call -request-id` retries a call from
// another process: the same task, run once.
func testClientReplay(t *testing.T, ledger string) {
	w := newTaskWire(t)
	reqID := newRequestID(t)
	key := "cli-" + reqID[4:]
	deadline := task.FormatDateTime(time.Now().Add(time.Hour).Truncate(time.Second))
	var ids []string
	for i := 0; i < 2; i++ {
		out, errs, err := runClient(t, w, "alice", harness.HomeDomain, "call", "-request-id", reqID, "-deadline", deadline,
			ledgerEndpoint, ledgerTool, `{"key":"`+key+`"}`)
		if err != nil {
			t.Fatalf("call %d: %v\n%s%s", i, err, out, errs)
		}
		ids = append(ids, acceptedLine.FindStringSubmatch(out)[1])
	}
	if ids[0] != ids[1] {
		t.Fatalf("task IDs %v", ids)
	}
	if lines := ledgerLines(t, ledger, key); len(lines) != 1 {
		t.Fatalf("ledger lines for %s: %q", key, lines)
	}
}

// testStateAndResult: recovery commands from another resource.
func testStateAndResult(t *testing.T) {
	w := newTaskWire(t)
	out, errs, err := runClient(t, w, "alice", harness.HomeDomain, "call", "-detach", demoEndpoint, "ask", `{"question":"Still there?"}`)
	if err != nil {
		t.Fatalf("call -detach: %v\n%s%s", err, out, errs)
	}
	taskID := acceptedLine.FindStringSubmatch(out)[1]
	if _, errs, err := runClient(t, w, "alice", harness.HomeDomain, "result", demoEndpoint, taskID); err == nil || !strings.Contains(errs, "has not settled yet") {
		t.Fatalf("result before settlement: %v %s", err, errs)
	}
	// The task is detached as soon as it is accepted; the tool asks for
	// input a moment later, so poll the authoritative state for it.
	var st map[string]any
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		out, errs, err = runClient(t, w, "alice", harness.HomeDomain, "-json", "state", demoEndpoint, taskID)
		st = nil
		if err == nil && json.Unmarshal([]byte(out), &st) == nil && st["state"] == "input_required" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("state: %v\n%s%s", err, out, errs)
		}
	}
	if out, errs, err := runClient(t, w, "alice", harness.HomeDomain, "cancel", demoEndpoint, taskID); err != nil {
		t.Fatalf("cancel: %v\n%s%s", err, out, errs)
	}
	// Cancellation of a task waiting for input settles it at once.
	deadline := time.Now().Add(20 * time.Second)
	for {
		out, errs, err = runClient(t, w, "alice", harness.HomeDomain, "-json", "result", demoEndpoint, taskID)
		if !strings.Contains(errs, "has not settled yet") || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	var res map[string]any
	if json.Unmarshal([]byte(out), &res) != nil || res["state"] != "cancelled" || err == nil {
		t.Fatalf("result: %v\n%s%s", err, out, errs)
	}
	if _, errs, err := runClient(t, w, "bob", harness.RemoteDomain, "state", demoEndpoint, taskID); err == nil || !strings.Contains(errs, "item-not-found") {
		t.Fatalf("bob reading alice's task: %v %s", err, errs)
	}
}

// testDiscoverySubcommands: search, discover and tools find the demo
// endpoint the way the README shows.
func testDiscoverySubcommands(t *testing.T) {
	w := newTaskWire(t)
	out, errs, err := runClient(t, w, "alice", harness.HomeDomain, "search", "demo")
	if err != nil || !strings.Contains(out, demoEndpoint) {
		t.Fatalf("search: %v\n%s%s", err, out, errs)
	}
	out, errs, err = runClient(t, w, "bob", harness.RemoteDomain, "search", "-gateway", harness.ComponentDomain, "demo")
	if err != nil || !strings.Contains(out, "1 endpoint matches") || !strings.Contains(out, demoEndpoint) {
		t.Fatalf("bob's search: %v\n%s%s", err, out, errs)
	}
	out, errs, err = runClient(t, w, "bob", harness.RemoteDomain, "discover", harness.ComponentDomain)
	if err != nil || !strings.Contains(out, "1 visible endpoint") {
		t.Fatalf("bob's discover: %v\n%s%s", err, out, errs)
	}
	out, errs, err = runClient(t, w, "bob", harness.RemoteDomain, "tools", demoEndpoint)
	if err != nil || !strings.Contains(out, "3 tools") || !strings.Contains(out, "urn:xmpp:agent-task:0#input") {
		t.Fatalf("tools: %v\n%s%s", err, out, errs)
	}
}
