package mcpface

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"agentgw/agentclient"
	"agentgw/mcpface/layer"
	"agentgw/task"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"mellium.im/xmpp/jid"
)

// MCP Tasks (revision 2025-11-25) for agent calls, through a thin layer of
// our own: go-sdk has none, and drops params.task when it decodes a
// request. TasksTransport wraps a connection: it rescues task-augmented
// tools/call requests and serves tasks/get, tasks/result, tasks/list and
// tasks/cancel itself, and adds capabilities.tasks and each agent tool's
// execution to what go-sdk answers. The translations and their losses
// are the ProtoXEP's "MCP Tasks bridge losses" (docs/mcp.md).

// Bounds of MCP Tasks (docs/limits.md).
const (
	// taskPollInterval is the pollInterval suggested to clients.
	taskPollInterval = time.Second
	// maxListedTasks bounds a tasks/list answer.
	maxListedTasks = 1000
	// taskCancelWait bounds how long tasks/cancel waits for the XMPP
	// task to settle after <cancel-accepted/>.
	taskCancelWait = 30 * time.Second
	// maxTaskWaits bounds the tasks/result and tasks/cancel requests of
	// one caller (the account over stdio, a token over HTTP) waiting at
	// once: each holds a goroutine (over HTTP a response stream, and for
	// tasks/result an asker of the task's input) and polls the store.
	maxTaskWaits = 64
)

// Meta keys of the bridge.
const (
	metaRelatedTask = "io.modelcontextprotocol/related-task"
	metaXMPP        = "agentgw/xmpp"
	metaLoss        = "agentgw/semantic-loss"
)

// The semantic losses reported in _meta, after the spec's table.
const (
	lossStateDetail = "state detail: MCP working stands for the XMPP states accepted, running and cancelling (see _meta agentgw/xmpp.state)"
	lossCancel      = "cancellation: the XMPP <cancel-accepted/> was advisory and the task could still have completed or failed; MCP cancelled is reported only because XMPP settled cancelled"
	lossRetention   = "retention: ttl is bounded by the XMPP retain-until deadline, the earlier limit the bridge can enforce"
)

// TasksTransport wraps t with the MCP Tasks layer of s, for the caller
// owner (the account over stdio).
func (s *Server) TasksTransport(t mcp.Transport) mcp.Transport {
	return &tasksTransport{inner: t, s: s}
}

type tasksTransport struct {
	inner mcp.Transport
	s     *Server
}

func (t *tasksTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &tasksConn{Connection: c, s: t.s, patch: map[string]string{}, serving: map[string]*layerRequest{}, owner: "account:" + t.s.acct.JID().String()}, nil
}

// tasksConn is one wrapped connection.
type tasksConn struct {
	mcp.Connection
	s     *Server
	owner string

	mu    sync.Mutex
	patch map[string]string // request id → method whose answer is amended
	// serving are the tasks/* requests the layer serves, by request id,
	// for the client's notifications/cancelled (go-sdk never sees them).
	serving map[string]*layerRequest
	// elicitation: the client declared it in initialize.
	elicitation bool
}

func idKey(id jsonrpc.ID) string { return fmt.Sprintf("%T:%v", id.Raw(), id.Raw()) }

