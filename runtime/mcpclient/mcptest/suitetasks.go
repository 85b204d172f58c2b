package mcptest

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"agentgw/internal/pause"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// SuiteTasks is a fixture server on MCP 2026-07-28 with the tools that the
// tasks scenarios of the official conformance suite
// (@modelcontextprotocol/conformance 0.2.0-alpha.12) call, which go-sdk's
// own conformance server lacks: go-sdk v1.8.0's server plus the server
// side of the tasks extension (io.modelcontextprotocol/tasks), written here
// as a layer over the connection, since go-sdk has none. Each tool declares
// its execution.taskSupport; docs/mcp.md, "The fixture tools", lists them.
type SuiteTasks struct {
	srv *sdk.Server
}

// suiteTaskSupport is each tool's execution.taskSupport.
var suiteTaskSupport = map[string]string{
	"greet": "forbidden", "slow_compute": "optional", "failing_job": "required",
	"protocol_error_job": "optional", "confirm_delete": "optional", "multi_input": "optional",
	"test_tool_with_task": "required",
}

// suiteUserState is the requestState of test_tool_with_task's first round.
const suiteUserState = "test_tool_with_task:1"

// NewSuiteTasks returns the fixture.
func NewSuiteTasks() *SuiteTasks {
	caps := &sdk.ServerCapabilities{}
	caps.AddExtension(ExtTasks, nil)
	s := &SuiteTasks{srv: sdk.NewServer(&sdk.Implementation{Name: "mcptest-suite-tasks", Version: "1.0.0"},
		&sdk.ServerOptions{Capabilities: caps})}
	obj := func(props string, required ...string) json.RawMessage {
		req, _ := json.Marshal(required)
		if required == nil {
			req = []byte("[]")
		}
		return raw(`{"type":"object","properties":{` + props + `},"required":` + string(req) + `}`)
	}
	s.srv.AddTool(&sdk.Tool{Name: "greet", Description: "Greets NAME, at once.",
		InputSchema: obj(`"name":{"type":"string"}`, "name")},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var a struct{ Name string }
			_ = json.Unmarshal(req.Params.Arguments, &a)
			return text("Hello, %s!", a.Name), nil
		})
	s.srv.AddTool(&sdk.Tool{Name: "slow_compute", Description: "Computes for the given seconds.",
		InputSchema: obj(`"seconds":{"type":"number","minimum":0},"label":{"type":"string"}`, "seconds")},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var a slowArgs
			_ = json.Unmarshal(req.Params.Arguments, &a)
			select {
			case <-time.After(a.duration()):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return text("%s", a.done()), nil
		})
	for _, name := range []string{"failing_job", "protocol_error_job", "confirm_delete", "multi_input"} {
		s.srv.AddTool(&sdk.Tool{Name: name, Description: "Runs as a task of the tasks extension.",
			InputSchema: obj(`"filename":{"type":"string"}`)},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				r := text("%s needs the tasks extension", name)
				r.IsError = true
				return r, nil
			})
	}
	s.srv.AddTool(&sdk.Tool{Name: "test_tool_with_task", Description: "Asks for a name, then greets it as a task.",
		InputSchema: obj(``)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			// Reached for the first round only: the layer serves the retry.
			return &sdk.CallToolResult{
				InputRequests: sdk.InputRequestMap{"user_name": &sdk.ElicitParams{
					Mode: "form", Message: "What is your name?",
					RequestedSchema: obj(`"name":{"type":"string","maxLength":50}`, "name"),
				}},
				RequestState: suiteUserState,
			}, nil
		})
	return s
}

// ServeSuiteTasksStdio runs the fixture on standard input and output until
// the client goes away.
func ServeSuiteTasksStdio(ctx context.Context) error {
	s := NewSuiteTasks()
	return s.srv.Run(ctx, &suiteTransport{inner: &sdk.StdioTransport{}})
}

// Dial connects a new in-memory session; it fits mcp.Options.Dial.
func (s *SuiteTasks) Dial(ctx context.Context) (sdk.Transport, error) {
	st, ct := sdk.NewInMemoryTransports()
	if _, err := s.srv.Connect(ctx, &suiteTransport{inner: st}, nil); err != nil {
		return nil, err
	}
	return ct, nil
}

