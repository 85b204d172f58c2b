package integration

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// Tests of the MCP Tasks layer of `agentgw mcp` (docs/mcp.md, "MCP
// Tasks"). go-sdk's client has no MCP Tasks, so these speak JSON-RPC over
// the process's stdio themselves.

// rawMCP is a JSON-RPC session with `agentgw mcp` over stdio.
type rawMCP struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *syncBuf

	mu      sync.Mutex
	next    int
	waiting map[int]chan rawAnswer
}

type rawAnswer struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// startRawMCP runs `agentgw mcp` and initializes a 2025-11-25 session.
func startRawMCP(t *testing.T, config string) (*rawMCP, json.RawMessage) {
	t.Helper()
	r := &rawMCP{t: t, stderr: &syncBuf{}, waiting: map[int]chan rawAnswer{}}
	r.cmd = exec.Command(suite.bin, "mcp", "-config", config)
	r.cmd.Stderr = r.stderr
	var err error
	if r.stdin, err = r.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := r.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.kill)
	go r.read(out)
	init := r.call("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "raw", "version": "1"}})
	fmt.Fprintln(r.stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	waitMCPLog(t, r.stderr, "xmpp stream up", 1)
	return r, init
}

func (r *rawMCP) kill() {
	if r.cmd.Process != nil {
		r.cmd.Process.Kill()
		r.cmd.Wait()
	}
}

func (r *rawMCP) read(out io.Reader) {
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var msg struct {
			ID *int `json:"id"`
			rawAnswer
		}
		if json.Unmarshal(sc.Bytes(), &msg) != nil || msg.ID == nil {
			continue
		}
		r.mu.Lock()
		ch := r.waiting[*msg.ID]
		r.mu.Unlock()
		if ch != nil {
			ch <- msg.rawAnswer
		}
	}
}

// send sends a request and returns the channel of its answer.
func (r *rawMCP) send(method string, params any) <-chan rawAnswer {
	r.mu.Lock()
	r.next++
	id := r.next
	ch := make(chan rawAnswer, 1)
	r.waiting[id] = ch
	r.mu.Unlock()
	raw, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	fmt.Fprintf(r.stdin, "%s\n", raw)
	return ch
}

func (r *rawMCP) answer(ch <-chan rawAnswer, method string) rawAnswer {
	r.t.Helper()
	select {
	case a := <-ch:
		return a
	case <-time.After(60 * time.Second):
		r.t.Fatalf("%s: no answer\n%s", method, r.stderr)
		return rawAnswer{}
	}
}

// call sends a request and returns its result; an error answer fails.
func (r *rawMCP) call(method string, params any) json.RawMessage {
	r.t.Helper()
	a := r.answer(r.send(method, params), method)
	if a.Error != nil {
		r.t.Fatalf("%s: error %d %s", method, a.Error.Code, a.Error.Message)
	}
	return a.Result
}

// mcpTask is the MCP Task object.
type mcpTask struct {
	TaskID string         `json:"taskId"`
	Status string         `json:"status"`
	TTL    int64          `json:"ttl"`
	Meta   map[string]any `json:"_meta"`
}

func decode[T any](t *testing.T, raw json.RawMessage) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return v
}