// Read passes on what go-sdk serves and keeps what the layer serves.
func (c *tasksConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if err != nil {
			return msg, err
		}
		if resp, ok := msg.(*jsonrpc.Response); ok && c.s.deliver(c.owner, resp) {
			continue // the answer to an elicitation of the layer
		}
		req, ok := msg.(*jsonrpc.Request)
		if !ok {
			return msg, nil
		}
		if layer.IsCurrent(layer.MetaVersion(req.Params)) {
			return msg, nil // the current revision has no 2025-11-25 Tasks
		}
		if !req.ID.IsValid() {
			if req.Method == "notifications/cancelled" && c.cancelServing(req.Params) {
				continue
			}
			return msg, nil
		}
		switch req.Method {
		case "initialize", "tools/list":
			c.mu.Lock()
			c.patch[idKey(req.ID)] = req.Method
			if req.Method == "initialize" {
				c.elicitation = declaresElicitation(req.Params)
			}
			c.mu.Unlock()
		case "tools/call":
			var p struct {
				Task json.RawMessage `json:"task"`
			}
			if json.Unmarshal(req.Params, &p) == nil && len(p.Task) > 0 && string(p.Task) != "null" {
				go c.taskCall(req)
				continue
			}
		case "tasks/get", "tasks/result", "tasks/list", "tasks/cancel":
			ctx, cancel := context.WithCancel(c.s.runCtx)
			lr := &layerRequest{cancel: cancel}
			c.mu.Lock()
			c.serving[idKey(req.ID)] = lr
			c.mu.Unlock()
			go c.tasksMethod(ctx, lr, req)
			continue
		}
		return msg, nil
	}
}

// Close closes the connection: its tasks' status changes are no longer
// sent.
func (c *tasksConn) Close() error {
	c.s.dropSinks(c)
	return c.Connection.Close()
}

// Write amends go-sdk's answers to initialize and tools/list.
func (c *tasksConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if resp, ok := msg.(*jsonrpc.Response); ok && resp.Error == nil {
		c.mu.Lock()
		m := c.patch[idKey(resp.ID)]
		delete(c.patch, idKey(resp.ID))
		c.mu.Unlock()
		switch m {
		case "initialize":
			resp.Result = addTasksCapability(resp.Result)
		case "tools/list":
			resp.Result = c.s.addExecution(resp.Result)
		}
	}
	return c.Connection.Write(ctx, msg)
}

// reply answers a request the layer served.
func (c *tasksConn) reply(id jsonrpc.ID, result any, err error) {
	_ = c.Connection.Write(context.Background(), response(id, result, err))
}

// layerRequest is a request the layer serves on a connection.
type layerRequest struct{ cancel context.CancelFunc }

// cancelServing ends the request the layer serves that a
// notifications/cancelled names, and reports whether there was one.
func (c *tasksConn) cancelServing(params json.RawMessage) bool {
	var p struct {
		RequestID any `json:"requestId"`
	}
	if json.Unmarshal(params, &p) != nil {
		return false
	}
	id, err := jsonrpc.MakeID(p.RequestID)
	if err != nil || !id.IsValid() {
		return false
	}
	c.mu.Lock()
	lr := c.serving[idKey(id)]
	c.mu.Unlock()
	if lr == nil {
		return false
	}
	lr.cancel()
	return true
}

// asker is a tasks/result request on this connection, alive while req,
// as the asker of its task's input: the layer writes elicitation/create
// itself.
func (c *tasksConn) asker(req context.Context) *asker {
	c.mu.Lock()
	can := c.elicitation
	c.mu.Unlock()
	send := func(m jsonrpc.Message) error { return c.Connection.Write(context.Background(), m) }
	return &asker{canElicit: can, elicit: func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		return c.s.rawElicit(ctx, req, c.owner, send, p)
	}}
}

// declaresElicitation reports whether initialize params declare the
// client's elicitation capability.
func declaresElicitation(params json.RawMessage) bool {
	var p struct {
		Capabilities struct {
			Elicitation json.RawMessage `json:"elicitation"`
		} `json:"capabilities"`
	}
	return json.Unmarshal(params, &p) == nil && len(p.Capabilities.Elicitation) > 0 && string(p.Capabilities.Elicitation) != "null"
}

// response is the JSON-RPC answer of a request the layer served.
func response(id jsonrpc.ID, result any, err error) *jsonrpc.Response {
	resp := &jsonrpc.Response{ID: id}
	if err != nil {
		var we *jsonrpc.Error
		if !errors.As(err, &we) {
			we = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
		}
		resp.Error = we
	} else {
		raw, merr := json.Marshal(result)
		if merr != nil {
			resp.Error = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: merr.Error()}
		}
		resp.Result = raw
	}
	return resp
}

func invalidParams(format string, args ...any) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(format, args...)}
}