type slowArgs struct {
	Seconds float64 `json:"seconds"`
	Label   string  `json:"label"`
}

func (a slowArgs) duration() time.Duration { return time.Duration(a.Seconds * float64(time.Second)) }
func (a slowArgs) done() string {
	return fmt.Sprintf("slow_compute %s: done after %gs", a.Label, a.Seconds)
}

type suiteTransport struct{ inner sdk.Transport }

func (t *suiteTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	conn, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &suiteLayer{inner: conn, lists: map[jsonrpc.ID]bool{}, tasks: map[string]*suiteTask{}}, nil
}

// suiteLayer serves the tasks extension in front of the go-sdk server,
// and adds execution.taskSupport to tools/list.
type suiteLayer struct {
	inner sdk.Connection
	wmu   sync.Mutex

	mu    sync.Mutex
	lists map[jsonrpc.ID]bool
	tasks map[string]*suiteTask
	seq   int
}

// suiteTask is one task of the layer.
type suiteTask struct {
	id      string
	created time.Time
	cancel  context.CancelFunc
	input   chan map[string]json.RawMessage

	mu       sync.Mutex
	updated  time.Time
	status   string
	msg      string
	requests map[string]any
	result   json.RawMessage
	err      *jsonrpc.Error
}

func (t *suiteTask) terminal() bool {
	return t.status == "completed" || t.status == "failed" || t.status == "cancelled"
}

// set moves a task that is not terminal yet.
func (t *suiteTask) set(status, msg string, requests map[string]any, result json.RawMessage, err *jsonrpc.Error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.terminal() {
		return
	}
	t.status, t.msg, t.requests, t.result, t.err, t.updated = status, msg, requests, result, err, time.Now()
}

// object is the Task (detail: a DetailedTask, as tasks/get answers it).
func (t *suiteTask) object(detail bool) map[string]any {
	t.mu.Lock()
	defer t.mu.Unlock()
	o := map[string]any{"taskId": t.id, "status": t.status,
		"createdAt": t.created.UTC().Format(time.RFC3339Nano), "lastUpdatedAt": t.updated.UTC().Format(time.RFC3339Nano),
		"ttlMs": 600000, "pollIntervalMs": 100}
	if t.msg != "" {
		o["statusMessage"] = t.msg
	}
	if !detail {
		return o
	}
	switch t.status {
	case "input_required":
		o["inputRequests"] = t.requests
	case "completed":
		o["result"] = t.result
	case "failed":
		o["error"] = t.err
	}
	return o
}

func (l *suiteLayer) SessionID() string { return l.inner.SessionID() }

func (l *suiteLayer) Close() error {
	l.mu.Lock()
	for _, t := range l.tasks {
		t.cancel()
	}
	l.mu.Unlock()
	return l.inner.Close()
}

func (l *suiteLayer) Write(ctx context.Context, msg jsonrpc.Message) error {
	if r, ok := msg.(*jsonrpc.Response); ok && r.Error == nil {
		l.mu.Lock()
		list := l.lists[r.ID]
		delete(l.lists, r.ID)
		l.mu.Unlock()
		if list {
			r.Result = withTaskSupport(r.Result)
		}
	}
	l.wmu.Lock()
	defer l.wmu.Unlock()
	return l.inner.Write(ctx, msg)
}

// withTaskSupport adds each tool's execution to a tools/list result.
func withTaskSupport(result json.RawMessage) json.RawMessage {
	var r map[string]json.RawMessage
	var tools []map[string]any
	if json.Unmarshal(result, &r) != nil || json.Unmarshal(r["tools"], &tools) != nil {
		return result
	}
	for _, t := range tools {
		name, _ := t["name"].(string)
		if ts := suiteTaskSupport[name]; ts != "" {
			t["execution"] = map[string]any{"taskSupport": ts}
		}
	}
	r["tools"], _ = json.Marshal(tools)
	out, err := json.Marshal(r)
	if err != nil {
		return result
	}
	return out
}