func TestMCPTasks(t *testing.T) {
	need(t)
	withTaskEndpoints(t)
	config := writeAgentMCPConfig(t, 60)
	r, init := startRawMCP(t, config)
	if !strings.Contains(string(init), `"tasks":{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}`) {
		t.Fatalf("initialize: no capabilities.tasks: %s", init)
	}
	// tools/list gives the agent tools an execution object.
	var listed struct {
		Tools []struct {
			Name      string          `json:"name"`
			Execution json.RawMessage `json:"execution"`
		} `json:"tools"`
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		listed.Tools = nil
		json.Unmarshal(r.call("tools/list", map[string]any{}), &listed)
		found := false
		for _, tl := range listed.Tools {
			found = found || tl.Name == "demo_count" && strings.Contains(string(tl.Execution), "taskSupport")
		}
		if found {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no demo_count with execution: %+v", listed)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// A task-augmented call: CreateTaskResult after the XMPP acceptance,
	// polled with tasks/get, read with tasks/result.
	created := decode[struct {
		Task mcpTask        `json:"task"`
		Meta map[string]any `json:"_meta"`
	}](t, r.call("tools/call", map[string]any{"name": "demo_count", "arguments": map[string]any{"to": 5, "interval_ms": 200}, "task": map[string]any{"ttl": 600000}}))
	id := created.Task.TaskID
	x, _ := created.Meta["agentgw/xmpp"].(map[string]any)
	if id == "" || created.Task.Status != "working" || x["taskId"] == nil || x["requestId"] == nil || x["taskId"] == id || created.Task.TTL <= 0 || created.Task.TTL > 600000 {
		t.Fatalf("CreateTaskResult: %+v", created)
	}
	got := decode[mcpTask](t, r.call("tasks/get", map[string]any{"taskId": id}))
	if got.TaskID != id || (got.Status != "working" && got.Status != "completed") {
		t.Fatalf("tasks/get: %+v", got)
	}
	res := decode[struct {
		StructuredContent map[string]any `json:"structuredContent"`
		Meta              map[string]any `json:"_meta"`
	}](t, r.call("tasks/result", map[string]any{"taskId": id}))
	if res.StructuredContent["counted"] != float64(5) || res.Meta["io.modelcontextprotocol/related-task"] == nil {
		t.Fatalf("tasks/result: %+v", res)
	}
	if got := decode[mcpTask](t, r.call("tasks/get", map[string]any{"taskId": id})); got.Status != "completed" {
		t.Fatalf("tasks/get after the result: %+v", got)
	}

	// Admission errors stay errors of the call: no task.
	bad := decode[struct {
		IsError bool           `json:"isError"`
		Task    map[string]any `json:"task"`
	}](t, r.call("tools/call", map[string]any{"name": "demo_count", "arguments": map[string]any{"to": "x"}, "task": map[string]any{}}))
	if !bad.IsError || bad.Task != nil {
		t.Fatalf("bad arguments as a task: %+v", bad)
	}
	// Unknown ids are -32602.
	if a := r.answer(r.send("tasks/get", map[string]any{"taskId": "mcptask-nosuch"}), "tasks/get"); a.Error == nil || a.Error.Code != -32602 {
		t.Fatalf("unknown task: %+v", a)
	}

	// tasks/cancel answers cancelled once XMPP settled cancelled.
	long := decode[struct {
		Task mcpTask `json:"task"`
	}](t, r.call("tools/call", map[string]any{"name": "demo_count", "arguments": map[string]any{"to": 1000, "interval_ms": 100}, "task": map[string]any{}}))
	cancelled := decode[mcpTask](t, r.call("tasks/cancel", map[string]any{"taskId": long.Task.TaskID}))
	if cancelled.Status != "cancelled" || cancelled.Meta["agentgw/semantic-loss"] == nil {
		t.Fatalf("tasks/cancel: %+v", cancelled)
	}
	if a := r.answer(r.send("tasks/cancel", map[string]any{"taskId": long.Task.TaskID}), "tasks/cancel"); a.Error == nil || a.Error.Code != -32602 {
		t.Fatalf("cancel of a terminal task: %+v", a)
	}

	// tasks/list: the account's tasks.
	list := decode[struct {
		Tasks []mcpTask `json:"tasks"`
	}](t, r.call("tasks/list", map[string]any{}))
	ids := map[string]string{}
	for _, tk := range list.Tasks {
		ids[tk.TaskID] = tk.Status
	}
	if ids[id] != "completed" || ids[long.Task.TaskID] != "cancelled" {
		t.Fatalf("tasks/list: %+v", list)
	}

	// A restart in the middle of a task: tasks/result still returns it.
	mid := decode[struct {
		Task mcpTask `json:"task"`
	}](t, r.call("tools/call", map[string]any{"name": "demo_count", "arguments": map[string]any{"to": 10, "interval_ms": 300}, "task": map[string]any{}}))
	r.kill()
	r2, _ := startRawMCP(t, config)
	after := decode[struct {
		StructuredContent map[string]any `json:"structuredContent"`
	}](t, r2.call("tasks/result", map[string]any{"taskId": mid.Task.TaskID}))
	if after.StructuredContent["counted"] != float64(10) {
		t.Fatalf("tasks/result after a restart: %+v", after)
	}
}

// postMCP posts one JSON-RPC request to url with token and returns the
// result (or the error) of its answer, JSON or server-sent events.
func postMCP(t *testing.T, url, token, session string, id int, method string, params any) (rawAnswer, string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		for _, l := range strings.Split(string(raw), "\n") {
			if d, ok := strings.CutPrefix(l, "data: "); ok && strings.Contains(d, `"id"`) {
				raw = []byte(d)
			}
		}
	}
	var a rawAnswer
	if err := json.Unmarshal(raw, &a); err != nil {
		t.Fatalf("%s: %d %s: %v", method, resp.StatusCode, raw, err)
	}
	return a, resp.Header.Get("Mcp-Session-Id")
}

// Over Streamable HTTP the same layer serves the token's own tasks.
func TestMCPTasksHTTP(t *testing.T) {
	need(t)
	withTaskEndpoints(t)
	a := newMCPAccount(t, "")
	url, _, _ := startMCPHTTP(t, a)
	init, session := postMCP(t, url, mcpFullToken, "", 1, "initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "raw-http", "version": "1"}})
	if init.Error != nil || !strings.Contains(string(init.Result), `"tasks":{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}`) {
		t.Fatalf("initialize: %+v %s", init.Error, init.Result)
	}
	created, _ := postMCP(t, url, mcpFullToken, session, 2, "tools/call", map[string]any{"name": "CallAgentTool",
		"arguments": map[string]any{"Jid": demoEndpoint, "Tool": "echo", "Arguments": map[string]any{"text": "a task over HTTP"}}, "task": map[string]any{}})
	if created.Error != nil {
		t.Fatalf("task-augmented CallAgentTool: %+v", created.Error)
	}
	id := decode[struct {
		Task mcpTask `json:"task"`
	}](t, created.Result).Task.TaskID
	res, _ := postMCP(t, url, mcpFullToken, session, 3, "tasks/result", map[string]any{"taskId": id})
	if res.Error != nil || !strings.Contains(string(res.Result), `"text":"a task over HTTP"`) {
		t.Fatalf("tasks/result: %+v %s", res.Error, res.Result)
	}
	list, _ := postMCP(t, url, mcpFullToken, session, 4, "tasks/list", map[string]any{})
	if list.Error != nil || !strings.Contains(string(list.Result), id) {
		t.Fatalf("tasks/list: %+v %s", list.Error, list.Result)
	}
	// Another token sees none of them; without the Agents.Call scope it
	// may not even ask.
	other, _ := postMCP(t, url, mcpSendToken, "", 5, "tasks/get", map[string]any{"taskId": id})
	if other.Error == nil || !strings.Contains(other.Error.Message, "OAUTH.Scope.MCP.XMPP.Tools.Agents.Call") {
		t.Fatalf("tasks/get with the send-only token: %+v", other)
	}
}
