package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"agentgw/api"
	"agentgw/c2s"
	"agentgw/internal/harness"
	"agentgw/runtime/mcpclient/mcptest"
	"agentgw/task"
)

// The MCP tests (docs/mcp.md): the built binary hosts three mcp endpoints
// behind Prosody. everything runs @modelcontextprotocol/server-everything
// over stdio exactly as the Quick start of docs/mcp.md says; everything-http
// runs it over Streamable HTTP, started here on a loopback port; fixture runs
// this test binary as the stdio fixture server of runtime/mcpclient/mcptest, whose
// tool list a file decides.
const (
	// everythingEnv names server-everything's dist/index.js, as for the
	// tests of runtime/mcpclient; scripts/test installs it and sets it.
	everythingEnv = "AGENTGW_MCP_EVERYTHING"
	// mcpFixtureEnv makes the test binary the fixture server; its value
	// is the file that decides the tool list ("crashable": two more), or
	// currentFixture for the 2026-07-28 fixture.
	mcpFixtureEnv = "AGENTGW_IT_MCPTEST"

	everythingEndpoint     = "everything@" + harness.ComponentDomain
	everythingHTTPEndpoint = "everything-http@" + harness.ComponentDomain
	fixtureEndpoint        = "fixture@" + harness.ComponentDomain

	// quickStartDir is the install folder in the Quick start's lines.
	quickStartDir = "/opt/mcp"
)

// serveMCPFixture runs the test binary as the stdio MCP fixture server
// until its client goes away, and returns the exit code. TestMain calls
// it when mcpFixtureEnv is set.
func serveMCPFixture(file string) int {
	if file == currentFixture {
		// The 2026-07-28 fixture (mcpcurrent_test.go).
		if err := mcptest.ServeCurrentStdio(context.Background()); err != nil {
			return 2
		}
		return 0
	}
	if file == suiteTasksFixture {
		// The tasks scenarios' tools (mcpconformance_test.go).
		if err := mcptest.ServeSuiteTasksStdio(context.Background()); err != nil {
			return 2
		}
		return 0
	}
	mode, _ := os.ReadFile(file)
	opts := mcptest.Options{Crashable: strings.TrimSpace(string(mode)) == "crashable"}
	if err := mcptest.ServeStdio(context.Background(), opts); err != nil {
		return 2
	}
	return 0
}

// mcpEnv is what the MCP tests share.
type mcpEnv struct {
	node, index string
	fixture     string // the fixture's tool-list file
	httpPort    int
	http        *everythingHTTP
}

// everything finds node and server-everything. Without them the test is
// skipped, or fails when AGENTGW_REQUIRE_SERVERS is set.
func everything(t *testing.T) (node, index string) {
	t.Helper()
	missing := func(why string) {
		if requireServers() {
			t.Fatalf("%s and AGENTGW_REQUIRE_SERVERS is set (scripts/test installs server-everything)", why)
		}
		t.Skip(why)
	}
	index = os.Getenv(everythingEnv)
	if index == "" {
		missing(everythingEnv + " is not set")
	}
	if _, err := os.Stat(index); err != nil {
		missing(fmt.Sprintf("%s: %v", everythingEnv, err))
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node is not installed")
	}
	if _, err := exec.LookPath("npx"); err != nil {
		missing("npx is not installed")
	}
	return node, index
}

// npmPrefix is the folder server-everything was installed into with npm
// install --prefix, the dir of the Quick start.
func npmPrefix(t *testing.T, index string) string {
	t.Helper()
	i := strings.LastIndex(index, "/node_modules/")
	if i < 0 {
		t.Fatalf("%s=%s is not inside a node_modules folder", everythingEnv, index)
	}
	return index[:i]
}