func (l *suiteLayer) respond(id jsonrpc.ID, result any, rpcErr *jsonrpc.Error) {
	resp := &jsonrpc.Response{ID: id}
	if rpcErr != nil {
		resp.Error = rpcErr
	} else {
		resp.Result, _ = json.Marshal(result)
	}
	_ = l.Write(context.Background(), resp)
}

// suiteCall is what the layer reads of a tools/call.
type suiteCall struct {
	Name           string                     `json:"name"`
	Arguments      json.RawMessage            `json:"arguments"`
	InputResponses map[string]json.RawMessage `json:"inputResponses"`
	RequestState   string                     `json:"requestState"`
	Meta           struct {
		Caps struct {
			Extensions map[string]json.RawMessage `json:"extensions"`
		} `json:"io.modelcontextprotocol/clientCapabilities"`
	} `json:"_meta"`
}

func (l *suiteLayer) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := l.inner.Read(ctx)
		if err != nil {
			return msg, err
		}
		req, ok := msg.(*jsonrpc.Request)
		if !ok || !req.IsCall() {
			return msg, nil
		}
		switch req.Method {
		case "tools/list":
			l.mu.Lock()
			l.lists[req.ID] = true
			l.mu.Unlock()
		case "tasks/get", "tasks/update", "tasks/cancel":
			l.taskRequest(req)
			continue
		case "tools/call":
			var p suiteCall
			_ = json.Unmarshal(req.Params, &p)
			_, ext := p.Meta.Caps.Extensions[ExtTasks]
			if l.call(req.ID, p, ext) {
				continue
			}
		}
		return msg, nil
	}
}

// call serves a tools/call that the layer answers itself, and reports
// whether it did: the tasks, and the refusal of a required tool to a
// client without the extension.
func (l *suiteLayer) call(id jsonrpc.ID, p suiteCall, ext bool) bool {
	if !ext {
		if suiteTaskSupport[p.Name] == "required" {
			data, _ := json.Marshal(map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{ExtTasks: map[string]any{}}}})
			l.respond(id, nil, &jsonrpc.Error{Code: -32021, Message: "Missing required client capability: " + ExtTasks, Data: data})
			return true
		}
		return false
	}
	var body func(ctx context.Context, t *suiteTask)
	switch p.Name {
	case "slow_compute":
		var a slowArgs
		_ = json.Unmarshal(p.Arguments, &a)
		body = func(ctx context.Context, t *suiteTask) {
			if pause.For(ctx, a.duration()) {
				t.set("completed", "Done", nil, textResult(false, a.done()), nil)
			}
		}
	case "failing_job":
		body = func(ctx context.Context, t *suiteTask) {
			if pause.For(ctx, time.Second) {
				t.set("completed", "Failed", nil, textResult(true, "failing_job: the job failed"), nil)
			}
		}
	case "protocol_error_job":
		body = func(ctx context.Context, t *suiteTask) {
			if pause.For(ctx, 200*time.Millisecond) {
				panic("protocol_error_job: the job broke")
			}
		}
	case "confirm_delete":
		var a struct{ Filename string }
		_ = json.Unmarshal(p.Arguments, &a)
		body = func(ctx context.Context, t *suiteTask) {
			in, ok := t.ask(ctx, map[string]any{"confirm": elicitRequest("Delete "+a.Filename+"?", `"confirm":{"type":"boolean"}`, "confirm")})
			if !ok {
				return
			}
			verdict := "kept"
			if r := in["confirm"]; r.Action == "accept" && r.Content["confirm"] == true {
				verdict = "deleted"
			}
			t.set("completed", "Done", nil, textResult(false, verdict+" "+a.Filename), nil)
		}
	case "multi_input":
		body = func(ctx context.Context, t *suiteTask) {
			in, ok := t.ask(ctx, map[string]any{
				"name":    elicitRequest("Which name?", `"name":{"type":"string"}`, "name"),
				"confirm": elicitRequest("Confirm?", `"confirm":{"type":"boolean"}`, "confirm"),
			})
			if !ok {
				return
			}
			t.set("completed", "Done", nil, textResult(false, fmt.Sprintf("name %s: %v, confirm %s: %v",
				in["name"].Action, in["name"].Content["name"], in["confirm"].Action, in["confirm"].Content["confirm"])), nil)
		}
	case "test_tool_with_task":
		raw, answered := p.InputResponses["user_name"]
		if !answered {
			return false // the first round: MRTR, from the go-sdk handler
		}
		if p.RequestState != suiteUserState {
			l.respond(id, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "requestState not echoed"})
			return true
		}
		var r elicitAnswer
		_ = json.Unmarshal(raw, &r)
		body = func(ctx context.Context, t *suiteTask) {
			if pause.For(ctx, 200*time.Millisecond) {
				t.set("completed", "Done", nil, textResult(false, fmt.Sprintf("Hello, %v!", r.Content["name"])), nil)
			}
		}
	default:
		return false
	}
	l.respond(id, l.start(p.Name, body), nil)
	return true
}

