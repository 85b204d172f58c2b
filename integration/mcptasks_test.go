package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"slices"
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
	// requests are the server's requests (elicitation/create), notes its
	// notifications.
	requests chan rawRequest
	notes    chan rawRequest
}

// rawRequest is a request or notification from the server.
type rawRequest struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

type rawAnswer struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// startRawMCP runs `agentgw mcp` and initializes a 2025-11-25 session
// with no client capabilities.
func startRawMCP(t *testing.T, config string) (*rawMCP, json.RawMessage) {
	t.Helper()
	return startRawMCPWith(t, config, map[string]any{})
}

// startRawMCPWith initializes the session with the client capabilities
// caps.
func startRawMCPWith(t *testing.T, config string, caps map[string]any) (*rawMCP, json.RawMessage) {
	t.Helper()
	r := &rawMCP{t: t, stderr: &syncBuf{}, waiting: map[int]chan rawAnswer{}, requests: make(chan rawRequest, 16), notes: make(chan rawRequest, 256)}
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
	init := r.call("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": caps,
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
			rawRequest
			rawAnswer
		}
		if json.Unmarshal(sc.Bytes(), &msg) != nil {
			continue
		}
		if msg.Method != "" {
			to := r.notes
			if len(msg.ID) > 0 {
				to = r.requests
			}
			select {
			case to <- msg.rawRequest:
			default:
			}
			continue
		}
		var id int
		if json.Unmarshal(msg.ID, &id) != nil {
			continue
		}
		r.mu.Lock()
		ch := r.waiting[id]
		r.mu.Unlock()
		if ch != nil {
			ch <- msg.rawAnswer
		}
	}
}

// send sends a request and returns the channel of its answer.
func (r *rawMCP) send(method string, params any) <-chan rawAnswer {
	_, ch := r.sendID(method, params)
	return ch
}

// sendID sends a request and returns its id and the channel of its
// answer.
func (r *rawMCP) sendID(method string, params any) (int, <-chan rawAnswer) {
	r.mu.Lock()
	r.next++
	id := r.next
	ch := make(chan rawAnswer, 1)
	r.waiting[id] = ch
	r.mu.Unlock()
	raw, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	fmt.Fprintf(r.stdin, "%s\n", raw)
	return id, ch
}

// request waits for the server's next request.
func (r *rawMCP) request() rawRequest {
	r.t.Helper()
	select {
	case q := <-r.requests:
		return q
	case <-time.After(60 * time.Second):
		r.t.Fatalf("no request from the server\n%s", r.stderr)
		return rawRequest{}
	}
}

// statuses collects the statuses of notifications/tasks/status for task
// id until one is terminal.
func (r *rawMCP) statuses(id string) []string {
	r.t.Helper()
	var got []string
	for {
		select {
		case n := <-r.notes:
			if n.Method != "notifications/tasks/status" {
				continue
			}
			tk := decode[mcpTask](r.t, n.Params)
			if tk.TaskID != id {
				continue
			}
			if tk.Meta["io.modelcontextprotocol/related-task"] != nil {
				r.t.Fatalf("a status notification with the related-task metadata: %s", n.Params)
			}
			got = append(got, tk.Status)
			if tk.Status == "completed" || tk.Status == "failed" || tk.Status == "cancelled" {
				return got
			}
		case <-time.After(30 * time.Second):
			r.t.Fatalf("task %s: statuses %v, and no terminal one", id, got)
		}
	}
}

// waitNote waits for a notification from the server that match
// accepts, skipping others.
func (r *rawMCP) waitNote(match func(rawRequest) bool) {
	r.t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case n := <-r.notes:
			if match(n) {
				return
			}
		case <-deadline:
			r.t.Fatalf("no such notification from the server\n%s", r.stderr)
		}
	}
}

// waitWithdrawn waits for the notifications/cancelled of the server's
// request id.
func (r *rawMCP) waitWithdrawn(id string) {
	r.t.Helper()
	r.waitNote(func(n rawRequest) bool {
		var p struct {
			RequestID string `json:"requestId"`
		}
		json.Unmarshal(n.Params, &p)
		return n.Method == "notifications/cancelled" && p.RequestID == id
	})
}