// quickStartConfig reads the TOML of the Quick start in docs/mcp.md and
// points its dir at the real install.
func quickStartConfig(t *testing.T, prefix string) string {
	t.Helper()
	raw, err := os.ReadFile("../docs/mcp.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	start := strings.Index(doc, "\n## Quick start\n")
	if start < 0 {
		t.Fatal("docs/mcp.md has no Quick start section")
	}
	section := doc[start+1:]
	if end := strings.Index(section[3:], "\n## "); end >= 0 {
		section = section[:end+3]
	}
	m := regexp.MustCompile("(?s)```toml\n(.*?)```").FindStringSubmatch(section)
	if m == nil || !strings.Contains(m[1], `sandbox_read = ["`+quickStartDir+`"]`) {
		t.Fatalf("the Quick start has no TOML block with sandbox_read = [%q]", quickStartDir)
	}
	return strings.ReplaceAll(m[1], quickStartDir, prefix)
}

// mcpConfig is the TOML the MCP tests add: the Quick start, the other two
// endpoints, and grants for alice.
func mcpConfig(t *testing.T, e *mcpEnv) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return quickStartConfig(t, npmPrefix(t, e.index)) + fmt.Sprintf(`
[[endpoint]]
jid = %[1]q
runtime = "mcp"
url = "http://127.0.0.1:%[2]d/mcp"

[[endpoint]]
jid = %[3]q
runtime = "mcp"
command = [%[4]q]
env = ["%[5]s=%[6]s"]

[[policy.invoke]]
principals = [%[7]q]
endpoints = [%[8]q, %[1]q, %[3]q]
tools = ["*"]
`, everythingHTTPEndpoint, e.httpPort, fixtureEndpoint, exe, mcpFixtureEnv, e.fixture, harness.HomeDomain, everythingEndpoint)
}

// everythingHTTP is server-everything on Streamable HTTP.
type everythingHTTP struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// startEverythingHTTP starts `node dist/index.js streamableHttp` with PORT
// and waits until it accepts connections on the loopback address.
func startEverythingHTTP(t *testing.T, e *mcpEnv) *everythingHTTP {
	t.Helper()
	h := &everythingHTTP{done: make(chan struct{})}
	h.cmd = exec.Command(e.node, e.index, "streamableHttp")
	h.cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(e.httpPort))
	h.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		h.cmd.Wait()
		close(h.done)
	}()
	addr := fmt.Sprintf("127.0.0.1:%d", e.httpPort)
	for deadline := time.Now().Add(20 * time.Second); ; {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return h
		}
		select {
		case <-h.done:
			t.Fatal("server-everything (streamableHttp) exited")
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("server-everything did not listen on %s", addr)
		}
	}
}

