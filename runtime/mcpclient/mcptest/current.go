package mcptest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Current is a fixture server on MCP 2026-07-28: the go-sdk v1.8.0 server
// at its default revision (server/discover, per-request _meta, MRTR), plus
// a minimal server side of the tasks extension io.modelcontextprotocol/tasks,
// which the go-sdk lacks (tools/call answered with a task, tasks/get,
// tasks/update, tasks/cancel), written here as a layer over the
// connection. Its tools, greet (input through MRTR) and paint (an
// extension task asking through tasks/update): docs/mcp.md, "The fixture
// tools".
type Current struct {
	srv    *sdk.Server
	notify chan string
}

// ExtTasks is the identifier of the tasks extension.
const ExtTasks = "io.modelcontextprotocol/tasks"

// greetState is the requestState of greet's input_required result.
const greetState = "greet:1"

// NewCurrent returns the 2026-07-28 fixture server.
func NewCurrent() *Current {
	caps := &sdk.ServerCapabilities{}
	caps.AddExtension(ExtTasks, nil)
	c := &Current{
		srv: sdk.NewServer(&sdk.Implementation{Name: "mcptest-current", Version: "2.0.0"},
			&sdk.ServerOptions{Capabilities: caps}),
		notify: make(chan string, 64),
	}
	c.srv.AddTool(&sdk.Tool{Name: "greet", Description: "Greets whoever it is told about.",
		InputSchema: raw(`{"type":"object","properties":{},"additionalProperties":false}`)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			if r, ok := req.Params.InputResponses["name"].(*sdk.ElicitResult); ok {
				if req.Params.RequestState != greetState {
					return nil, fmt.Errorf("requestState %q not echoed", req.Params.RequestState)
				}
				if r.Action != "accept" {
					return text("no name (%s)", r.Action), nil
				}
				return text("Hello, %v!", r.Content["name"]), nil
			}
			return &sdk.CallToolResult{
				InputRequests: sdk.InputRequestMap{"name": &sdk.ElicitParams{
					Mode: "form", Message: "What is your name?",
					RequestedSchema: raw(`{"type":"object","properties":{"name":{"type":"string","maxLength":50}},"required":["name"]}`),
				}},
				RequestState: greetState,
			}, nil
		})
	c.srv.AddTool(&sdk.Tool{Name: "paint", Description: "Paints, as a task, in a colour it asks for.",
		InputSchema: raw(`{"type":"object","properties":{"block":{"type":"boolean"}}}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			// Reached only by a client without the tasks extension.
			r := text("paint needs the tasks extension")
			r.IsError = true
			return r, nil
		})
	return c
}

// AddEcho adds a tool that returns its arguments, as a change of the tool
// list (the go-sdk notifies the subscribed clients).
func (c *Current) AddEcho(name string) {
	c.srv.AddTool(&sdk.Tool{Name: name, InputSchema: raw(`{"type":"object"}`)},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return text("%s", req.Params.Arguments), nil
		})
}

// Events reports "ext-cancelled:ID" when a task is cancelled, and
// "ext-input:ID" when its input arrives.
func (c *Current) Events() <-chan string { return c.notify }

func (c *Current) record(ev string) {
	select {
	case c.notify <- ev:
	default:
	}
}

// Dial connects a new in-memory session; it fits mcp.Options.Dial.
func (c *Current) Dial(ctx context.Context) (sdk.Transport, error) {
	st, ct := sdk.NewInMemoryTransports()
	if _, err := c.srv.Connect(ctx, &extTransport{inner: st, c: c}, nil); err != nil {
		return nil, err
	}
	return ct, nil
}

// ServeCurrentStdio runs the 2026-07-28 fixture on standard input and
// output until the client goes away.
func ServeCurrentStdio(ctx context.Context) error {
	c := NewCurrent()
	return c.srv.Run(ctx, &extTransport{inner: &sdk.StdioTransport{}, c: c})
}

type extTransport struct {
	inner sdk.Transport
	c     *Current
}

func (t *extTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	conn, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &extLayer{inner: conn, c: t.c, tasks: map[string]*extTask{}}, nil
}

// extLayer serves the tasks extension in front of the go-sdk server.
type extLayer struct {
	inner sdk.Connection
	c     *Current
	wmu   sync.Mutex

	mu    sync.Mutex
	tasks map[string]*extTask
	seq   int
}

// extTask is one task of the layer.
type extTask struct {
	id      string
	created time.Time
	input   chan map[string]json.RawMessage
	cancel  context.CancelFunc

	mu       sync.Mutex
	status   string
	msg      string
	requests map[string]any
	result   json.RawMessage
}

func (t *extTask) set(status, msg string, requests map[string]any, result json.RawMessage) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch t.status {
	case "completed", "failed", "cancelled":
		return
	}
	t.status, t.msg, t.requests, t.result = status, msg, requests, result
}

// object is the task as tasks/get returns it (a DetailedTask).
func (t *extTask) object() map[string]any {
	t.mu.Lock()
	defer t.mu.Unlock()
	o := map[string]any{"taskId": t.id, "status": t.status,
		"createdAt": t.created.UTC().Format(time.RFC3339), "lastUpdatedAt": time.Now().UTC().Format(time.RFC3339),
		"ttlMs": 60000, "pollIntervalMs": 50}
	if t.msg != "" {
		o["statusMessage"] = t.msg
	}
	if t.status == "input_required" {
		o["inputRequests"] = t.requests
	}
	if t.status == "completed" {
		o["result"] = t.result
	}
	return o
}

func (l *extLayer) SessionID() string { return l.inner.SessionID() }
func (l *extLayer) Close() error      { return l.inner.Close() }

func (l *extLayer) Write(ctx context.Context, msg jsonrpc.Message) error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	return l.inner.Write(ctx, msg)
}

func (l *extLayer) respond(id jsonrpc.ID, result any, rpcErr *jsonrpc.Error) {
	resp := &jsonrpc.Response{ID: id}
	if rpcErr != nil {
		resp.Error = rpcErr
	} else {
		b, _ := json.Marshal(result)
		resp.Result = b
	}
	_ = l.Write(context.Background(), resp)
}

func (l *extLayer) Read(ctx context.Context) (jsonrpc.Message, error) {
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
		case "tasks/get", "tasks/update", "tasks/cancel":
			l.taskRequest(req)
			continue
		case "tools/call":
			var p struct {
				Name string `json:"name"`
				Args struct {
					Block bool `json:"block"`
				} `json:"arguments"`
				Meta struct {
					Caps struct {
						Extensions map[string]json.RawMessage `json:"extensions"`
					} `json:"io.modelcontextprotocol/clientCapabilities"`
				} `json:"_meta"`
			}
			_ = json.Unmarshal(req.Params, &p)
			if _, ext := p.Meta.Caps.Extensions[ExtTasks]; p.Name == "paint" && ext {
				l.respond(req.ID, l.startPaint(p.Args.Block), nil)
				continue
			}
		}
		return msg, nil
	}
}

// startPaint creates the task, durably before it is returned, and runs it.
func (l *extLayer) startPaint(block bool) map[string]any {
	ctx, cancel := context.WithCancel(context.Background())
	l.mu.Lock()
	l.seq++
	t := &extTask{id: fmt.Sprintf("paint-%d", l.seq), created: time.Now(), status: "working", msg: "Mixing",
		input: make(chan map[string]json.RawMessage, 1), cancel: cancel}
	l.tasks[t.id] = t
	l.mu.Unlock()
	go func() {
		defer cancel()
		sleep := func(d time.Duration) bool {
			select {
			case <-time.After(d):
				return true
			case <-ctx.Done():
				return false
			}
		}
		if !sleep(100 * time.Millisecond) {
			return
		}
		t.set("input_required", "Waiting for a colour", map[string]any{"colour-1": map[string]any{
			"method": "elicitation/create",
			"params": map[string]any{"mode": "form", "message": "Which colour?", "requestedSchema": map[string]any{
				"type": "object", "properties": map[string]any{"colour": map[string]any{"type": "string"}},
				"required": []any{"colour"}}},
		}}, nil)
		var colour any
		select {
		case in := <-t.input:
			var r struct {
				Action  string
				Content map[string]any
			}
			_ = json.Unmarshal(in["colour-1"], &r)
			colour = r.Content["colour"]
			l.c.record("ext-input:" + t.id)
		case <-ctx.Done():
			return
		}
		t.set("working", "Painting", nil, nil)
		if !sleep(100*time.Millisecond) || block && !sleep(time.Hour) {
			return
		}
		res, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": fmt.Sprintf("painted %v", colour)}}})
		t.set("completed", "Done", nil, res)
	}()
	o := t.object()
	o["resultType"] = "task"
	return o
}

func (l *extLayer) taskRequest(req *jsonrpc.Request) {
	var p struct {
		TaskID         string                     `json:"taskId"`
		InputResponses map[string]json.RawMessage `json:"inputResponses"`
	}
	_ = json.Unmarshal(req.Params, &p)
	l.mu.Lock()
	t := l.tasks[p.TaskID]
	l.mu.Unlock()
	if t == nil {
		l.respond(req.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Failed to retrieve task: Task not found"})
		return
	}
	switch req.Method {
	case "tasks/get":
		o := t.object()
		o["resultType"] = "complete"
		l.respond(req.ID, o, nil)
	case "tasks/update":
		if _, ok := p.InputResponses["colour-1"]; ok {
			select {
			case t.input <- p.InputResponses:
			default: // answered already: ignored
			}
		}
		l.respond(req.ID, map[string]any{"resultType": "complete"}, nil)
	case "tasks/cancel":
		t.set("cancelled", "Cancelled by the client", nil, nil)
		t.cancel()
		l.c.record("ext-cancelled:" + t.id)
		l.respond(req.ID, map[string]any{"resultType": "complete"}, nil)
	}
}
