package mcptest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// layer is the server side of what the go-sdk v1.8.0 lacks: it adds
// execution.taskSupport to listed tools and the tasks capability to the
// initialize result, serves MCP Tasks (task-augmented tools/call,
// tasks/get, tasks/result, tasks/cancel), and sends raw server-to-client
// requests. Everything else passes through to the go-sdk server.
type layer struct {
	inner sdk.Connection
	srv   *Server

	mu       sync.Mutex
	initIDs  map[jsonrpc.ID]bool
	listIDs  map[jsonrpc.ID]bool
	pending  map[jsonrpc.ID]chan *jsonrpc.Response
	tasks    map[string]*task
	seq      int
	closed   chan struct{}
	closeOne sync.Once
}

// task is one MCP task of the layer.
type task struct {
	id      string
	created time.Time
	cancel  context.CancelFunc
	done    chan struct{}

	mu     sync.Mutex
	status string
	msg    string
	result json.RawMessage
}

func (t *task) object() map[string]any {
	t.mu.Lock()
	defer t.mu.Unlock()
	o := map[string]any{
		"taskId": t.id, "status": t.status, "createdAt": t.created.UTC().Format(time.RFC3339),
		"lastUpdatedAt": time.Now().UTC().Format(time.RFC3339), "ttl": 60000, "pollInterval": 100,
	}
	if t.msg != "" {
		o["statusMessage"] = t.msg
	}
	return o
}

// set changes the status unless the task is terminal; it reports whether
// it did.
func (t *task) set(status, msg string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch t.status {
	case "completed", "failed", "cancelled":
		return false
	}
	t.status, t.msg = status, msg
	return true
}

type layerTransport struct {
	inner sdk.Transport
	srv   *Server
}

func (t *layerTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	l := &layer{
		inner: c, srv: t.srv,
		initIDs: map[jsonrpc.ID]bool{}, listIDs: map[jsonrpc.ID]bool{},
		pending: map[jsonrpc.ID]chan *jsonrpc.Response{}, tasks: map[string]*task{},
		closed: make(chan struct{}),
	}
	t.srv.setLayer(l)
	return l, nil
}

func (l *layer) SessionID() string { return l.inner.SessionID() }

func (l *layer) Close() error {
	l.closeOne.Do(func() { close(l.closed) })
	return l.inner.Close()
}

func (l *layer) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := l.inner.Read(ctx)
		if err != nil {
			return msg, err
		}
		switch m := msg.(type) {
		case *jsonrpc.Response:
			l.mu.Lock()
			ch := l.pending[m.ID]
			delete(l.pending, m.ID)
			l.mu.Unlock()
			if ch != nil {
				ch <- m
				continue
			}
		case *jsonrpc.Request:
			switch m.Method {
			case "initialize":
				l.mu.Lock()
				l.initIDs[m.ID] = true
				l.mu.Unlock()
			case "tools/list":
				l.mu.Lock()
				l.listIDs[m.ID] = true
				l.mu.Unlock()
			case "tools/call":
				var p struct {
					Name      string          `json:"name"`
					Arguments json.RawMessage `json:"arguments"`
					Task      json.RawMessage `json:"task"`
				}
				if json.Unmarshal(m.Params, &p) == nil && p.Task != nil {
					go l.createTask(m.ID, p.Name, p.Arguments)
					continue
				}
			case "tasks/get", "tasks/result", "tasks/cancel":
				go l.taskRequest(m)
				continue
			}
		}
		return msg, nil
	}
}

func (l *layer) Write(ctx context.Context, msg jsonrpc.Message) error {
	if r, ok := msg.(*jsonrpc.Response); ok && r.Error == nil {
		l.mu.Lock()
		isInit, isList := l.initIDs[r.ID], l.listIDs[r.ID]
		delete(l.initIDs, r.ID)
		delete(l.listIDs, r.ID)
		l.mu.Unlock()
		switch {
		case isInit:
			msg = patch(r, func(m map[string]any) {
				caps, _ := m["capabilities"].(map[string]any)
				if caps == nil {
					caps = map[string]any{}
					m["capabilities"] = caps
				}
				caps["tasks"] = map[string]any{"cancel": map[string]any{},
					"requests": map[string]any{"tools": map[string]any{"call": map[string]any{}}}}
			})
		case isList:
			msg = patch(r, func(m map[string]any) {
				tools, _ := m["tools"].([]any)
				for _, t := range tools {
					tm, _ := t.(map[string]any)
					name, _ := tm["name"].(string)
					if ts, ok := l.srv.taskSupport[name]; ok {
						tm["execution"] = map[string]any{"taskSupport": ts}
					}
				}
			})
		}
	}
	return l.inner.Write(ctx, msg)
}