// stop kills the server and whatever it started.
func (h *everythingHTTP) stop() {
	select {
	case <-h.done:
		return
	default:
	}
	syscall.Kill(-h.cmd.Process.Pid, syscall.SIGKILL)
	<-h.done
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// withMCPEndpoints starts server-everything on HTTP, configures the three
// endpoints and restarts the gateway, which imports their tools. When the
// test ends it restores the suite's configuration and deactivates them,
// so that the directory the other tests count is the seeded one.
func withMCPEndpoints(t *testing.T, node, index string) *mcpEnv {
	t.Helper()
	e := &mcpEnv{node: node, index: index, fixture: filepath.Join(suite.dir, "mcp-fixture-tools"), httpPort: freePort(t)}
	if err := os.WriteFile(e.fixture, []byte("plain\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e.http = startEverythingHTTP(t, e)
	t.Cleanup(func() { e.http.stop() })
	if err := writeConfig(mcpConfig(t, e)); err != nil {
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
		for _, ep := range []string{everythingEndpoint, everythingHTTPEndpoint, fixtureEndpoint} {
			endpointCLI(t, "deactivate", ep)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	t0 := time.Now()
	if _, err := restartGateway(ctx); err != nil {
		t.Fatalf("restart with the mcp endpoints: %v", err)
	}
	t.Logf("gateway up with the mcp endpoints imported in %v", time.Since(t0).Round(time.Millisecond))
	for _, ep := range []string{everythingEndpoint, everythingHTTPEndpoint, fixtureEndpoint} {
		if !strings.Contains(suite.gateway.logText(), `msg="mcp: tools imported" endpoint=`+ep+" ") {
			t.Fatalf("%s was not imported at start:\n%s", ep, tail(suite.gateway.logText(), 30))
		}
	}
	return e
}

// TestMCP runs the mcp runtime end to end: the built binary, Prosody,
// ejabberd over s2s, and the real server-everything from npm.
func TestMCP(t *testing.T) {
	need(t)
	node, index := everything(t)
	e := withMCPEndpoints(t, node, index)
	t.Run("QuickStartFederatedCall", testMCPQuickStart)
	t.Run("DiscoveryMatchesToolsList", func(t *testing.T) { testMCPDiscovery(t, e) })
	t.Run("ProgressInOrder", testMCPProgress)
	t.Run("ElicitationAnsweredFromAnotherProcess", testMCPElicitation)
	t.Run("TaskRequiredTool", testMCPTaskRequired)
	t.Run("Cancel", testMCPCancel)
	t.Run("Deadline", testMCPDeadline)
	t.Run("UpstreamKilledMidCall", testMCPUpstreamKilled)
	t.Run("StreamableHTTP", testMCPHTTP)
	t.Run("Sync", func(t *testing.T) { testMCPSync(t, e) })
	t.Run("UnreachableAtStart", func(t *testing.T) { testMCPUnreachableAtStart(t, e) })
}

// testMCPQuickStart is the Quick start of docs/mcp.md: bob, on the
// federated ejabberd, calls the echo of server-everything.
func testMCPQuickStart(t *testing.T) {
	w := newTaskWire(t)
	out, errs, err := runClient(t, w, "bob", harness.RemoteDomain, "call", everythingEndpoint, "echo", `{"message":"hello from remote.example"}`)
	if err != nil {
		t.Fatalf("call: %v\n%s%s", err, out, errs)
	}
	t.Logf("bob@%s: agentgw client call %s echo:\n%s", harness.RemoteDomain, everythingEndpoint, out)
	for _, want := range []string{"pinned: retrieved", "accepted: task task-", "[1] status: running", "[2] completed", "  Echo: hello from remote.example\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// The endpoint says that a call starts its stopped server.
	out, errs, err = runClient(t, w, "bob", harness.RemoteDomain, "describe", everythingEndpoint)
	if err != nil || !regexp.MustCompile(`(?m)^  cold_start_supported\s+1$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^  version\s+mcp-[0-9a-f]{12}$`).MatchString(out) {
		t.Errorf("describe: %v\n%s%s", err, out, errs)
	}
	out, errs, err = runClient(t, w, "alice", harness.HomeDomain, "describe", fixtureEndpoint)
	if err != nil || !regexp.MustCompile(`(?m)^  cold_start_supported\s+0$`).MatchString(out) {
		t.Errorf("describe %s: %v\n%s%s", fixtureEndpoint, err, out, errs)
	}
}

// upstreamToolsList asks server-everything for its tools/list directly,
// over stdio, with the capabilities agentgw offers (form elicitation),
// and returns the raw tool objects.
func upstreamToolsList(t *testing.T, e *mcpEnv) []json.RawMessage {
	t.Helper()
	cmd := exec.Command(e.node, e.index, "stdio")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	}()
	lines := make(chan []byte)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			lines <- append([]byte(nil), sc.Bytes()...)
		}
	}()
	send := func(msg string) {
		if _, err := fmt.Fprintln(stdin, msg); err != nil {
			t.Fatal(err)
		}
	}
	await := func(id int) json.RawMessage {
		timeout := time.After(20 * time.Second)
		for {
			select {
			case line, ok := <-lines:
				if !ok {
					t.Fatal("server-everything exited")
				}
				var m struct {
					ID     *int            `json:"id"`
					Method string          `json:"method"`
					Result json.RawMessage `json:"result"`
				}
				if json.Unmarshal(line, &m) == nil && m.ID != nil && *m.ID == id && m.Method == "" {
					return m.Result
				}
			case <-timeout:
				t.Fatalf("no answer %d from server-everything", id)
			}
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{"form":{}}},"clientInfo":{"name":"agentgw-test","version":"0"}}}`)
	await(1)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	var tools []json.RawMessage
	cursor := ""
	for id := 2; ; id++ {
		params := "{}"
		if cursor != "" {
			params = fmt.Sprintf(`{"cursor":%q}`, cursor)
		}
		send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list","params":%s}`, id, params))
		var page struct {
			Tools      []json.RawMessage `json:"tools"`
			NextCursor string            `json:"nextCursor"`
		}
		if err := json.Unmarshal(await(id), &page); err != nil {
			t.Fatal(err)
		}
		tools = append(tools, page.Tools...)
		if cursor = page.NextCursor; cursor == "" {
			return tools
		}
	}
}

