package integration

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"agentgw/mcpface"
	"agentgw/mcpface/layer"
)

// Tests of the tasks extension of MCP 2026-07-28
// (io.modelcontextprotocol/tasks) over `agentgw mcp`, on -http and stdio:
// go-sdk's client has no tasks extension, so these speak JSON-RPC
// themselves, as a current client does (per-request _meta, no session).

// extCaller sends one current-revision request and returns its answer.
type extCaller func(method string, params map[string]any, headers map[string]string) (rawAnswer, int)

// currentParams adds the current revision's _meta to params; ext declares
// the tasks extension.
func currentParams(params map[string]any, ext bool) map[string]any {
	out := map[string]any{}
	for k, v := range params {
		out[k] = v
	}
	caps := map[string]any{}
	if ext {
		caps["extensions"] = map[string]any{mcpface.ExtTasks: map[string]any{}}
	}
	out["_meta"] = map[string]any{layer.MetaProtocolVersion: layer.Current, layer.MetaClientCapabilities: caps,
		"io.modelcontextprotocol/clientInfo": map[string]any{"name": "raw-current", "version": "1"}}
	return out
}

// httpCaller posts current-revision requests to url with token, with the
// headers the revision asks for (Mcp-Name: the tool, or the taskId).
func httpCaller(t *testing.T, url, token string) extCaller {
	return func(method string, params map[string]any, headers map[string]string) (rawAnswer, int) {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
		req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", layer.Current)
		req.Header.Set("Mcp-Method", method)
		if n, ok := params["name"].(string); ok {
			req.Header.Set("Mcp-Name", n)
		}
		if n, ok := params["taskId"].(string); ok {
			req.Header.Set("Mcp-Name", n)
		}
		for k, v := range headers {
			req.Header.Set(k, v)
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
		return a, resp.StatusCode
	}
}

// stdioCaller runs `agentgw mcp` over stdio with no initialize: a
// current client's first request is server/discover.
func stdioCaller(t *testing.T, config string) extCaller {
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
	waitMCPLog(t, r.stderr, "xmpp stream up", 1)
	return func(method string, params map[string]any, _ map[string]string) (rawAnswer, int) {
		t.Helper()
		return r.answer(r.send(method, params), method), 200
	}
}

// extTask is a Task of the extension.
type extTask struct {
	ResultType    string                     `json:"resultType"`
	TaskID        string                     `json:"taskId"`
	Status        string                     `json:"status"`
	StatusMessage string                     `json:"statusMessage"`
	TTLMs         int64                      `json:"ttlMs"`
	InputRequests map[string]json.RawMessage `json:"inputRequests"`
	Result        *mcpTaskResult             `json:"result"`
	Meta          map[string]any             `json:"_meta"`
}

// runExtTasks drives the extension through call: discovery, a task with
// progress, input through tasks/update, cancel, and the refusals.
func runExtTasks(t *testing.T, call extCaller) {
	t.Helper()
	ok := func(method string, params map[string]any) json.RawMessage {
		t.Helper()
		a, code := call(method, currentParams(params, true), nil)
		if a.Error != nil {
			t.Fatalf("%s: %d %d %s", method, code, a.Error.Code, a.Error.Message)
		}
		return a.Result
	}
	disc := ok("server/discover", nil)
	if !strings.Contains(string(disc), `"extensions":{"`+mcpface.ExtTasks+`":{}}`) || !strings.Contains(string(disc), layer.Current) {
		t.Fatalf("server/discover: %s", disc)
	}
	start := func(tool string, args map[string]any) string {
		t.Helper()
		tk := decode[extTask](t, ok("tools/call", map[string]any{"name": "CallAgentTool",
			"arguments": map[string]any{"Jid": demoEndpoint, "Tool": tool, "Arguments": args}}))
		if tk.ResultType != "task" || tk.TaskID == "" || tk.TTLMs <= 0 {
			t.Fatalf("CallAgentTool %s: %+v", tool, tk)
		}
		return tk.TaskID
	}
	get := func(id string) extTask {
		t.Helper()
		tk := decode[extTask](t, ok("tasks/get", map[string]any{"taskId": id}))
		if tk.ResultType != "complete" || tk.TaskID != id {
			t.Fatalf("tasks/get: %+v", tk)
		}
		return tk
	}
	until := func(id string, done func(extTask) bool) extTask {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			tk := get(id)
			if done(tk) {
				return tk
			}
			if time.Now().After(deadline) {
				t.Fatalf("task %s: last %+v", id, tk)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	// Progress, then the result.
	id := start("count", map[string]any{"to": 4, "interval_ms": 400})
	progressed := until(id, func(tk extTask) bool { return tk.Meta["agentgw/progress"] != nil || tk.Status == "completed" })
	if progressed.Meta["agentgw/progress"] == nil {
		t.Errorf("no progress seen before the end: %+v", progressed)
	}
	done := until(id, func(tk extTask) bool { return tk.Status == "completed" })
	if done.Result == nil || done.Result.IsError || done.Result.StructuredContent["counted"] != float64(4) {
		t.Fatalf("count: %+v", done)
	}

	// Input through tasks/update (the ProtoXEP's provide-input).
	id = start("ask", map[string]any{"question": "Which colour, at 2026-07-28?"})
	asked := until(id, func(tk extTask) bool { return tk.Status == "input_required" })
	if len(asked.InputRequests) != 1 || asked.StatusMessage != "Which colour, at 2026-07-28?" {
		t.Fatalf("input_required: %+v", asked)
	}
	var key string
	for k, q := range asked.InputRequests {
		key = k
		if !strings.Contains(string(q), `"method":"elicitation/create"`) || !strings.Contains(string(q), "Which colour") {
			t.Fatalf("input request %s", q)
		}
	}
	ack := ok("tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{
		"never-issued": map[string]any{"action": "accept", "content": map[string]any{"answer": "red"}},
		key:            map[string]any{"action": "accept", "content": map[string]any{"answer": "green"}}}})
	if !strings.Contains(string(ack), `"resultType":"complete"`) {
		t.Fatalf("tasks/update: %s", ack)
	}
	done = until(id, func(tk extTask) bool { return tk.Status == "completed" })
	if done.Result == nil || done.Result.StructuredContent["answer"] != "green" {
		t.Fatalf("ask: %+v", done)
	}

	// Cancel.
	id = start("count", map[string]any{"to": 100, "interval_ms": 500})
	until(id, func(tk extTask) bool { return tk.Meta["agentgw/progress"] != nil })
	ok("tasks/cancel", map[string]any{"taskId": id})
	until(id, func(tk extTask) bool { return tk.Status == "cancelled" })

	// A client that does not declare the extension: a plain call, and
	// tasks/* are refused with -32021.
	a, _ := call("tools/call", currentParams(map[string]any{"name": "CallAgentTool",
		"arguments": map[string]any{"Jid": demoEndpoint, "Tool": "echo", "Arguments": map[string]any{"text": "plain"}}}, false), nil)
	if a.Error != nil || !strings.Contains(string(a.Result), `"text":"plain"`) || strings.Contains(string(a.Result), `"resultType":"task"`) {
		t.Fatalf("plain call: %+v %s", a.Error, a.Result)
	}
	if a, _ := call("tasks/get", currentParams(map[string]any{"taskId": id}, false), nil); a.Error == nil || a.Error.Code != -32021 {
		t.Fatalf("tasks/get without the extension: %+v", a)
	}
	if a, _ := call("tasks/get", currentParams(map[string]any{"taskId": "mcptask-nonexistent"}, true), nil); a.Error == nil || a.Error.Code != -32602 {
		t.Fatalf("tasks/get of an unknown task: %+v", a)
	}
}

// TestMCPTasksExtension: the extension on `agentgw mcp -http` and stdio;
// a handle is its token's: another token with Agents.Call gets the
// unknown-handle answer, and a Mcp-Name that is not the taskId is a
// HeaderMismatch.
func TestMCPTasksExtension(t *testing.T) {
	need(t)
	withTaskEndpoints(t)
	a := newMCPAccount(t, "")
	const otherToken = "integration-other-token-0123456789"
	if err := os.WriteFile(filepath.Join(a.dir, "other.token"), []byte(otherToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(a.config, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("\n[[mcp.token]]\nfile = \"other.token\"\naccount = \"" + a.jid + "\"\nscopes = [\"*\"]\n")
	f.Close()

	t.Run("http", func(t *testing.T) {
		url, _, _ := startMCPHTTP(t, a)
		call := httpCaller(t, url, mcpFullToken)
		runExtTasks(t, call)
		tk := decode[extTask](t, func() json.RawMessage {
			a, _ := call("tools/call", currentParams(map[string]any{"name": "CallAgentTool",
				"arguments": map[string]any{"Jid": demoEndpoint, "Tool": "echo", "Arguments": map[string]any{"text": "mine"}}}, true), nil)
			if a.Error != nil {
				t.Fatalf("%+v", a.Error)
			}
			return a.Result
		}())
		other := httpCaller(t, url, otherToken)
		theirs, _ := other("tasks/get", currentParams(map[string]any{"taskId": tk.TaskID}, true), nil)
		unknown, _ := other("tasks/get", currentParams(map[string]any{"taskId": "mcptask-nonexistent"}, true), nil)
		if theirs.Error == nil || unknown.Error == nil || theirs.Error.Code != unknown.Error.Code ||
			strings.ReplaceAll(theirs.Error.Message, tk.TaskID, "X") != strings.ReplaceAll(unknown.Error.Message, "mcptask-nonexistent", "X") {
			t.Fatalf("another token's tasks/get %+v, an unknown one %+v", theirs.Error, unknown.Error)
		}
		if a, _ := other("tasks/cancel", currentParams(map[string]any{"taskId": tk.TaskID}, true), nil); a.Error == nil {
			t.Fatal("another token cancelled the task")
		}
		if a, code := call("tasks/get", currentParams(map[string]any{"taskId": tk.TaskID}, true), map[string]string{"Mcp-Name": "another"}); code != 400 || a.Error == nil || a.Error.Code != layer.CodeHeaderMismatch {
			t.Fatalf("a Mcp-Name that is not the taskId: %d %+v", code, a.Error)
		}
	})
	t.Run("stdio", func(t *testing.T) {
		runExtTasks(t, stdioCaller(t, a.config))
	})
}

// TestMCPTasksExtensionRestart: an extension task waiting for input
// outlives `agentgw mcp -http`: after a restart, tasks/get shows the
// question again and tasks/update completes the same task.
func TestMCPTasksExtensionRestart(t *testing.T) {
	need(t)
	withTaskEndpoints(t)
	extTaskRestart(t, newMCPAccount(t, ""), nil)
}

// extTaskRestart is TestMCPTasksExtensionRestart for account a: the
// restarted `agentgw mcp` runs on the configuration of again(a), or of a
// itself when again is nil.
func extTaskRestart(t *testing.T, a *mcpAccount, again func(*mcpAccount) *mcpAccount) {
	t.Helper()
	url, _, stop := startMCPHTTP(t, a)
	call := httpCaller(t, url, mcpFullToken)
	created, _ := call("tools/call", currentParams(map[string]any{"name": "CallAgentTool",
		"arguments": map[string]any{"Jid": demoEndpoint, "Tool": "ask", "Arguments": map[string]any{"question": "Still there after a restart?"}}}, true), nil)
	if created.Error != nil {
		t.Fatalf("%+v", created.Error)
	}
	id := decode[extTask](t, created.Result).TaskID
	waitInput := func(call extCaller) extTask {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			a, _ := call("tasks/get", currentParams(map[string]any{"taskId": id}, true), nil)
			if a.Error != nil {
				t.Fatalf("tasks/get: %+v", a.Error)
			}
			tk := decode[extTask](t, a.Result)
			if tk.Status == "input_required" && len(tk.InputRequests) == 1 {
				return tk
			}
			if time.Now().After(deadline) {
				t.Fatalf("never input_required: %+v", tk)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	waitInput(call)
	stop()
	if again != nil {
		a = again(a)
	}
	url, _, _ = startMCPHTTP(t, a)
	call = httpCaller(t, url, mcpFullToken)
	tk := waitInput(call)
	var key string
	for k := range tk.InputRequests {
		key = k
	}
	if a, _ := call("tasks/update", currentParams(map[string]any{"taskId": id, "inputResponses": map[string]any{
		key: map[string]any{"action": "accept", "content": map[string]any{"answer": "yes"}}}}, true), nil); a.Error != nil {
		t.Fatalf("tasks/update: %+v", a.Error)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		a, _ := call("tasks/get", currentParams(map[string]any{"taskId": id}, true), nil)
		tk := decode[extTask](t, a.Result)
		if tk.Status == "completed" {
			if tk.Result == nil || tk.Result.StructuredContent["answer"] != "yes" {
				t.Fatalf("after the restart: %+v", tk)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("never completed: %+v", tk)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