// addTasksCapability declares capabilities.tasks: list, cancel, and
// task-augmented tools/call.
func addTasksCapability(result json.RawMessage) json.RawMessage {
	var r map[string]json.RawMessage
	if json.Unmarshal(result, &r) != nil {
		return result
	}
	var caps map[string]json.RawMessage
	json.Unmarshal(r["capabilities"], &caps)
	if caps == nil {
		caps = map[string]json.RawMessage{}
	}
	caps["tasks"] = json.RawMessage(`{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}`)
	r["capabilities"], _ = json.Marshal(caps)
	out, err := json.Marshal(r)
	if err != nil {
		return result
	}
	return out
}

// addExecution gives CallAgentTool and each projected tool its execution
// object: the manifest's, or taskSupport "optional".
func (s *Server) addExecution(result json.RawMessage) json.RawMessage {
	var r map[string]json.RawMessage
	var tools []map[string]json.RawMessage
	if json.Unmarshal(result, &r) != nil || json.Unmarshal(r["tools"], &tools) != nil {
		return result
	}
	for _, t := range tools {
		var name string
		json.Unmarshal(t["name"], &name)
		exec := json.RawMessage(nil)
		if name == "CallAgentTool" {
			exec = json.RawMessage(`{"taskSupport":"optional"}`)
		} else if _, _, e, ok := s.agents.proj.lookup(name); ok {
			exec = e
			if exec == nil {
				exec = json.RawMessage(`{"taskSupport":"optional"}`)
			}
		}
		if exec != nil {
			t["execution"] = exec
		}
	}
	r["tools"], _ = json.Marshal(tools)
	out, err := json.Marshal(r)
	if err != nil {
		return result
	}
	return out
}

// mcpStatus maps an XMPP state onto MCP's task status: several XMPP
// states become working (a loss the _meta reports).
func mcpStatus(s task.State) string {
	switch s {
	case task.StateInputRequired, task.StateCompleted, task.StateFailed, task.StateCancelled:
		return string(s)
	}
	return "working"
}

// taskCall serves a task-augmented tools/call: the call is checked,
// pinned and invoked like any other, and CreateTaskResult is answered
// only after the XMPP <accepted/>, so that admission errors stay errors
// of the call.
func (c *tasksConn) taskCall(req *jsonrpc.Request) {
	res, id, err := c.s.taskCall(c.owner, req)
	c.reply(req.ID, res, err)
	if id != "" {
		c.s.watchStatus(id, c.owner, c)
	}
}

// taskCall serves a task-augmented tools/call for owner; id is the task
// created, if one was.
func (s *Server) taskCall(owner string, req *jsonrpc.Request) (res any, id string, err error) {
	ctx := context.Background()
	var p struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Task      struct {
			TTL *int64 `json:"ttl"`
		} `json:"task"`
	}
	if err := json.Unmarshal(req.Params, &p); err != nil {
		return nil, "", invalidParams("tools/call: %v", err)
	}
	g := s.agents
	g.proj.waitReady(ctx)
	var pc preparedCall
	var bad *mcp.CallToolResult
	switch {
	case p.Name == "CallAgentTool":
		in := map[string]json.RawMessage{}
		if len(p.Arguments) > 0 && string(p.Arguments) != "null" && json.Unmarshal(p.Arguments, &in) != nil {
			return errorResult("CallAgentTool: the arguments must be a JSON object"), "", nil
		}
		pc, bad = g.prepareAgentCall(ctx, in)
	default:
		m, tool, _, ok := g.proj.lookup(p.Name)
		if !ok {
			return nil, "", invalidParams("tool %q does not support task-augmented calls (only CallAgentTool and projected agent tools do)", agentclient.SafeText(p.Name, 128))
		}
		pc, bad = g.proj.prepare(ctx, m, tool, p.Name, p.Arguments)
	}
	if bad != nil {
		return bad, "", nil
	}
	bad, rec := s.startTask(owner, pc, p.Task.TTL)
	if bad != nil {
		return bad, "", nil
	}
	return map[string]any{"task": s.taskObject(rec), "_meta": map[string]any{metaXMPP: xmppMeta(rec), metaLoss: []string{lossRetention}}}, rec.ID, nil
}