// servedManifest retrieves the active manifest with <manifest-request/>
// and returns its tools by name.
func servedManifest(t *testing.T, c *c2s.Client, ep string) (version string, tools map[string]map[string]json.RawMessage, raw []json.RawMessage) {
	t.Helper()
	el, rawIQ := iq(t, c, "get", ep, `<manifest-request xmlns='urn:xmpp:agent-api:0'/>`)
	m, err := api.ParseManifest(apiResult(t, el, rawIQ))
	if err != nil {
		t.Fatal(err)
	}
	if !api.VerifyJSON(m.JSON, m.Hash) {
		t.Fatalf("the manifest of %s does not hash to its advertised value", ep)
	}
	var doc struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal([]byte(m.JSON), &doc); err != nil {
		t.Fatal(err)
	}
	tools = map[string]map[string]json.RawMessage{}
	for _, tl := range doc.Tools {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(tl, &fields); err != nil {
			t.Fatal(err)
		}
		var name string
		json.Unmarshal(fields["name"], &name)
		tools[name] = fields
	}
	return m.Version, tools, doc.Tools
}

// sameJSON compares two JSON values by meaning. The root $schema of a
// schema, the only member a draft-07 rewrite changes in these schemas, is
// left out when dropSchema is set.
func sameJSON(t *testing.T, a, b json.RawMessage, dropSchema bool) bool {
	t.Helper()
	var va, vb any
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	if dropSchema {
		for _, v := range []any{va, vb} {
			if m, ok := v.(map[string]any); ok {
				delete(m, "$schema")
			}
		}
	}
	return reflect.DeepEqual(va, vb)
}

// testMCPDiscovery compares the manifest served over XMPP with the
// server's own tools/list: every tool, with its schemas, annotations,
// execution and _meta intact.
func testMCPDiscovery(t *testing.T, e *mcpEnv) {
	upstream := upstreamToolsList(t, e)
	alice := login(t, "alice", harness.HomeDomain)
	version, served, _ := servedManifest(t, alice, everythingEndpoint)
	if len(served) != len(upstream) {
		t.Errorf("%d tools served, the server lists %d", len(served), len(upstream))
	}
	taskRequired := 0
	for _, raw := range upstream {
		var up map[string]json.RawMessage
		if err := json.Unmarshal(raw, &up); err != nil {
			t.Fatal(err)
		}
		var name string
		json.Unmarshal(up["name"], &name)
		got, ok := served[name]
		if !ok {
			t.Errorf("tool %s is not served", name)
			continue
		}
		for _, member := range []string{"title", "description", "annotations", "execution", "_meta"} {
			if !sameJSON(t, up[member], got[member], false) {
				t.Errorf("%s.%s: served %s, the server lists %s", name, member, got[member], up[member])
			}
		}
		for _, member := range []string{"inputSchema", "outputSchema"} {
			if !sameJSON(t, up[member], got[member], true) {
				t.Errorf("%s.%s: served %s, the server lists %s", name, member, got[member], up[member])
			}
		}
		if len(got["urn:xmpp:agent-api:0"]) == 0 {
			t.Errorf("%s has no urn:xmpp:agent-api:0 object", name)
		}
		if string(up["execution"]) != "" && strings.Contains(string(up["execution"]), `"required"`) {
			taskRequired++
		}
	}
	if taskRequired == 0 {
		t.Error("no tool with execution.taskSupport required (simulate-research-query)")
	}
	t.Logf("%s %s: %d tools, as the server lists them", everythingEndpoint, version, len(served))

	// What bob, on the federated server, lists.
	w := newTaskWire(t)
	out, errs, err := runClient(t, w, "bob", harness.RemoteDomain, "tools", everythingEndpoint)
	if err != nil || !strings.Contains(out, fmt.Sprintf("%s version %s (sha-256 ", everythingEndpoint, version)) ||
		!strings.Contains(out, fmt.Sprintf("): %d tools\n", len(served))) || !strings.Contains(out, "\n  simulate-research-query") {
		t.Errorf("tools: %v\n%s%s", err, out, errs)
	}
}

// jsonLines parses the -json output of agentgw client.
func jsonLines(t *testing.T, out string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not JSON: %q", l)
		}
		lines = append(lines, m)
	}
	return lines
}

