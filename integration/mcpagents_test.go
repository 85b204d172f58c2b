package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"agentgw/agentclient"
	"agentgw/internal/harness"
	"agentgw/task"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"mellium.im/xmpp/jid"
)

// Tests of the agent side of `agentgw mcp` (docs/mcp.md, "XMPP agents
// for MCP clients"): the gateway on Prosody hosts the builtin demo
// endpoint, and `agentgw mcp` logs in as bob of ejabberd, so that every
// call crosses s2s.

// agentMCP is a go-sdk session with `agentgw mcp` and what it heard.
type agentMCP struct {
	*mcp.ClientSession
	stderr *syncBuf

	mu        sync.Mutex
	progress  []*mcp.ProgressNotificationParams
	listed    int
	elicited  []string
	answer    map[string]any
	listedCh  chan struct{}
	progressC chan *mcp.ProgressNotificationParams
}

// writeAgentMCPConfig writes the configuration of `agentgw mcp` as bob
// with demo projected under the prefix "demo".
func writeAgentMCPConfig(t *testing.T, poll int) string {
	t.Helper()
	dir := t.TempDir()
	writePasswordFile(t, dir)
	body := fmt.Sprintf(`
[log]
level = "debug"

[mcp]
%s
agent_poll_seconds = %d

[[mcp.account]]
jid = "bob@%s"
password_file = "account.password"
server = %q

[[mcp.agent]]
jid = %q
tools = ["*"]
prefix = "demo"
`, mcpStoreKey(t, "mcp.db"), poll, harness.RemoteDomain, suite.env.EjabberdC2S, demoEndpoint)
	path := filepath.Join(dir, "mcp.toml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// startAgentMCP runs `agentgw mcp -config path` over stdio, with a client
// that declares elicitation and records progress and list changes.
func startAgentMCP(t *testing.T, path string) *agentMCP { return startAgentMCPWith(t, path, true) }

// startAgentMCPWith is startAgentMCP; elicit false declares no
// elicitation.
func startAgentMCPWith(t *testing.T, path string, elicit bool) *agentMCP {
	t.Helper()
	m := &agentMCP{stderr: &syncBuf{}, listedCh: make(chan struct{}, 64), progressC: make(chan *mcp.ProgressNotificationParams, 256)}
	cmd := exec.Command(suite.bin, "mcp", "-config", path)
	cmd.Stderr = m.stderr
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "integration-agents", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			m.mu.Lock()
			m.progress = append(m.progress, r.Params)
			m.mu.Unlock()
			select {
			case m.progressC <- r.Params:
			default:
			}
		},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			m.mu.Lock()
			m.listed++
			m.mu.Unlock()
			select {
			case m.listedCh <- struct{}{}:
			default:
			}
		},
		ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			m.mu.Lock()
			defer m.mu.Unlock()
			m.elicited = append(m.elicited, r.Params.Message)
			return &mcp.ElicitResult{Action: "accept", Content: m.answer}, nil
		},
	})
	if !elicit {
		c = mcp.NewClient(&mcp.Implementation{Name: "integration-no-elicitation", Version: "1"}, nil)
	}
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, m.stderr)
	}
	m.ClientSession = cs
	t.Cleanup(func() { cs.Close() })
	waitMCPLog(t, m.stderr, "xmpp stream up", 1)
	return m
}

// callResult calls a tool and returns the result whole.
func callResult(t *testing.T, cs *mcp.ClientSession, params *mcp.CallToolParams) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, params)
	if err != nil {
		t.Fatalf("%s: %v", params.Name, err)
	}
	return res
}

// structured returns a result's structuredContent as a map.
func structuredOf(t *testing.T, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	raw, _ := json.Marshal(res.StructuredContent)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("structuredContent %s: %v (%s)", raw, err, resultText(res))
	}
	return out
}