// startTask invokes the prepared call as a durable MCP task of owner,
// stored once the XMPP task is accepted and followed from then on by
// runTask; ttl (ms), if set, shortens its retention. A result is the
// call's failure before any task.
func (s *Server) startTask(owner string, pc preparedCall, ttl *int64) (*mcp.CallToolResult, TaskRecord) {
	ctx := context.Background()
	g := s.agents
	var rec TaskRecord
	hooks := &callHooks{detached: true}
	hooks.accepted = func(acc task.Accepted, pin *agentclient.Pin, requestID string) error {
		now := s.store.Now()
		rec = TaskRecord{
			ID: newTaskID(), Owner: owner, Account: s.acct.JID().String(),
			Endpoint: pin.Endpoint.String(), XMPPTaskID: acc.TaskID, RequestID: requestID,
			Version: pin.Version, Hash: pin.Hash, Tool: pc.tool,
			Status: "working", XMPPState: string(task.StateAccepted),
			Created: now, Updated: now, RetainUntil: acc.RetainUntil,
		}
		// MCP's ttl counts from creation; never promise past retain-until.
		rec.TTL = max(acc.RetainUntil.Sub(now).Truncate(time.Millisecond), 0)
		if ttl != nil && *ttl >= 0 && time.Duration(*ttl)*time.Millisecond < rec.TTL {
			rec.TTL = time.Duration(*ttl) * time.Millisecond
			rec.RetainUntil = now.Add(rec.TTL)
		}
		return s.store.CreateTask(ctx, rec)
	}
	if res := g.call(ctx, nil, pc, hooks); res != nil {
		return res, rec
	}
	go g.runTask(s.runCtx, rec, pin(rec), false, hooks.followed)
	return nil, rec
}

// pin rebuilds the pin of a stored task.
func pin(rec TaskRecord) *agentclient.Pin {
	ep, _ := jid.Parse(rec.Endpoint)
	return agentclient.PinFlags(ep, rec.Version, rec.Hash)
}

func newTaskID() string { return randomID("mcptask-") }

// randomID is prefix and 144 random bits.
func randomID(prefix string) string {
	b := make([]byte, 18)
	_, _ = rand.Read(b)
	return prefix + base64.RawURLEncoding.EncodeToString(b)
}

// taskObject is the MCP Task of a record: an input_required task's
// statusMessage is the question.
func (s *Server) taskObject(r TaskRecord) map[string]any {
	msg := "XMPP task " + r.XMPPTaskID + " is " + r.XMPPState
	if q := s.question(r.ID); q != "" && r.Status == string(task.StateInputRequired) {
		msg = q
	}
	t := map[string]any{
		"taskId": r.ID, "status": r.Status, "statusMessage": msg,
		"createdAt": r.Created.UTC().Format(time.RFC3339Nano), "lastUpdatedAt": r.Updated.UTC().Format(time.RFC3339Nano),
		"ttl": r.TTL.Milliseconds(), "pollInterval": taskPollInterval.Milliseconds(),
	}
	return t
}

// xmppMeta maps the XMPP side explicitly: endpoint, task ID, request ID,
// revision, state and retention deadline.
func xmppMeta(r TaskRecord) map[string]any {
	return map[string]any{
		"endpoint": r.Endpoint, "taskId": r.XMPPTaskID, "requestId": r.RequestID, "revision": r.Revision,
		"state": r.XMPPState, "retainUntil": r.RetainUntil.UTC().Format(time.RFC3339), "version": r.Version, "hash": r.Hash.Base64(),
	}
}