// kinds summarizes -json lines: kind, and the event type.
func kinds(lines []map[string]any) string {
	var out []string
	for _, m := range lines {
		k, _ := m["kind"].(string)
		if k == "event" {
			k += ":" + m["type"].(string)
		}
		out = append(out, k)
	}
	return strings.Join(out, " ")
}

// resultPayload returns the state and payload of the result line; for a
// failure, the payload's error object.
func resultPayload(t *testing.T, lines []map[string]any) (string, map[string]any) {
	t.Helper()
	for _, m := range lines {
		if m["kind"] == "result" {
			p, _ := m["payload"].(map[string]any)
			s, _ := m["state"].(string)
			if e, ok := p["error"].(map[string]any); ok && s == "failed" {
				p = e
			}
			return s, p
		}
	}
	t.Fatal("no result line")
	return "", nil
}

// testMCPProgress: the progress notifications of
// trigger-long-running-operation arrive as progress events, in order.
func testMCPProgress(t *testing.T) {
	w := newTaskWire(t)
	out, errs, err := runClient(t, w, "alice", harness.HomeDomain, "-json", "call", everythingEndpoint,
		"trigger-long-running-operation", `{"duration":1,"steps":4}`)
	if err != nil {
		t.Fatalf("call: %v\n%s%s", err, out, errs)
	}
	lines := jsonLines(t, out)
	want := "request accepted event:status event:progress event:progress event:progress event:progress event:completed result"
	if got := kinds(lines); got != want {
		t.Fatalf("kinds %q, want %q\n%s", got, want, out)
	}
	var percents []float64
	var revs []float64
	for _, m := range lines {
		if m["kind"] == "event" {
			revs = append(revs, m["revision"].(float64))
		}
		if m["type"] == "progress" {
			p := m["payload"].(map[string]any)
			percents = append(percents, p["percent"].(float64))
		}
	}
	if !reflect.DeepEqual(percents, []float64{25, 50, 75, 100}) {
		t.Errorf("percents %v", percents)
	}
	for i, r := range revs {
		if r != float64(i+1) {
			t.Errorf("event revisions %v", revs)
			break
		}
	}
	if _, p := resultPayload(t, lines); !strings.Contains(fmt.Sprint(p), "Long running operation completed") {
		t.Errorf("result %v", p)
	}
}

var mcpInputHint = regexp.MustCompile(`input ` + regexp.QuoteMeta(everythingEndpoint) + ` (task-[0-9a-f]+) (input-[0-9a-f]+) '`)

// testMCPElicitation: trigger-elicitation-request elicits a form; alice
// answers it with `agentgw client input` from another process.
func testMCPElicitation(t *testing.T) {
	w := newTaskWire(t)
	call := startClient(t, "alice", harness.HomeDomain, "call", everythingEndpoint, "trigger-elicitation-request", `{}`)
	m := call.waitOutput(t, mcpInputHint, 30*time.Second)
	taskID, requestID := m[1], m[2]
	if !strings.Contains(call.out.String(), "Please provide inputs for the following fields:") {
		t.Errorf("no question:\n%s", call.out.String())
	}
	out, errs, err := runClient(t, w, "alice", harness.HomeDomain, "input", everythingEndpoint, taskID, requestID,
		`{"name":"Ada Lovelace","legacyTitledEnum":"pet-2"}`)
	if err != nil || !strings.Contains(out, "input for "+taskID+" accepted at revision") {
		t.Fatalf("input: %v\n%s%s", err, out, errs)
	}
	out, errs, err = call.wait(t, 60*time.Second)
	w.trace(call.trace)
	if err != nil || !strings.Contains(out, "] completed") || !strings.Contains(out, "- Name: Ada Lovelace") {
		t.Fatalf("call: %v\n%s%s", err, out, errs)
	}
}