// start creates a task, stored before it is returned, and runs body.
func (l *suiteLayer) start(name string, body func(context.Context, *suiteTask)) map[string]any {
	ctx, cancel := context.WithCancel(context.Background())
	now := time.Now()
	l.mu.Lock()
	l.seq++
	t := &suiteTask{id: fmt.Sprintf("%s-%d", name, l.seq), created: now, updated: now, cancel: cancel,
		status: "working", input: make(chan map[string]json.RawMessage, 8)}
	l.tasks[t.id] = t
	l.mu.Unlock()
	go func() {
		defer cancel()
		defer func() {
			if v := recover(); v != nil {
				t.set("failed", "Failed", nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprint(v)})
			}
		}()
		body(ctx, t)
	}()
	o := t.object(false)
	o["resultType"] = "task"
	return o
}

// elicitAnswer is an ElicitResult.
type elicitAnswer struct {
	Action  string         `json:"action"`
	Content map[string]any `json:"content"`
}

// ask puts the task in input_required with reqs and waits until each key
// is answered (an answered key leaves inputRequests at once).
func (t *suiteTask) ask(ctx context.Context, reqs map[string]any) (map[string]elicitAnswer, bool) {
	pending := map[string]any{}
	for k, v := range reqs {
		pending[k] = v
	}
	got := map[string]elicitAnswer{}
	for len(pending) > 0 {
		t.set("input_required", "Waiting for "+strings.Join(sortedKeys(pending), ", "), pending, nil, nil)
		select {
		case in := <-t.input:
			next := map[string]any{}
			for k, v := range pending {
				if r, ok := in[k]; ok {
					var a elicitAnswer
					_ = json.Unmarshal(r, &a)
					got[k] = a
					continue
				}
				next[k] = v
			}
			pending = next
		case <-ctx.Done():
			return nil, false
		}
	}
	t.set("working", "Working", nil, nil, nil)
	return got, true
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func elicitRequest(message, props, required string) map[string]any {
	return map[string]any{"method": "elicitation/create", "params": map[string]any{
		"mode": "form", "message": message,
		"requestedSchema": raw(`{"type":"object","properties":{` + props + `},"required":["` + required + `"]}`)}}
}

func textResult(isError bool, s string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": s}}, "isError": isError})
	return b
}

func (l *suiteLayer) taskRequest(req *jsonrpc.Request) {
	var p struct {
		TaskID         string                     `json:"taskId"`
		InputResponses map[string]json.RawMessage `json:"inputResponses"`
	}
	_ = json.Unmarshal(req.Params, &p)
	l.mu.Lock()
	t := l.tasks[p.TaskID]
	l.mu.Unlock()
	if t == nil {
		l.respond(req.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Task not found"})
		return
	}
	switch req.Method {
	case "tasks/get":
		o := t.object(true)
		o["resultType"] = "complete"
		l.respond(req.ID, o, nil)
	case "tasks/update":
		if len(p.InputResponses) > 0 {
			select {
			case t.input <- p.InputResponses:
			default:
			}
		}
		l.respond(req.ID, map[string]any{"resultType": "complete"}, nil)
	case "tasks/cancel":
		t.set("cancelled", "Cancelled by the client", nil, nil, nil)
		t.cancel()
		l.respond(req.ID, map[string]any{"resultType": "complete"}, nil)
	}
}