// runTask follows the XMPP task of rec to its end, recording its state
// and result. resumed: after a restart, start from the task state.
// followed, if not nil, runs once the task's events are routed.
func (g *agents) runTask(ctx context.Context, rec TaskRecord, p *agentclient.Pin, resumed bool, followed func()) {
	hooks := &callHooks{detached: true, followed: followed, mcpTask: rec.ID, state: func(tr *agentclient.Tracker) {
		question := ""
		if tr.State == task.StateInputRequired && tr.Pending != nil {
			question = tr.Pending.Question
		}
		g.s.setQuestion(rec.ID, question)
		_ = g.s.store.UpdateTask(context.Background(), rec.ID, mcpStatus(tr.State), string(tr.State), tr.Revision, nil)
		g.s.taskChanged(rec.ID)
	}}
	defer g.s.forgetTaskInput(rec.ID)
	defer g.s.dropMailbox(rec.ID)
	what := fmt.Sprintf("%s %s (MCP task %s)", rec.Endpoint, agentclient.SafeText(rec.Tool, 100), rec.ID)
	res, state := g.followCall(ctx, nil, what, p, rec.XMPPTaskID, resumed, hooks)
	if res == nil {
		return // the server stops: the task is followed again after a restart
	}
	raw, err := json.Marshal(res)
	if err != nil {
		return
	}
	_ = g.s.store.UpdateTask(context.Background(), rec.ID, mcpStatus(state), string(state), 0, raw)
	g.s.taskChanged(rec.ID)
}

// resumeTasks follows again the tasks a previous run left unsettled.
func (s *Server) resumeTasks(ctx context.Context) error {
	recs, err := s.store.UnsettledTasks(ctx, s.acct.JID().String())
	if err != nil {
		return err
	}
	for _, r := range recs {
		go s.agents.runTask(ctx, r, pin(r), true, nil)
	}
	return nil
}

// taskChanged wakes the tasks/result requests waiting for id.
func (s *Server) taskChanged(id string) {
	s.mu.Lock()
	ch := s.taskWait[id]
	delete(s.taskWait, id)
	s.mu.Unlock()
	if ch != nil {
		close(ch)
	}
	s.notifyStatus(id)
}

// taskWaiter returns a channel closed at the next change of task id.
func (s *Server) taskWaiter(id string) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch, ok := s.taskWait[id]
	if !ok {
		ch = make(chan struct{})
		s.taskWait[id] = ch
	}
	return ch
}

// tasksMethod serves tasks/get, tasks/result, tasks/list and
// tasks/cancel on a wrapped connection, until the client cancels it.
func (c *tasksConn) tasksMethod(ctx context.Context, lr *layerRequest, req *jsonrpc.Request) {
	defer func() {
		lr.cancel()
		c.mu.Lock()
		if c.serving[idKey(req.ID)] == lr {
			delete(c.serving, idKey(req.ID))
		}
		c.mu.Unlock()
	}()
	res, err := c.s.tasksMethod(ctx, c.owner, req, c.asker(ctx))
	c.reply(req.ID, res, err)
}