// testMCPTaskRequired: simulate-research-query must be called as an MCP
// task; its status messages arrive as progress, its clarification as an
// input request answered from another process.
func testMCPTaskRequired(t *testing.T) {
	w := newTaskWire(t)
	call := startClient(t, "alice", harness.HomeDomain, "-json", "call", everythingEndpoint, "simulate-research-query",
		`{"topic":"python","ambiguous":true}`)
	m := call.waitOutput(t, regexp.MustCompile(`"kind":"event".*"type":"input_required","payload":(\{.*\})\}`), 30*time.Second)
	var in struct {
		RequestID string          `json:"requestId"`
		Schema    json.RawMessage `json:"inputSchema"`
	}
	if err := json.Unmarshal([]byte(m[1]), &in); err != nil || in.RequestID == "" {
		t.Fatalf("input request %s: %v", m[1], err)
	}
	if !strings.Contains(string(in.Schema), `"snake"`) {
		t.Errorf("schema %s", in.Schema)
	}
	taskID := regexp.MustCompile(`"taskId":"(task-[0-9a-f]+)"`).FindStringSubmatch(call.out.String())[1]
	out, errs, err := runClient(t, w, "alice", harness.HomeDomain, "input", everythingEndpoint, taskID, in.RequestID, `{"interpretation":"snake"}`)
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
	if len(messages) < 3 || !strings.Contains(strings.Join(messages, "|"), "Generating report") {
		t.Errorf("progress messages %q", messages)
	}
	if st, p := resultPayload(t, lines); st != "completed" || !strings.Contains(fmt.Sprint(p), "snake") {
		t.Errorf("result %s %v", st, p)
	}
	t.Logf("simulate-research-query: %s", kinds(lines))
}

var mcpAccepted = regexp.MustCompile(`accepted: task (task-[0-9a-f]+)`)

// testMCPCancel: a cancellation from another process during a long tool
// settles the task cancelled.
func testMCPCancel(t *testing.T) {
	w := newTaskWire(t)
	call := startClient(t, "alice", harness.HomeDomain, "call", everythingEndpoint, "trigger-long-running-operation", `{"duration":60,"steps":60}`)
	taskID := call.waitOutput(t, mcpAccepted, 30*time.Second)[1]
	call.waitOutput(t, progressLine, 30*time.Second)
	out, errs, err := runClient(t, w, "alice", harness.HomeDomain, "cancel", "-reason", "long enough", everythingEndpoint, taskID)
	if err != nil || !strings.Contains(out, "cancellation of "+taskID+" accepted at revision") {
		t.Fatalf("cancel: %v\n%s%s", err, out, errs)
	}
	out, errs, err = call.wait(t, 30*time.Second)
	w.trace(call.trace)
	if err == nil || !strings.Contains(errs, "task "+taskID+" was cancelled") || !strings.Contains(out, "result of "+taskID+": cancelled") {
		t.Fatalf("call: %v\n%s%s", err, out, errs)
	}
}

// testMCPDeadline: the deadline is the XMPP side's: a tool still running
// at it fails deadline-expired, whatever the server does.
func testMCPDeadline(t *testing.T) {
	w := newTaskWire(t)
	deadline := task.FormatDateTime(time.Now().Add(4 * time.Second).Truncate(time.Second))
	out, errs, err := runClient(t, w, "alice", harness.HomeDomain, "-json", "call", "-deadline", deadline,
		everythingEndpoint, "trigger-long-running-operation", `{"duration":60,"steps":60}`)
	if err == nil {
		t.Fatalf("call succeeded:\n%s", out)
	}
	st, p := resultPayload(t, jsonLines(t, out))
	if st != "failed" || p["code"] != "deadline-expired" {
		t.Fatalf("result %s %v\n%s", st, p, errs)
	}
}

// upstreamProcess returns the process group of the server that the
// gateway started for the Quick start endpoint (npx, and node under it).
func upstreamProcess(t *testing.T) int {
	t.Helper()
	parent := suite.gateway.cmd.Process.Pid
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, ent := range entries {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold anything but ")".
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) < 2 || fields[1] != strconv.Itoa(parent) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", ent.Name(), "cmdline"))
		if strings.Contains(string(cmdline), "mcp-server-everything") {
			return pid
		}
	}
	t.Fatalf("no mcp-server-everything process under the gateway (pid %d)", parent)
	return 0
}