// reply answers the server's request id with result.
func (r *rawMCP) reply(id json.RawMessage, result any) {
	raw, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
	fmt.Fprintf(r.stdin, "%s\n", raw)
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

// waitTool waits until tools/list has the projected tool name, with an
// execution object.
func (r *rawMCP) waitTool(name string) {
	r.t.Helper()
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
		for _, tl := range listed.Tools {
			if tl.Name == name && strings.Contains(string(tl.Execution), "taskSupport") {
				return
			}
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("no %s with execution: %+v", name, listed)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// newTask makes a task-augmented call of tool and returns the task ID.
func (r *rawMCP) newTask(tool string, args any) string {
	r.t.Helper()
	created := decode[struct {
		Task mcpTask `json:"task"`
	}](r.t, r.call("tools/call", map[string]any{"name": tool, "arguments": args, "task": map[string]any{}}))
	if created.Task.TaskID == "" {
		r.t.Fatalf("%s: no task", tool)
	}
	return created.Task.TaskID
}

// mcpTaskResult is what the tests read of a tasks/result answer.
type mcpTaskResult struct {
	IsError           bool           `json:"isError"`
	Content           []mcpText      `json:"content"`
	StructuredContent map[string]any `json:"structuredContent"`
	Meta              map[string]any `json:"_meta"`
}

type mcpText struct {
	Text string `json:"text"`
}

func (res mcpTaskResult) text() string {
	var b strings.Builder
	for _, c := range res.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

// relatedTask is the related-task metadata's task ID in a _meta object.
func relatedTask(meta map[string]any) any {
	rt, _ := meta["io.modelcontextprotocol/related-task"].(map[string]any)
	return rt["taskId"]
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
	r.waitTool("demo_count")

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

	// Input of a task for a client without elicitation: the task is
	// cancelled, and its result says why.
	r.waitTool("demo_ask")
	ask := r.newTask("demo_ask", map[string]any{"question": "Anyone there?"})
	noInput := decode[mcpTaskResult](t, r.call("tasks/result", map[string]any{"taskId": ask}))
	if !noInput.IsError || !strings.Contains(noInput.text(), "does not support elicitation") || noInput.Meta["agentgw/xmpp-state"] != "cancelled" {
		t.Fatalf("tasks/result of an input task without elicitation: %+v", noInput)
	}
	if got := decode[mcpTask](t, r.call("tasks/get", map[string]any{"taskId": ask})); got.Status != "cancelled" {
		t.Fatalf("tasks/get of the input task without elicitation: %+v", got)
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

// Input in an MCP task over stdio (docs/mcp.md, "Input in an MCP
// task"): the XMPP task's input_required shows in tasks/get with the
// question; tasks/result elicits with the related task, and the answer
// completes the task; a decline cancels it.
func TestMCPTasksInput(t *testing.T) {
	need(t)
	withTaskEndpoints(t)
	config := writeAgentMCPConfig(t, 60)
	elicits := map[string]any{"elicitation": map[string]any{}}
	r, _ := startRawMCPWith(t, config, elicits)
	r.waitTool("demo_ask")

	// Accept, with tasks/result called once the task is input_required.
	id := r.newTask("demo_ask", map[string]any{"question": "Which colour?"})
	var got struct {
		mcpTask
		StatusMessage string `json:"statusMessage"`
	}
	eventually(t, "the task input_required", func() bool {
		got = decode[struct {
			mcpTask
			StatusMessage string `json:"statusMessage"`
		}](t, r.call("tasks/get", map[string]any{"taskId": id}))
		return got.Status == "input_required"
	})
	if got.StatusMessage != "Which colour?" {
		t.Fatalf("tasks/get of an input_required task: %+v", got)
	}
	result := r.send("tasks/result", map[string]any{"taskId": id})
	q := r.request()
	p := decode[struct {
		Message         string         `json:"message"`
		RequestedSchema map[string]any `json:"requestedSchema"`
		Meta            map[string]any `json:"_meta"`
	}](t, q.Params)
	if q.Method != "elicitation/create" || p.Message != "Which colour?" || relatedTask(p.Meta) != id || p.RequestedSchema["type"] != "object" {
		t.Fatalf("the elicitation of task %s: %s %s", id, q.Method, q.Params)
	}
	r.reply(q.ID, map[string]any{"action": "accept", "content": map[string]any{"answer": "blue"}})
	res := decode[mcpTaskResult](t, r.answer(result, "tasks/result").Result)
	if res.IsError || res.StructuredContent["answer"] != "blue" || relatedTask(res.Meta) != id {
		t.Fatalf("tasks/result after the answer: %+v", res)
	}
	if got := decode[mcpTask](t, r.call("tasks/get", map[string]any{"taskId": id})); got.Status != "completed" {
		t.Fatalf("tasks/get after the answer: %+v", got)
	}
	// notifications/tasks/status told each change of the MCP status.
	if got := r.statuses(id); !slices.Equal(got, []string{"input_required", "working", "completed"}) {
		t.Fatalf("status notifications of an answered task: %v", got)
	}

	// Decline, with tasks/result already blocked when the input is asked.
	id = r.newTask("demo_ask", map[string]any{"question": "Shall I go on?"})
	result = r.send("tasks/result", map[string]any{"taskId": id})
	q = r.request()
	if q.Method != "elicitation/create" || relatedTask(decode[struct {
		Meta map[string]any `json:"_meta"`
	}](t, q.Params).Meta) != id {
		t.Fatalf("the elicitation of task %s: %s %s", id, q.Method, q.Params)
	}
	r.reply(q.ID, map[string]any{"action": "decline"})
	res = decode[mcpTaskResult](t, r.answer(result, "tasks/result").Result)
	if !res.IsError || !strings.Contains(res.text(), "the user chose decline") || res.Meta["agentgw/xmpp-state"] != "cancelled" || relatedTask(res.Meta) != id {
		t.Fatalf("tasks/result after a decline: %+v", res)
	}
	if got := decode[mcpTask](t, r.call("tasks/get", map[string]any{"taskId": id})); got.Status != "cancelled" {
		t.Fatalf("tasks/get after a decline: %+v", got)
	}
	if got := r.statuses(id); got[0] != "input_required" || got[len(got)-1] != "cancelled" {
		t.Fatalf("status notifications of a declined task: %v", got)
	}

	// tasks/cancel while the elicitation waits for the client: the
	// follower sees the task settle, withdraws the elicitation
	// (notifications/cancelled with its id) and tasks/result answers.
	id = r.newTask("demo_ask", map[string]any{"question": "Still there?"})
	result = r.send("tasks/result", map[string]any{"taskId": id})
	q = r.request()
	if q.Method != "elicitation/create" {
		t.Fatalf("the elicitation of task %s: %s %s", id, q.Method, q.Params)
	}
	cancelled := decode[mcpTask](t, r.call("tasks/cancel", map[string]any{"taskId": id}))
	if cancelled.Status != "cancelled" {
		t.Fatalf("tasks/cancel while the elicitation waits: %+v", cancelled)
	}
	res = decode[mcpTaskResult](t, r.answer(result, "tasks/result").Result)
	if !res.IsError || relatedTask(res.Meta) != id {
		t.Fatalf("tasks/result of a task cancelled while eliciting: %+v", res)
	}
	var elicitID string
	json.Unmarshal(q.ID, &elicitID)
	r.waitWithdrawn(elicitID)

	// The client cancels its tasks/result (notifications/cancelled): the
	// elicitation is withdrawn, its late answer is not taken, and the
	// next tasks/result asks again.
	id = r.newTask("demo_ask", map[string]any{"question": "Once more?"})
	rid, _ := r.sendID("tasks/result", map[string]any{"taskId": id})
	q = r.request()
	fmt.Fprintf(r.stdin, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":%d}}\n", rid)
	json.Unmarshal(q.ID, &elicitID)
	r.waitWithdrawn(elicitID)
	result = r.send("tasks/result", map[string]any{"taskId": id})
	q2 := r.request()
	if q2.Method != "elicitation/create" || string(q2.ID) == string(q.ID) {
		t.Fatalf("the elicitation after a cancelled tasks/result: %s %s %s", q2.Method, q2.ID, q2.Params)
	}
	r.reply(q.ID, map[string]any{"action": "accept", "content": map[string]any{"answer": "stale"}})
	r.reply(q2.ID, map[string]any{"action": "accept", "content": map[string]any{"answer": "yellow"}})
	res = decode[mcpTaskResult](t, r.answer(result, "tasks/result").Result)
	if res.IsError || res.StructuredContent["answer"] != "yellow" {
		t.Fatalf("tasks/result after a cancelled tasks/result: %+v", res)
	}

	// The client goes away (EOF) in the middle of an elicitation: the
	// process ends; after a restart the task is still input_required with
	// its question, and tasks/result asks again.
	id = r.newTask("demo_ask", map[string]any{"question": "After a restart?"})
	r.send("tasks/result", map[string]any{"taskId": id})
	r.request()
	r.stdin.Close()
	exited := make(chan struct{})
	go func() { r.cmd.Wait(); close(exited) }()
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("agentgw mcp did not exit at EOF during an elicitation\n%s", r.stderr)
	}
	r2, _ := startRawMCPWith(t, config, elicits)
	eventually(t, "the task input_required after a restart", func() bool {
		got = decode[struct {
			mcpTask
			StatusMessage string `json:"statusMessage"`
		}](t, r2.call("tasks/get", map[string]any{"taskId": id}))
		return got.Status == "input_required" && got.StatusMessage == "After a restart?"
	})
	result = r2.send("tasks/result", map[string]any{"taskId": id})
	q = r2.request()
	if q.Method != "elicitation/create" || relatedTask(decode[struct {
		Meta map[string]any `json:"_meta"`
	}](t, q.Params).Meta) != id {
		t.Fatalf("the elicitation after a restart: %s %s", q.Method, q.Params)
	}
	r2.reply(q.ID, map[string]any{"action": "accept", "content": map[string]any{"answer": "again"}})
	res = decode[mcpTaskResult](t, r2.answer(result, "tasks/result").Result)
	if res.IsError || res.StructuredContent["answer"] != "again" {
		t.Fatalf("tasks/result after a restart: %+v", res)
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

// streamMCP posts one JSON-RPC request and returns the data of the
// answer's server-sent events as they come (a JSON answer is one item).
func streamMCP(t *testing.T, url, token, session string, id int, method string, params any) <-chan json.RawMessage {
	t.Helper()
	return streamMCPCtx(t, context.Background(), url, token, session, id, method, params)
}

// streamMCPCtx is streamMCP until ctx ends (the client closes the
// stream).
func streamMCPCtx(t *testing.T, ctx context.Context, url, token, session string, id int, method string, params any) <-chan json.RawMessage {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	resp := postBodyCtx(t, ctx, url, token, session, body)
	ch := make(chan json.RawMessage, 16)
	go func() {
		defer close(ch)
		defer resp.Body.Close()
		if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			raw, _ := io.ReadAll(resp.Body)
			ch <- raw
			return
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				ch <- json.RawMessage(d)
			}
		}
	}()
	return ch
}

// postBody posts a JSON-RPC message as token in session.
func postBody(t *testing.T, url, token, session string, body []byte) *http.Response {
	t.Helper()
	return postBodyCtx(t, context.Background(), url, token, session, body)
}

func postBodyCtx(t *testing.T, ctx context.Context, url, token, session string, body []byte) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", session)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// taskResultEvent is the last event of a tasks/result stream.
type taskResultEvent struct {
	ID     int             `json:"id"`
	Result mcpTaskResult   `json:"result"`
	Error  json.RawMessage `json:"error"`
}

func nextEvent(t *testing.T, ch <-chan json.RawMessage) json.RawMessage {
	t.Helper()
	select {
	case d, ok := <-ch:
		if !ok {
			t.Fatal("the stream ended")
		}
		return d
	case <-time.After(60 * time.Second):
		t.Fatal("no event")
		return nil
	}
}

// Input in an MCP task over Streamable HTTP: tasks/result becomes a
// stream of server-sent events carrying elicitation/create; the answer,
// posted by the token that owns the task, completes it.
func TestMCPTasksInputHTTP(t *testing.T) {
	need(t)
	withTaskEndpoints(t)
	a := newMCPAccount(t, "")
	url, _, _ := startMCPHTTP(t, a)
	init, session := postMCP(t, url, mcpFullToken, "", 1, "initialize", map[string]any{"protocolVersion": "2025-11-25",
		"capabilities": map[string]any{"elicitation": map[string]any{}}, "clientInfo": map[string]any{"name": "raw-http", "version": "1"}})
	if init.Error != nil {
		t.Fatalf("initialize: %+v", init.Error)
	}
	ask := func(id int, question string) string {
		t.Helper()
		created, _ := postMCP(t, url, mcpFullToken, session, id, "tools/call", map[string]any{"name": "CallAgentTool",
			"arguments": map[string]any{"Jid": demoEndpoint, "Tool": "ask", "Arguments": map[string]any{"question": question}}, "task": map[string]any{}})
		if created.Error != nil {
			t.Fatalf("task-augmented CallAgentTool ask: %+v", created.Error)
		}
		return decode[struct {
			Task mcpTask `json:"task"`
		}](t, created.Result).Task.TaskID
	}
	elicitation := func(events <-chan json.RawMessage, task, question string) rawRequest {
		t.Helper()
		q := decode[rawRequest](t, nextEvent(t, events))
		p := decode[struct {
			Message string         `json:"message"`
			Meta    map[string]any `json:"_meta"`
		}](t, q.Params)
		if q.Method != "elicitation/create" || len(q.ID) == 0 || p.Message != question || relatedTask(p.Meta) != task {
			t.Fatalf("the elicitation of task %s: %s %s", task, q.Method, q.Params)
		}
		return q
	}
	answer := func(token string, q rawRequest, result any) int {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": q.ID, "result": result})
		resp := postBody(t, url, token, session, body)
		resp.Body.Close()
		return resp.StatusCode
	}

	id := ask(2, "Which colour, over HTTP?")
	events := streamMCP(t, url, mcpFullToken, session, 3, "tasks/result", map[string]any{"taskId": id})
	q := elicitation(events, id, "Which colour, over HTTP?")
	// Only the token that owns the task may answer.
	if code := answer(mcpSendToken, q, map[string]any{"action": "accept", "content": map[string]any{"answer": "red"}}); code == http.StatusAccepted {
		t.Fatalf("another token's answer: %d", code)
	}
	if code := answer(mcpFullToken, q, map[string]any{"action": "accept", "content": map[string]any{"answer": "green"}}); code != http.StatusAccepted {
		t.Fatalf("the answer: %d", code)
	}
	res := decode[taskResultEvent](t, nextEvent(t, events))
	if res.ID != 3 || res.Error != nil || res.Result.IsError || res.Result.StructuredContent["answer"] != "green" || relatedTask(res.Result.Meta) != id {
		t.Fatalf("tasks/result after the answer: %+v", res)
	}

	// A cancel from the client cancels the task.
	id = ask(4, "Go on, over HTTP?")
	events = streamMCP(t, url, mcpFullToken, session, 5, "tasks/result", map[string]any{"taskId": id})
	q = elicitation(events, id, "Go on, over HTTP?")
	if code := answer(mcpFullToken, q, map[string]any{"action": "cancel"}); code != http.StatusAccepted {
		t.Fatalf("the answer: %d", code)
	}
	res = decode[taskResultEvent](t, nextEvent(t, events))
	if res.ID != 5 || !res.Result.IsError || !strings.Contains(res.Result.text(), "the user chose cancel") || res.Result.Meta["agentgw/xmpp-state"] != "cancelled" {
		t.Fatalf("tasks/result after a cancel: %+v", res)
	}
	got, _ := postMCP(t, url, mcpFullToken, session, 6, "tasks/get", map[string]any{"taskId": id})
	if decode[mcpTask](t, got.Result).Status != "cancelled" {
		t.Fatalf("tasks/get after a cancel: %s", got.Result)
	}

	// The client closes the stream in the middle of the elicitation: the
	// next tasks/result asks again, and the withdrawn request's answer
	// is not taken.
	id = ask(7, "Closed, over HTTP?")
	ctx, closeStream := context.WithCancel(context.Background())
	q = elicitation(streamMCPCtx(t, ctx, url, mcpFullToken, session, 8, "tasks/result", map[string]any{"taskId": id}), id, "Closed, over HTTP?")
	closeStream()
	events = streamMCP(t, url, mcpFullToken, session, 9, "tasks/result", map[string]any{"taskId": id})
	q2 := elicitation(events, id, "Closed, over HTTP?")
	if string(q2.ID) == string(q.ID) {
		t.Fatalf("the same elicitation after the stream closed: %s", q.ID)
	}
	// (go-sdk acknowledges a response it did not wait for with 202 too.)
	answer(mcpFullToken, q, map[string]any{"action": "accept", "content": map[string]any{"answer": "stale"}})
	if code := answer(mcpFullToken, q2, map[string]any{"action": "accept", "content": map[string]any{"answer": "violet"}}); code != http.StatusAccepted {
		t.Fatalf("the answer: %d", code)
	}
	res = decode[taskResultEvent](t, nextEvent(t, events))
	if res.ID != 9 || res.Error != nil || res.Result.IsError || res.Result.StructuredContent["answer"] != "violet" {
		t.Fatalf("tasks/result after the stream closed: %+v", res)
	}
}