// tasksMethod serves tasks/get, tasks/result, tasks/list and
// tasks/cancel, for owner's own tasks only. A tasks/result waiting for
// the task offers ask for its input requests.
func (s *Server) tasksMethod(ctx context.Context, owner string, req *jsonrpc.Request, ask *asker) (any, error) {
	var p struct {
		TaskID string `json:"taskId"`
	}
	json.Unmarshal(req.Params, &p)
	if req.Method == "tasks/list" {
		recs, err := s.store.Tasks(ctx, s.acct.JID().String(), owner, maxListedTasks)
		if err != nil {
			return nil, err
		}
		list := []map[string]any{}
		for _, r := range recs {
			list = append(list, s.taskObject(r))
		}
		return map[string]any{"tasks": list}, nil
	}
	noTask := invalidParams("no task %q", agentclient.SafeText(p.TaskID, 128))
	rec, err := s.store.Task(ctx, s.acct.JID().String(), owner, p.TaskID)
	if errors.Is(err, ErrNoTask) {
		// Unknown, expired and another caller's are the same answer.
		return nil, noTask
	}
	if err != nil {
		return nil, err
	}
	if rec.Result == nil && (req.Method == "tasks/result" || req.Method == "tasks/cancel") {
		done, err := s.startWait(owner)
		if err != nil {
			return nil, err
		}
		defer done()
	}
	switch req.Method {
	case "tasks/get":
		return s.taskAnswer(rec, nil), nil
	case "tasks/result":
		if rec.Result == nil && ask != nil {
			defer s.addAsker(rec.ID, ask)()
		}
		for rec.Result == nil {
			wait := s.taskWaiter(rec.ID)
			select {
			case <-wait:
			case <-time.After(taskPollInterval):
			case <-ctx.Done():
				return nil, errors.New("the request ended before the task settled")
			}
			if rec, err = s.store.Task(ctx, s.acct.JID().String(), owner, p.TaskID); err != nil {
				return nil, noTask
			}
		}
		var res map[string]any
		json.Unmarshal(rec.Result, &res)
		meta, _ := res["_meta"].(map[string]any)
		if meta == nil {
			meta = map[string]any{}
		}
		meta[metaRelatedTask] = map[string]any{"taskId": rec.ID}
		meta[metaXMPP] = xmppMeta(rec)
		res["_meta"] = meta
		return res, nil
	case "tasks/cancel":
		return s.cancelTask(ctx, owner, rec)
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "no method " + req.Method}
}

// startWait counts a tasks/result or tasks/cancel of owner that waits for
// its task, until done; past maxTaskWaits it is refused.
func (s *Server) startWait(owner string) (done func(), err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.waits[owner] >= maxTaskWaits {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf(
			"too many tasks/result and tasks/cancel requests of this caller wait for their tasks (at most %d): retry once one has answered, or poll tasks/get", maxTaskWaits)}
	}
	s.waits[owner]++
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.waits[owner]--; s.waits[owner] <= 0 {
			delete(s.waits, owner)
		}
	}, nil
}

// taskAnswer is a Task with the XMPP mapping and the losses in _meta.
func (s *Server) taskAnswer(rec TaskRecord, losses []string) map[string]any {
	t := s.taskObject(rec)
	if rec.Status == "working" {
		losses = append(losses, lossStateDetail)
	}
	meta := map[string]any{metaXMPP: xmppMeta(rec), metaRelatedTask: map[string]any{"taskId": rec.ID}}
	if len(losses) > 0 {
		meta[metaLoss] = losses
	}
	t["_meta"] = meta
	return t
}

// cancelTask sends the XMPP <cancel/> and answers cancelled only once
// XMPP settles cancelled: <cancel-accepted/> alone is never an MCP
// cancellation.
func (s *Server) cancelTask(ctx context.Context, owner string, rec TaskRecord) (any, error) {
	if rec.Result != nil {
		return nil, invalidParams("task %s is already %s", rec.ID, rec.Status)
	}
	ep, _ := jid.Parse(rec.Endpoint)
	_, err := s.agents.ac.Cancel(ctx, ep, task.Cancel{TaskID: rec.XMPPTaskID}, -1)
	var settled *agentclient.SettledError
	if err != nil && !errors.As(err, &settled) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the XMPP cancellation failed: " + agentclient.SafeText(err.Error(), 400)}
	}
	deadline := time.After(taskCancelWait)
	for rec.Result == nil {
		wait := s.taskWaiter(rec.ID)
		select {
		case <-wait:
		case <-time.After(taskPollInterval):
		case <-deadline:
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf(
				"the XMPP cancellation of task %s was accepted, but the task has not settled: it may still complete or fail; poll tasks/get", rec.ID)}
		case <-ctx.Done():
			return nil, errors.New("the request ended before the task settled")
		}
		id := rec.ID
		var err error
		if rec, err = s.store.Task(ctx, s.acct.JID().String(), owner, id); err != nil {
			return nil, invalidParams("no task %q", id)
		}
	}
	if rec.Status != "cancelled" {
		return nil, invalidParams("task %s settled as %s before the cancellation took effect; read it with tasks/result", rec.ID, rec.Status)
	}
	return s.taskAnswer(rec, []string{lossCancel}), nil
}