// testMCPUpstreamKilled: the server is killed mid-call; the task fails,
// retryable; presence shows the endpoint unavailable; the next call
// starts the server again and presence follows.
func testMCPUpstreamKilled(t *testing.T) {
	w := newTaskWire(t)
	alice := login(t, "alice", harness.HomeDomain)
	goOnline(t, alice)
	sendRaw(t, alice, `<presence to='`+everythingEndpoint+`' type='subscribe'/>`)
	expectType(t, awaitPresence(t, alice, everythingEndpoint, 10*time.Second), "subscribed")
	expectType(t, awaitPresence(t, alice, everythingEndpoint, 10*time.Second), "")
	t.Cleanup(func() {
		sendRaw(t, alice, `<presence to='`+everythingEndpoint+`' type='unsubscribe'/>`)
	})

	call := startClient(t, "alice", harness.HomeDomain, "-json", "call", everythingEndpoint, "trigger-long-running-operation", `{"duration":60,"steps":60}`)
	call.waitOutput(t, regexp.MustCompile(`"type":"progress"`), 30*time.Second)
	pgid := upstreamProcess(t)
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	out, errs, err := call.wait(t, 30*time.Second)
	w.trace(call.trace)
	if err == nil {
		t.Fatalf("the call succeeded:\n%s", out)
	}
	st, p := resultPayload(t, jsonLines(t, out))
	if st != "failed" || p["code"] != "unavailable" || p["retryable"] != true {
		t.Fatalf("result %s %v\n%s", st, p, errs)
	}
	expectType(t, awaitPresence(t, alice, everythingEndpoint, 10*time.Second), "unavailable")

	// The next call starts the server again (cold start).
	out, errs, err = runClient(t, w, "alice", harness.HomeDomain, "call", everythingEndpoint, "echo", `{"message":"again"}`)
	if err != nil || !strings.Contains(out, "  Echo: again\n") {
		t.Fatalf("call after the kill: %v\n%s%s", err, out, errs)
	}
	expectType(t, awaitPresence(t, alice, everythingEndpoint, 10*time.Second), "")
	if next := upstreamProcess(t); next == pgid {
		t.Errorf("the server was not started again (pid %d)", next)
	}
}

// testMCPHTTP: the same server over Streamable HTTP serves the same
// tools, and calls with progress work.
func testMCPHTTP(t *testing.T) {
	alice := login(t, "alice", harness.HomeDomain)
	_, _, stdio := servedManifest(t, alice, everythingEndpoint)
	_, _, http := servedManifest(t, alice, everythingHTTPEndpoint)
	a, _ := json.Marshal(stdio)
	b, _ := json.Marshal(http)
	if string(a) != string(b) {
		t.Errorf("the tools over HTTP differ from those over stdio")
	}
	w := newTaskWire(t)
	out, errs, err := runClient(t, w, "alice", harness.HomeDomain, "call", everythingHTTPEndpoint, "echo", `{"message":"over http"}`)
	if err != nil || !strings.Contains(out, "  Echo: over http\n") {
		t.Fatalf("echo: %v\n%s%s", err, out, errs)
	}
	out, errs, err = runClient(t, w, "alice", harness.HomeDomain, "-json", "call", everythingHTTPEndpoint,
		"trigger-long-running-operation", `{"duration":0.4,"steps":2}`)
	if err != nil {
		t.Fatalf("progress: %v\n%s%s", err, out, errs)
	}
	if got, want := kinds(jsonLines(t, out)), "request accepted event:status event:progress event:progress event:completed result"; got != want {
		t.Errorf("kinds %q, want %q", got, want)
	}
}

var syncFirstLine = regexp.MustCompile(`^(registered|imported|unchanged) ` + regexp.QuoteMeta(fixtureEndpoint) + ` (mcp-[0-9a-f]{12}) sha-256 (\S+)\n`)

// endpointSync runs `agentgw endpoint sync` and parses its first line.
func endpointSync(t *testing.T, ep string) (word, version, hash, out string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := agentgw(ctx, "endpoint", "sync", "-config", suite.config, ep)
	m := syncFirstLine.FindStringSubmatch(out)
	if err != nil || m == nil {
		t.Fatalf("endpoint sync %s: %v\n%s", ep, err, out)
	}
	return m[1], m[2], m[3], out
}