// patch edits a response's result.
func patch(r *jsonrpc.Response, edit func(map[string]any)) *jsonrpc.Response {
	var m map[string]any
	if json.Unmarshal(r.Result, &m) != nil {
		return r
	}
	edit(m)
	b, err := json.Marshal(m)
	if err != nil {
		return r
	}
	out := *r
	out.Result = b
	return &out
}

func (l *layer) respond(id jsonrpc.ID, result any, err error) {
	var resp *jsonrpc.Response
	if err != nil {
		resp = &jsonrpc.Response{ID: id, Error: err}
	} else {
		b, merr := json.Marshal(result)
		if merr != nil {
			resp = &jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "marshal"}}
		} else {
			resp = &jsonrpc.Response{ID: id, Result: b}
		}
	}
	_ = l.inner.Write(context.Background(), resp)
}

// request sends a server-to-client request and waits for the response.
func (l *layer) request(ctx context.Context, method string, params any) (json.RawMessage, error) {
	b, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.seq++
	id, _ := jsonrpc.MakeID(fmt.Sprintf("mcptest-%d", l.seq))
	ch := make(chan *jsonrpc.Response, 1)
	l.pending[id] = ch
	l.mu.Unlock()
	if err := l.inner.Write(ctx, &jsonrpc.Request{ID: id, Method: method, Params: b}); err != nil {
		return nil, err
	}
	select {
	case r := <-ch:
		if r.Error != nil {
			return nil, r.Error
		}
		return r.Result, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-l.closed:
		return nil, errors.New("connection closed")
	}
}

func (l *layer) createTask(id jsonrpc.ID, name string, args json.RawMessage) {
	fn := l.srv.taskTools[name]
	if fn == nil {
		l.respond(id, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "unknown task tool"})
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	l.mu.Lock()
	l.seq++
	t := &task{id: fmt.Sprintf("task-%d", l.seq), created: time.Now(), cancel: cancel,
		done: make(chan struct{}), status: "working"}
	l.tasks[t.id] = t
	l.mu.Unlock()
	l.respond(id, map[string]any{"task": t.object()}, nil)
	go func() {
		defer cancel()
		res, err := fn(ctx, &TaskContext{l: l, t: t}, args)
		if ctx.Err() != nil {
			return // cancelled: tasks/cancel settled it
		}
		t.mu.Lock()
		if err != nil {
			t.status, t.msg = "failed", "the task failed"
		} else {
			t.status, t.msg, t.result = "completed", "", res
		}
		t.mu.Unlock()
		close(t.done)
	}()
}

func (l *layer) taskRequest(m *jsonrpc.Request) {
	var p struct {
		TaskID string `json:"taskId"`
	}
	_ = json.Unmarshal(m.Params, &p)
	l.mu.Lock()
	t := l.tasks[p.TaskID]
	l.mu.Unlock()
	if t == nil {
		l.respond(m.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "unknown task"})
		return
	}
	switch m.Method {
	case "tasks/get":
		l.respond(m.ID, t.object(), nil)
	case "tasks/cancel":
		if !t.set("cancelled", "cancelled by the client") {
			l.respond(m.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "task is terminal"})
			return
		}
		t.cancel()
		close(t.done)
		l.srv.record("task-cancelled:" + t.id)
		l.respond(m.ID, t.object(), nil)
	case "tasks/result":
		select {
		case <-t.done:
		case <-l.closed:
			return
		}
		t.mu.Lock()
		status, res := t.status, t.result
		t.mu.Unlock()
		if status != "completed" {
			l.respond(m.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "task " + status})
			return
		}
		var out map[string]any
		_ = json.Unmarshal(res, &out)
		meta, _ := out["_meta"].(map[string]any)
		if meta == nil {
			meta = map[string]any{}
		}
		meta["io.modelcontextprotocol/related-task"] = map[string]any{"taskId": t.id}
		out["_meta"] = meta
		l.respond(m.ID, out, nil)
	}
}

// TaskContext lets a task tool report status and ask for input.
type TaskContext struct {
	l *layer
	t *task
}

// Status sets the task's status and statusMessage.
func (tc *TaskContext) Status(status, msg string) { tc.t.set(status, msg) }

// Elicit sends elicitation/create related to the task and returns the raw
// ElicitResult.
func (tc *TaskContext) Elicit(ctx context.Context, message string, schema any) (json.RawMessage, error) {
	return tc.l.request(ctx, "elicitation/create", map[string]any{
		"mode": "form", "message": message, "requestedSchema": schema,
		"_meta": map[string]any{"io.modelcontextprotocol/related-task": map[string]any{"taskId": tc.t.id}},
	})
}