func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// waitProjected waits until tools/list shows the projected tool name.
func waitProjected(t *testing.T, cs *mcp.ClientSession, name string) *mcp.Tool {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		list, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tl := range list.Tools {
			if tl.Name == name {
				return tl
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never listed", name)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestMCPAgents(t *testing.T) {
	need(t)
	withTaskEndpoints(t)
	m := startAgentMCP(t, writeAgentMCPConfig(t, 60))
	cs := m.ClientSession

	t.Run("ListSearchDescribe", func(t *testing.T) {
		page := structuredOf(t, callResult(t, cs, &mcp.CallToolParams{Name: "ListAgents", Arguments: map[string]any{"Gateway": harness.ComponentDomain}}))
		agents, _ := page["Agents"].([]any)
		var jids []string
		for _, a := range agents {
			jids = append(jids, a.(map[string]any)["Jid"].(string))
		}
		// bob sees demo only: the grants are per principal, across s2s.
		if !slices.Equal(jids, []string{demoEndpoint}) || page["NextCursor"] != nil {
			t.Fatalf("ListAgents: %v", page)
		}
		found := structuredOf(t, callResult(t, cs, &mcp.CallToolParams{Name: "SearchAgents", Arguments: map[string]any{"Text": "demo", "Gateway": harness.ComponentDomain}}))
		if a, _ := found["Agents"].([]any); len(a) != 1 || a[0].(map[string]any)["Jid"] != demoEndpoint {
			t.Fatalf("SearchAgents: %v", found)
		}
		d := structuredOf(t, callResult(t, cs, &mcp.CallToolParams{Name: "DescribeAgent", Arguments: map[string]any{"Jid": demoEndpoint}}))
		var names []string
		for _, tl := range d["Tools"].([]any) {
			names = append(names, tl.(map[string]any)["Name"].(string))
		}
		if d["Success"] != true || !slices.Equal(names, []string{"ask", "count", "echo"}) && !slices.Equal(names, []string{"echo", "count", "ask"}) || d["Hash"] == "" {
			t.Fatalf("DescribeAgent: %v", d)
		}
	})

	t.Run("CallAgentTool", func(t *testing.T) {
		res := callResult(t, cs, &mcp.CallToolParams{Name: "CallAgentTool", Arguments: map[string]any{"Jid": demoEndpoint, "Tool": "echo", "Arguments": map[string]any{"text": "over s2s"}}})
		if res.IsError || structuredOf(t, res)["text"] != "over s2s" {
			t.Fatalf("CallAgentTool echo: %s %v", resultText(res), res.StructuredContent)
		}
	})

	t.Run("BadInput", func(t *testing.T) {
		for _, c := range []struct {
			args map[string]any
			want string
		}{
			{map[string]any{"Jid": "nobody@" + harness.ComponentDomain, "Tool": "echo", "Arguments": map[string]any{}}, "item-not-found"},
			{map[string]any{"Jid": demoEndpoint, "Tool": "nosuch", "Arguments": map[string]any{}}, `no tool "nosuch"`},
			{map[string]any{"Jid": demoEndpoint, "Tool": "echo", "Arguments": map[string]any{"text": 7}}, "input schema of echo"},
			{map[string]any{"Jid": demoEndpoint, "Tool": "echo", "Arguments": map[string]any{"text": "x"}, "Version": "demo-000000000000", "Hash": "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="}, "stale pin"},
		} {
			res := callResult(t, cs, &mcp.CallToolParams{Name: "CallAgentTool", Arguments: c.args})
			if !res.IsError || !strings.Contains(resultText(res), c.want) {
				t.Errorf("%v: %v %s, want an error naming %q", c.args, res.IsError, resultText(res), c.want)
			}
		}
	})

	t.Run("ProjectedEcho", func(t *testing.T) {
		tl := waitProjected(t, cs, "demo_echo")
		raw, _ := json.Marshal(tl.InputSchema)
		if !strings.Contains(string(raw), `"text"`) || tl.Annotations == nil || !tl.Annotations.ReadOnlyHint || tl.OutputSchema == nil {
			t.Fatalf("demo_echo: schema %s annotations %+v", raw, tl.Annotations)
		}
		res := callResult(t, cs, &mcp.CallToolParams{Name: "demo_echo", Arguments: map[string]any{"text": "projected"}})
		if res.IsError || structuredOf(t, res)["text"] != "projected" {
			t.Fatalf("demo_echo: %s", resultText(res))
		}
	})

	t.Run("CountProgress", func(t *testing.T) {
		waitProjected(t, cs, "demo_count")
		p := &mcp.CallToolParams{Name: "demo_count", Arguments: map[string]any{"to": 4, "interval_ms": 100}}
		p.SetProgressToken("count-1")
		res := callResult(t, cs, p)
		if res.IsError || structuredOf(t, res)["counted"] != float64(4) {
			t.Fatalf("demo_count: %s", resultText(res))
		}
		m.mu.Lock()
		var got []float64
		for _, n := range m.progress {
			if n.ProgressToken == "count-1" {
				got = append(got, n.Progress)
			}
		}
		m.mu.Unlock()
		if !slices.Equal(got, []float64{25, 50, 75, 100}) {
			t.Fatalf("progress %v", got)
		}
	})

	t.Run("AskElicitation", func(t *testing.T) {
		waitProjected(t, cs, "demo_ask")
		m.mu.Lock()
		m.answer = map[string]any{"answer": "forty-two"}
		m.mu.Unlock()
		res := callResult(t, cs, &mcp.CallToolParams{Name: "demo_ask", Arguments: map[string]any{"question": "What is the answer?"}})
		if res.IsError || structuredOf(t, res)["answer"] != "forty-two" {
			t.Fatalf("demo_ask: %s", resultText(res))
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		if !slices.Contains(m.elicited, "What is the answer?") {
			t.Fatalf("elicited %v", m.elicited)
		}
	})

	t.Run("AskWithoutElicitation", func(t *testing.T) {
		plain := startAgentMCPWith(t, writeAgentMCPConfig(t, 60), false)
		res := callResult(t, plain.ClientSession, &mcp.CallToolParams{Name: "demo_ask", Arguments: map[string]any{"question": "Anyone?"}})
		taskID, _ := res.Meta["agentgw/xmpp-task-id"].(string)
		if !res.IsError || !strings.Contains(resultText(res), "does not support elicitation") || res.Meta["agentgw/xmpp-state"] != "cancelled" || taskID == "" {
			t.Fatalf("demo_ask without elicitation: %s %v", resultText(res), res.Meta)
		}
	})

	t.Run("ClientCancel", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		p := &mcp.CallToolParams{Name: "demo_count", Arguments: map[string]any{"to": 1000, "interval_ms": 200}}
		p.SetProgressToken("cancel-1")
		done := make(chan error, 1)
		go func() {
			_, err := cs.CallTool(ctx, p)
			done <- err
		}()
		var taskID string
		for taskID == "" {
			select {
			case n := <-m.progressC:
				if n.ProgressToken == "cancel-1" {
					taskID, _ = n.Meta["agentgw/xmpp-task-id"].(string)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("no progress from the long count")
			}
		}
		cancel() // go-sdk sends notifications/cancelled
		<-done
		// The XMPP task ends cancelled: ask the gateway as bob.
		bob := login(t, "bob", harness.RemoteDomain)
		ac := agentclient.New(bob)
		ep := jid.MustParse(demoEndpoint)
		deadline := time.Now().Add(30 * time.Second)
		for {
			st, err := ac.TaskState(context.Background(), ep, taskID)
			if err == nil && st.State == task.StateCancelled {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("task %s after the client's cancel: %+v %v", taskID, st, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	})
}

// The MCP inspector CLI sees the projected tools with their schemas, and
// a tools/call of one returns the agent's result.
func TestMCPAgentsInspector(t *testing.T) {
	bin := inspector(t)
	need(t)
	withTaskEndpoints(t)
	config := writeAgentMCPConfig(t, 60)
	stdio := []string{"--", suite.bin, "mcp", "-config", config}
	r, err := inspect(t, bin, append([]string{"--method", "tools/list"}, stdio...)...)
	if err != nil {
		t.Fatal(err)
	}
	var echo map[string]any
	for _, tl := range r["tools"].([]any) {
		if m := tl.(map[string]any); m["name"] == "demo_echo" {
			echo = m
		}
	}
	in, _ := echo["inputSchema"].(map[string]any)
	props, _ := in["properties"].(map[string]any)
	if echo == nil || props["text"] == nil || echo["outputSchema"] == nil {
		t.Fatalf("tools/list: demo_echo %v in %v", echo, toolNames(r))
	}
	r, err = inspect(t, bin, append([]string{"--method", "tools/call", "--tool-name", "demo_echo", "--tool-args-json", `{"text":"from the inspector"}`}, stdio...)...)
	if err != nil {
		t.Fatal(err)
	}
	if s := structured(t, r); s["text"] != "from the inspector" {
		t.Fatalf("tools/call demo_echo: %v", r)
	}
}

// A new active version of a projected agent sends list_changed, and the
// tools of the new version are called pinned to it. The ledger endpoint
// (exec) is projected for alice, who may see and invoke it.
func TestMCPAgentsNewVersion(t *testing.T) {
	need(t)
	ledger := withTaskEndpoints(t)
	dir := t.TempDir()
	writePasswordFile(t, dir)
	config := filepath.Join(dir, "mcp.toml")
	body := fmt.Sprintf(`
[log]
level = "debug"

[mcp]
agent_poll_seconds = 1

[[mcp.account]]
jid = "alice@%s"
password_file = "account.password"
server = %q

[[mcp.agent]]
jid = %q
tools = ["ledger.append"]
prefix = "ledger"
`, harness.HomeDomain, suite.env.ProsodyC2S, ledgerEndpoint)
	if err := os.WriteFile(config, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	m := startAgentMCP(t, config)
	const name = "ledger_ledger.2eappend"
	tl := waitProjected(t, m.ClientSession, name)
	if !strings.Contains(tl.Description, "Waits delay_ms") {
		t.Fatalf("%s: %q", name, tl.Description)
	}
	res := callResult(t, m.ClientSession, &mcp.CallToolParams{Name: name, Arguments: map[string]any{"key": "v1-call"}})
	if res.IsError || structuredOf(t, res)["key"] != "v1-call" {
		t.Fatalf("%s v1: %s", name, resultText(res))
	}

	// Version 1.0.1, with a new description, becomes active.
	raw, err := os.ReadFile(ledgerManifest)
	if err != nil {
		t.Fatal(err)
	}
	v2 := strings.Replace(strings.Replace(string(raw), `"version": "1.0.0"`, `"version": "1.0.1"`, 1),
		"Waits delay_ms milliseconds", "Version two: waits delay_ms milliseconds", 1)
	file := filepath.Join(dir, "ledger-v2.json")
	if err := os.WriteFile(file, []byte(v2), 0o600); err != nil {
		t.Fatal(err)
	}
	m.mu.Lock()
	before := m.listed
	m.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := agentgw(ctx, "endpoint", "register", "-config", suite.config, "-activate", file); err != nil {
		t.Fatalf("register v2: %v %s", err, out)
	}
	t.Cleanup(func() {
		// The next withTaskEndpoints registers and activates 1.0.0 again.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		agentgw(ctx, "endpoint", "activate", "-config", suite.config, ledgerEndpoint, "1.0.0")
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		m.mu.Lock()
		n := m.listed
		m.mu.Unlock()
		if n > before {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no notifications/tools/list_changed after the new version\n%s", m.stderr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	list, err := m.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var got *mcp.Tool
	for _, tl := range list.Tools {
		if tl.Name == name {
			got = tl
		}
	}
	if got == nil || !strings.HasPrefix(got.Description, "Version two") || got.Meta["agentgw/xmpp"].(map[string]any)["version"] != "1.0.1" {
		t.Fatalf("after the new version: %+v", got)
	}
	res = callResult(t, m.ClientSession, &mcp.CallToolParams{Name: name, Arguments: map[string]any{"key": "v2-call"}})
	if res.IsError || structuredOf(t, res)["key"] != "v2-call" {
		t.Fatalf("%s v2: %s", name, resultText(res))
	}
	if b, _ := os.ReadFile(ledger); !strings.Contains(string(b), "v2-call") {
		t.Fatalf("the ledger has no v2-call line: %s", b)
	}
}

// The full circle: `agentgw serve` hosts `agentgw mcp` as an mcp-runtime
// endpoint, so an XMPP user calls SearchAgents as an XMPP tool.
func TestMCPAgentsFullCircle(t *testing.T) {
	need(t)
	a := newMCPAccount(t, "")
	const circle = "xmppmcp@" + harness.ComponentDomain
	extra := fmt.Sprintf(`
[[endpoint]]
jid = %q
runtime = "mcp"
command = [%q, "mcp", "-config", %q]
# agentgw mcp keeps its configuration, password and database there.
sandbox_write = [%q]

[[policy.invoke]]
principals = ["alice@%s"]
endpoints = [%q]
tools = ["*"]
`, circle, suite.bin, a.config, a.dir, harness.HomeDomain, circle)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := writeConfig(extra); err != nil {
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
		agentgw(ctx, "endpoint", "deactivate", "-config", suite.config, circle)
	})
	if _, err := restartGateway(ctx); err != nil {
		t.Fatalf("restart with the mcp endpoint: %v", err)
	}
	var stdout, stderr string
	var err error
	deadline := time.Now().Add(60 * time.Second)
	for {
		p := startClient(t, "alice", harness.HomeDomain, "-json", "call", circle, "SearchAgents", `{"Text":"weather","Gateway":"`+harness.ComponentDomain+`"}`)
		stdout, stderr, err = p.wait(t, 60*time.Second)
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second) // the endpoint's first import may still be running
	}
	// The completed task's result is SearchAgents' page, as agentgw mcp
	// answered it through the mcp runtime.
	if err != nil || !strings.Contains(stdout, `"kind":"result"`) || !strings.Contains(stdout, `\"Jid\":\"weather@`+harness.ComponentDomain) {
		t.Fatalf("SearchAgents over XMPP: %v\n%s\n%s", err, stdout, stderr)
	}
	t.Logf("agentgw client: %s", stdout)
}

// Without Gateway, the gateways are those of the account's own server
// (Prosody lists the component); the directory pages with opaque cursors
// to the end.
func TestMCPAgentsDefaultGateway(t *testing.T) {
	need(t)
	a := newMCPAccount(t, "")
	url, _, _ := startMCPHTTP(t, a)
	cs := connectHTTP(t, url, mcpFullToken)
	seen := map[string]bool{}
	cursor := ""
	pages := 0
	for {
		args := map[string]any{}
		if cursor != "" {
			args["Cursor"] = cursor
		}
		page := structuredOf(t, callResult(t, cs.ClientSession, &mcp.CallToolParams{Name: "ListAgents", Arguments: args}))
		if page["Success"] != true {
			t.Fatalf("ListAgents: %v", page)
		}
		for _, e := range page["Agents"].([]any) {
			j := e.(map[string]any)["Jid"].(string)
			if seen[j] {
				t.Fatalf("%s listed twice", j)
			}
			seen[j] = true
		}
		pages++
		next, _ := page["NextCursor"].(string)
		if next == "" {
			break
		}
		if strings.Contains(next, "@") || seen[next] {
			t.Fatalf("the cursor %q looks like an RSM item id", next)
		}
		cursor = next
	}
	if len(seen) < numAgents || pages < numAgents/50 || !seen["weather@"+harness.ComponentDomain] {
		t.Fatalf("%d agents in %d pages", len(seen), pages)
	}
	found := structuredOf(t, callResult(t, cs.ClientSession, &mcp.CallToolParams{Name: "SearchAgents", Arguments: map[string]any{"Text": "weather"}}))
	if ag, _ := found["Agents"].([]any); len(ag) != 1 || ag[0].(map[string]any)["Jid"] != "weather@"+harness.ComponentDomain {
		t.Fatalf("SearchAgents without Gateway: %v", found)
	}
	// A send-only token may not list agents.
	send := connectHTTP(t, url, mcpSendToken)
	if _, err := send.CallTool(context.Background(), &mcp.CallToolParams{Name: "ListAgents"}); err == nil || !strings.Contains(err.Error(), "Agents.Search") {
		t.Fatalf("ListAgents with the send-only token: %v", err)
	}
}

// writePasswordFile writes the test password to dir/account.password, the
// password_file of the `agentgw mcp` configurations the tests write.
func writePasswordFile(tb testing.TB, dir string) {
	tb.Helper()
	if err := os.WriteFile(filepath.Join(dir, "account.password"), []byte(password+"\n"), 0o600); err != nil {
		tb.Fatal(err)
	}
}