// testMCPSync: `agentgw endpoint sync` imports again: identical tools keep
// the version and hash; a changed list registers a new version and
// activates it, which the running gateway serves at once; status shows
// the skipped tools with their reasons.
func testMCPSync(t *testing.T, e *mcpEnv) {
	active, activeHash := activeVersion(t, fixtureEndpoint)
	word, version, hash, out := endpointSync(t, fixtureEndpoint)
	if word != "unchanged" || version != active || hash != activeHash {
		t.Fatalf("first sync (serve imported the same list at start):\n%s", out)
	}
	if !strings.Contains(out, "skipped lookbehind: inputSchema/properties/x/pattern: ") {
		t.Errorf("sync output lacks the skipped tool:\n%s", out)
	}
	if word, v2, h2, out := endpointSync(t, fixtureEndpoint); word != "unchanged" || v2 != version || h2 != hash {
		t.Fatalf("second sync:\n%s", out)
	}

	if err := os.WriteFile(e.fixture, []byte("crashable\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	alice := login(t, "alice", harness.HomeDomain)
	word, changed, changedHash, out := endpointSync(t, fixtureEndpoint)
	synced := time.Now()
	if word != "registered" || changed == version || changedHash == hash || !strings.Contains(out, "activated "+fixtureEndpoint+" "+changed+"\n") {
		t.Fatalf("sync of a changed list:\n%s", out)
	}
	// The running gateway serves it within a second.
	for {
		el, _ := iq(t, alice, "get", fixtureEndpoint, discoInfo)
		if formValues(t, el)["version"] == changed {
			break
		}
		if time.Since(synced) > time.Second {
			t.Fatalf("the gateway still serves %s a second after the sync", formValues(t, el)["version"])
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("the gateway served %s %v after the sync returned", changed, time.Since(synced).Round(time.Millisecond))

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := agentgw(ctx, "endpoint", "status", "-config", suite.config, fixtureEndpoint)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"origin: mcp\n", "active: " + changed + "\n", "last import: " + changed + " at ",
		"skipped by the import of " + changed + ":\n   lookbehind: inputSchema/properties/x/pattern: ",
		"   untranslatable: inputSchema: draft-07 schema has no exact JSON Schema 2020-12 form",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
}

// testMCPUnreachableAtStart: with the HTTP server down, the gateway still
// starts, logs why, and keeps the endpoint's version; once the server is
// back it is imported and called.
func testMCPUnreachableAtStart(t *testing.T, e *mcpEnv) {
	before, _ := activeVersion(t, everythingHTTPEndpoint)
	e.http.stop()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if _, err := restartGateway(ctx); err != nil {
		t.Fatalf("the gateway did not start with an upstream down: %v", err)
	}
	failed := regexp.MustCompile(`msg="mcp: import failed; the active version stays" endpoint=` + regexp.QuoteMeta(everythingHTTPEndpoint) + ` `)
	if !failed.MatchString(suite.gateway.logText()) {
		t.Errorf("no import failure logged:\n%s", tail(suite.gateway.logText(), 30))
	}
	if after, _ := activeVersion(t, everythingHTTPEndpoint); after != before {
		t.Errorf("active version %s after a failed import, was %s", after, before)
	}
	w := newTaskWire(t)
	out, errs, err := runClient(t, w, "alice", harness.HomeDomain, "-json", "call", everythingHTTPEndpoint, "echo", `{"message":"down"}`)
	if st, p := resultPayload(t, jsonLines(t, out)); err == nil || st != "failed" || p["code"] != "unavailable" || p["retryable"] != true {
		t.Errorf("call while down: %v %s %v\n%s", err, st, p, errs)
	}

	e.http = startEverythingHTTP(t, e)
	imported := regexp.MustCompile(`msg="mcp: tools imported" endpoint=` + regexp.QuoteMeta(everythingHTTPEndpoint) + ` version=` + before + ` `)
	for deadline := time.Now().Add(60 * time.Second); !imported.MatchString(suite.gateway.logText()); {
		if time.Now().After(deadline) {
			t.Fatalf("the endpoint was not imported once its server was back:\n%s", tail(suite.gateway.logText(), 30))
		}
		time.Sleep(100 * time.Millisecond)
	}
	out, errs, err = runClient(t, w, "alice", harness.HomeDomain, "call", everythingHTTPEndpoint, "echo", `{"message":"back"}`)
	if err != nil || !strings.Contains(out, "  Echo: back\n") {
		t.Fatalf("call once the server is back: %v\n%s%s", err, out, errs)
	}
}
