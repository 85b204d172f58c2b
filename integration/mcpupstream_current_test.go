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

	"agentgw/internal/harness"
)

// currentEndpoint hosts the 2026-07-28 fixture of runtime/mcpclient/mcptest
// (go-sdk v1.8.0's server at its default revision, with a minimal tasks
// extension of the test's own): this test binary, run over stdio.
const currentEndpoint = "current@" + harness.ComponentDomain

// currentFixture, as the value of mcpFixtureEnv, makes the test binary the
// 2026-07-28 fixture (a value, not a file: the sandboxed server reads
// nothing outside its directory).
const currentFixture = "current"

// TestMCPUpstreamCurrentRevision: the gateway reaches an upstream on MCP
// 2026-07-28 at that revision (server/discover), and an XMPP client drives
// its input requests as ProtoXEP tasks: MRTR on a plain call, and an
// extension task (tasks/get, tasks/update, tasks/cancel).
func TestMCPUpstreamCurrentRevision(t *testing.T) {
	need(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	withMCPEndpoint(t, currentEndpoint, fmt.Sprintf(`
[[endpoint]]
jid = %[1]q
runtime = "mcp"
command = [%[2]q]
env = ["%[3]s=%[4]s"]

[[policy.invoke]]
principals = [%[5]q]
endpoints = [%[1]q]
tools = ["*"]
`, currentEndpoint, exe, mcpFixtureEnv, currentFixture, harness.HomeDomain))
	line := regexp.MustCompile(`msg="mcp: server up"[^\n]*server=mcptest-current[^\n]*`).FindString(suite.gateway.logText())
	if !strings.Contains(line, "protocol=2026-07-28") {
		t.Errorf("the upstream was not reached at 2026-07-28: %q\n%s", line, tail(suite.gateway.logText(), 30))
	}
	t.Run("MRTRInput", testMCPCurrentMRTR)
	t.Run("ExtensionTaskInput", testMCPCurrentTask)
	t.Run("ExtensionTaskCancel", testMCPCurrentCancel)
}

// withMCPEndpoint restarts the gateway with config, which hosts the mcp
// endpoint ep, until the test ends, and waits for ep's import.
func withMCPEndpoint(t *testing.T, ep, config string) {
	t.Helper()
	if err := writeConfig(config); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if err := writeConfig(""); err != nil {
			t.Error(err)
		}
		if _, err := restartGateway(ctx); err != nil {
			t.Errorf("restart: %v", err)
		}
		endpointCLI(t, "deactivate", ep)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if _, err := restartGateway(ctx); err != nil {
		t.Fatalf("restart with the mcp endpoint: %v", err)
	}
	imported := `msg="mcp: tools imported" endpoint=` + ep + " "
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(suite.gateway.logText(), imported); {
		if time.Now().After(deadline) {
			t.Fatalf("%s was not imported at start:\n%s", ep, tail(suite.gateway.logText(), 30))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

var currentInputHint = regexp.MustCompile(`input ` + regexp.QuoteMeta(currentEndpoint) + ` (task-[0-9a-f]+) (input-[0-9a-f]+) '`)

// testMCPCurrentMRTR: greet answers input_required (MRTR); alice gets the
// ProtoXEP input request and answers it from another process; the retry
// carries her answer as inputResponses.
func testMCPCurrentMRTR(t *testing.T) {
	w := newTaskWire(t)
	call := startClient(t, "alice", harness.HomeDomain, "call", currentEndpoint, "greet", `{}`)
	m := call.waitOutput(t, currentInputHint, 30*time.Second)
	taskID, requestID := m[1], m[2]
	if !strings.Contains(call.out.String(), "What is your name?") {
		t.Errorf("no question:\n%s", call.out.String())
	}
	out, errs, err := runClient(t, w, "alice", harness.HomeDomain, "input", currentEndpoint, taskID, requestID, `{"name":"Ada"}`)
	if err != nil || !strings.Contains(out, "input for "+taskID+" accepted at revision") {
		t.Fatalf("input: %v\n%s%s", err, out, errs)
	}
	out, errs, err = call.wait(t, 60*time.Second)
	w.trace(call.trace)
	if err != nil || !strings.Contains(out, "] completed") || !strings.Contains(out, "Hello, Ada!") {
		t.Fatalf("call: %v\n%s%s", err, out, errs)
	}
}

var currentInputEvent = regexp.MustCompile(`"kind":"event".*"type":"input_required","payload":(\{.*\})\}`)

// currentInput waits for the input request of a -json call and returns
// the task and request IDs.
func currentInput(t *testing.T, call *clientProc) (taskID, requestID string) {
	t.Helper()
	m := call.waitOutput(t, currentInputEvent, 30*time.Second)
	var in struct {
		RequestID string `json:"requestId"`
		Question  string `json:"question"`
	}
	if err := json.Unmarshal([]byte(m[1]), &in); err != nil || in.RequestID == "" {
		t.Fatalf("input request %s: %v", m[1], err)
	}
	taskID = regexp.MustCompile(`"taskId":"(task-[0-9a-f]+)"`).FindStringSubmatch(call.out.String())[1]
	return taskID, in.RequestID
}

// testMCPCurrentTask: paint is an extension task; its statusMessage
// arrives as progress, its inputRequests as an input request, and the
// answer goes back in tasks/update.
func testMCPCurrentTask(t *testing.T) {
	w := newTaskWire(t)
	call := startClient(t, "alice", harness.HomeDomain, "-json", "call", currentEndpoint, "paint", `{}`)
	taskID, requestID := currentInput(t, call)
	out, errs, err := runClient(t, w, "alice", harness.HomeDomain, "input", currentEndpoint, taskID, requestID, `{"colour":"blue"}`)
	if err != nil {
		t.Fatalf("input: %v\n%s%s", err, out, errs)
	}
	out, errs, err = call.wait(t, 60*time.Second)
	w.trace(call.trace)
	if err != nil {
		t.Fatalf("call: %v\n%s%s", err, out, errs)
	}
	lines := jsonLines(t, out)
	var messages []string
	for _, l := range lines {
		if l["type"] == "progress" {
			if msg, ok := l["payload"].(map[string]any)["message"].(string); ok {
				messages = append(messages, msg)
			}
		}
	}
	if !strings.Contains(strings.Join(messages, "|"), "Mixing") {
		t.Errorf("progress messages %q", messages)
	}
	if st, p := resultPayload(t, lines); st != "completed" || !strings.Contains(fmt.Sprint(p), "painted blue") {
		t.Errorf("result %s %v", st, p)
	}
	t.Logf("paint: %s", kinds(lines))
}

// testMCPCurrentCancel: a cancellation from another process while the
// extension task runs settles the XMPP task cancelled (tasks/cancel).
func testMCPCurrentCancel(t *testing.T) {
	w := newTaskWire(t)
	call := startClient(t, "alice", harness.HomeDomain, "-json", "call", currentEndpoint, "paint", `{"block":true}`)
	taskID, requestID := currentInput(t, call)
	out, errs, err := runClient(t, w, "alice", harness.HomeDomain, "input", currentEndpoint, taskID, requestID, `{"colour":"red"}`)
	if err != nil {
		t.Fatalf("input: %v\n%s%s", err, out, errs)
	}
	call.waitOutput(t, regexp.MustCompile(`"message":"Painting"`), 30*time.Second)
	out, errs, err = runClient(t, w, "alice", harness.HomeDomain, "cancel", "-reason", "enough", currentEndpoint, taskID)
	if err != nil || !strings.Contains(out, "cancellation of "+taskID+" accepted at revision") {
		t.Fatalf("cancel: %v\n%s%s", err, out, errs)
	}
	out, errs, err = call.wait(t, 30*time.Second)
	w.trace(call.trace)
	if st, _ := resultPayload(t, jsonLines(t, out)); st != "cancelled" {
		t.Fatalf("call: %v, state %s\n%s%s", err, st, out, errs)
	}
}

// conformanceEndpoint hosts go-sdk v1.8.0's conformance fixture server.
const conformanceEndpoint = "conformance@" + harness.ComponentDomain

// TestMCPConformanceServerUpstream puts go-sdk v1.8.0's own conformance
// server (conformance/everything-server, built by scripts/lib.sh beside
// the suite; AGENTGW_MCP_CONFORMANCE_SERVER names it) behind the gateway
// as a runtime = "mcp" endpoint over stdio, sandboxed: it is reached at
// 2026-07-28, and alice answers its two-round MRTR tool from the XMPP
// side.
func TestMCPConformanceServerUpstream(t *testing.T) {
	need(t)
	bin := os.Getenv("AGENTGW_MCP_CONFORMANCE_SERVER")
	if bin == "" {
		if requireServers() {
			t.Fatal("AGENTGW_MCP_CONFORMANCE_SERVER is not set and AGENTGW_REQUIRE_SERVERS is set (scripts/test builds it)")
		}
		t.Skip("AGENTGW_MCP_CONFORMANCE_SERVER is not set")
	}
	withMCPEndpoint(t, conformanceEndpoint, fmt.Sprintf(`
[[endpoint]]
jid = %[1]q
runtime = "mcp"
command = [%[2]q]
sandbox_read = [%[3]q]

[[policy.invoke]]
principals = [%[4]q]
endpoints = [%[1]q]
tools = ["*"]
`, conformanceEndpoint, bin, filepath.Dir(bin), harness.HomeDomain))
	line := regexp.MustCompile(`msg="mcp: server up"[^\n]*server=mcp-conformance-test-server[^\n]*`).FindString(suite.gateway.logText())
	if !strings.Contains(line, "protocol=2026-07-28") {
		t.Errorf("the upstream was not reached at 2026-07-28: %q\n%s", line, tail(suite.gateway.logText(), 30))
	}

	w := newTaskWire(t)
	out, errs, err := runClient(t, w, "alice", harness.HomeDomain, "call", conformanceEndpoint, "test_simple_text", `{}`)
	if err != nil || !strings.Contains(out, "This is a simple text response for testing.") {
		t.Fatalf("test_simple_text: %v\n%s%s", err, out, errs)
	}

	hint := regexp.MustCompile(`input ` + regexp.QuoteMeta(conformanceEndpoint) + ` (task-[0-9a-f]+) (input-[0-9a-f]+) '`)
	call := startClient(t, "alice", harness.HomeDomain, "call", conformanceEndpoint, "test_input_required_result_multi_round", `{}`)
	m := call.waitOutput(t, hint, 30*time.Second)
	out, errs, err = runClient(t, w, "alice", harness.HomeDomain, "input", conformanceEndpoint, m[1], m[2], `{"name":"Ada"}`)
	if err != nil {
		t.Fatalf("input 1: %v\n%s%s", err, out, errs)
	}
	// The second round's request has its own ID.
	second := regexp.MustCompile(`input ` + regexp.QuoteMeta(conformanceEndpoint) + ` ` + m[1] + ` ((?:input-[0-9a-f]+)) '`)
	var id2 string
	for deadline := time.Now().Add(30 * time.Second); id2 == ""; {
		for _, mm := range second.FindAllStringSubmatch(call.out.String(), -1) {
			if mm[1] != m[2] {
				id2 = mm[1]
			}
		}
		if id2 == "" {
			if time.Now().After(deadline) {
				t.Fatalf("no second input request:\n%s", call.out.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if !strings.Contains(call.out.String(), "Step 2: What is your favorite color?") {
		t.Errorf("no second question:\n%s", call.out.String())
	}
	out, errs, err = runClient(t, w, "alice", harness.HomeDomain, "input", conformanceEndpoint, m[1], id2, `{"color":"blue"}`)
	if err != nil {
		t.Fatalf("input 2: %v\n%s%s", err, out, errs)
	}
	out, errs, err = call.wait(t, 60*time.Second)
	w.trace(call.trace)
	if err != nil || !strings.Contains(out, "Multi-round complete: Ada likes blue") {
		t.Fatalf("call: %v\n%s%s", err, out, errs)
	}
}
