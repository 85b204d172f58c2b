package mcpface

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"time"

	"agentgw/agentclient"
	"agentgw/mcpface/layer"
	"agentgw/scope"
	"agentgw/task"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"mellium.im/xmpp/jid"
)

// The tasks extension of MCP 2026-07-28 (io.modelcontextprotocol/tasks,
// modelcontextprotocol/ext-tasks), over the same durable tasks as the
// 2025-11-25 Tasks (tasks.go): a current-revision client that declares the
// extension in a tools/call's _meta gets a task (resultType "task") for
// CallAgentTool and the projected agent tools; tasks/get answers status,
// progress, the pending input requests and the result; tasks/update
// carries the answers to input requests (the ProtoXEP's provide-input);
// tasks/cancel sends the XMPP <cancel/>. A handle is its creator's: the
// token over HTTP, the account over stdio; any other caller gets the
// answer of an unknown handle. go-sdk serves the revision (_meta, the
// headers, serverInfo); this receiving middleware serves the extension.

// ExtTasks is the extension's identifier.
const ExtTasks = "io.modelcontextprotocol/tasks"

// codeMissingCapability is the revision's Missing Required Client
// Capability.
const codeMissingCapability = -32021

// inputWait bounds how long tasks/get waits for the question of a task
// just turned input_required, so that its answer carries inputRequests.
const inputWait = 2 * time.Second

// extParams are the params of tasks/get, tasks/update and tasks/cancel.
type extParams struct {
	mcp.ParamsBase
	TaskID         string                     `json:"taskId"`
	InputResponses map[string]json.RawMessage `json:"inputResponses,omitempty"`
}

// extTask is a Task of the extension: CreateTaskResult (resultType
// "task") or a DetailedTask of tasks/get (resultType "complete").
type extTask struct {
	mcp.ResultBase
	ResultType     string                    `json:"resultType"`
	TaskID         string                    `json:"taskId"`
	Status         string                    `json:"status"`
	StatusMessage  string                    `json:"statusMessage,omitempty"`
	CreatedAt      string                    `json:"createdAt"`
	LastUpdatedAt  string                    `json:"lastUpdatedAt"`
	TTLMs          int64                     `json:"ttlMs"`
	PollIntervalMs int64                     `json:"pollIntervalMs"`
	InputRequests  map[string]map[string]any `json:"inputRequests,omitempty"`
	Result         json.RawMessage           `json:"result,omitempty"`
	Error          *jsonrpc.Error            `json:"error,omitempty"`
}

// extAck is the empty acknowledgement of tasks/update and tasks/cancel.
type extAck struct {
	mcp.ResultBase
	ResultType string `json:"resultType"`
}

// registerExtTasks declares the extension's methods to go-sdk; the
// middleware serves them (it knows the caller's token).
func (s *Server) registerExtTasks() {
	for _, m := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		_ = mcp.AddReceivingCustomMethod(s.mcp, m, func(context.Context, *mcp.ServerSession, *extParams) (*extAck, error) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method not found"}
		})
	}
}

// revisionRequest is what go-sdk's requests tell of the current revision.
type revisionRequest interface {
	ProtocolVersion() string
	ClientCapabilities() *mcp.ClientCapabilities
}

// declaresExtTasks reports whether req is of the current revision and its
// client declares the tasks extension.
func declaresExtTasks(req mcp.Request) (current, declared bool) {
	r, ok := req.(revisionRequest)
	if !ok || !layer.IsCurrent(r.ProtocolVersion()) {
		return false, false
	}
	c := r.ClientCapabilities()
	if c == nil {
		return true, false
	}
	_, declared = c.Extensions[ExtTasks]
	return true, declared
}

// requestOwner is the owner of the tasks of req's caller: its token over
// HTTP, the account over stdio ("" for none).
func (s *Server) requestOwner(req mcp.Request) string {
	if ex := req.GetExtra(); ex != nil && ex.TokenInfo != nil {
		return tokenOwner(s.acct.JID().String(), ex.TokenInfo.UserID)
	}
	if s.opts.CheckScopes {
		return ""
	}
	return "account:" + s.acct.JID().String()
}

// extTasks is the receiving middleware of the extension.
func (s *Server) extTasks(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "server/discover":
			res, err := next(ctx, method, req)
			if d, ok := res.(*mcp.DiscoverResult); ok && err == nil {
				caps := &mcp.ServerCapabilities{}
				if d.Capabilities != nil {
					c := *d.Capabilities
					caps = &c
				}
				ext := map[string]any{ExtTasks: map[string]any{}}
				for k, v := range caps.Extensions {
					ext[k] = v
				}
				caps.Extensions = ext
				d.Capabilities = caps
			}
			return res, err
		case "tools/call":
			current, declared := declaresExtTasks(req)
			if !current {
				return next(ctx, method, req)
			}
			s.agents.proj.waitReady(ctx)
			ctr, ok := req.(*mcp.CallToolRequest)
			if !ok {
				return next(ctx, method, req)
			}
			support, directed := s.taskSupport(ctr.Params.Name)
			if support == "" || support == "forbidden" {
				return next(ctx, method, req) // a plain call (MRTR)
			}
			if sc := s.toolScope(ctr.Params.Name); sc == "" || !s.requestScopes(req).Has(sc) {
				return next(ctx, method, req) // the scope check refuses it
			}
			if !declared {
				if support == "required" {
					return nil, missingExtTasks("tool " + agentclient.SafeText(ctr.Params.Name, 128) + " runs only as a task")
				}
				return next(ctx, method, req)
			}
			owner := s.requestOwner(req)
			if owner == "" {
				return next(ctx, method, req)
			}
			if len(ctr.Params.InputResponses) > 0 || ctr.Params.RequestState != "" {
				if !directed {
					return next(ctx, method, req) // MRTR's retry
				}
				return s.extRetry(ctx, owner, ctr)
			}
			return s.extCall(ctx, owner, ctr, directed)
		case "tasks/get", "tasks/update", "tasks/cancel":
			current, declared := declaresExtTasks(req)
			if !current {
				return next(ctx, method, req)
			}
			if !declared {
				return nil, missingExtTasks(method)
			}
			if !s.requestScopes(req).Has(scope.AgentsCall) {
				if s.refused != nil {
					s.refused(ctx, method, scope.AgentsCall)
				}
				return nil, forbidden(method, scope.AgentsCall)
			}
			p, _ := req.GetParams().(*extParams)
			owner := s.requestOwner(req)
			if p == nil || owner == "" {
				return nil, invalidParams("no task")
			}
			return s.extMethod(ctx, owner, method, p)
		}
		return next(ctx, method, req)
	}
}

// missingExtTasks is the revision's Missing Required Client Capability
// error for the tasks extension, naming it in requiredCapabilities.
func missingExtTasks(what string) error {
	data, _ := json.Marshal(map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{ExtTasks: map[string]any{}}}})
	return &jsonrpc.Error{Code: codeMissingCapability, Message: "Missing required client capability " + ExtTasks + ": " + what, Data: data}
}

// taskSupport is the execution.taskSupport of a tool that can run as a
// task ("" for the others): CallAgentTool is optional, and so is a
// projected tool, unless its manifest declares an execution (a tool
// imported from an MCP server). directed reports such a declaration: the
// agent then decides, as an MCP server does, whether the call becomes a
// task (see extAwait).
func (s *Server) taskSupport(name string) (support string, directed bool) {
	if name == "CallAgentTool" {
		return "optional", false
	}
	_, _, exec, ok := s.agents.proj.lookup(name)
	if !ok {
		return "", false
	}
	var e struct {
		TaskSupport string `json:"taskSupport"`
	}
	if len(exec) == 0 || json.Unmarshal(exec, &e) != nil || e.TaskSupport == "" {
		return "optional", false
	}
	return e.TaskSupport, true
}

// directedWait bounds how long the call of a directed tool waits for its
// agent to show how it runs (see extAwait) before it answers a task.
const directedWait = 5 * time.Second

// extCall starts an agent call as an extension task, answered once the
// XMPP task is accepted and stored (tasks/get resolves it); for a
// directed tool, once extAwait decides.
func (s *Server) extCall(ctx context.Context, owner string, ctr *mcp.CallToolRequest, directed bool) (mcp.Result, error) {
	raw, err := json.Marshal(map[string]any{"name": ctr.Params.Name, "arguments": ctr.Params.Arguments})
	if err != nil {
		return nil, err
	}
	res, id, err := s.taskCall(owner, &jsonrpc.Request{Method: "tools/call", Params: raw})
	if err != nil {
		return nil, err
	}
	if id == "" {
		if r, ok := res.(*mcp.CallToolResult); ok {
			return &typedCallResult{r, "complete"}, nil
		}
		return nil, errors.New("the task was not created")
	}
	s.addMailbox(id)
	if directed {
		return s.extAwait(ctx, ctr, owner, id, "")
	}
	rec, err := s.store.Task(ctx, s.acct.JID().String(), owner, id)
	if err != nil {
		return nil, err
	}
	t := s.extTaskOf(rec, false)
	t.ResultType = "task"
	return t, nil
}

// typedCallResult is a CallToolResult that the middleware answers, with
// the resultType that go-sdk gives only to its tool handlers' results:
// complete (content an array), or input_required (no content).
type typedCallResult struct {
	*mcp.CallToolResult
	resultType string
}

// MarshalJSON implements json.Marshaler.
func (r *typedCallResult) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(r.CallToolResult)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	if c, ok := m["content"]; !ok || string(c) == "null" {
		delete(m, "content")
		if r.resultType == "complete" {
			m["content"] = json.RawMessage("[]")
		}
	}
	m["resultType"], _ = json.Marshal(r.resultType)
	return json.Marshal(m)
}

// extRetry is the retry of a directed tool's input_required result: the
// answer goes to the same ProtoXEP task, and extAwait decides again.
func (s *Server) extRetry(ctx context.Context, owner string, ctr *mcp.CallToolRequest) (mcp.Result, error) {
	st, ok := s.openState(owner, ctr.Params.RequestState)
	if !ok {
		return nil, errBadState
	}
	if _, err := s.store.Task(ctx, s.acct.JID().String(), owner, st.Task); err != nil {
		return nil, errBadState
	}
	s.addMailbox(st.Task)
	if resp, ok := ctr.Params.InputResponses[st.Key]; ok {
		raw, err := json.Marshal(resp)
		if err != nil {
			return nil, invalidParams("inputResponses: %v", err)
		}
		s.answerInput(st.Task, st.Key, raw)
	}
	return s.extAwait(ctx, ctr, owner, st.Task, st.Key)
}

// extAwait answers the call of a directed tool, whose agent decides
// whether it becomes a task, as an MCP server does at 2026-07-28 (MRTR
// first, then a task, is the extension's composition): its result if it
// settles first (the immediate result), an input_required result (MRTR)
// if it asks for input other than answered before any progress, and the
// task once it reports progress (an MCP upstream's task creation does)
// or after directedWait.
func (s *Server) extAwait(ctx context.Context, ctr *mcp.CallToolRequest, owner, id, answered string) (mcp.Result, error) {
	deadline := time.After(directedWait)
	for {
		rec, err := s.store.Task(ctx, s.acct.JID().String(), owner, id)
		if err != nil {
			return nil, err
		}
		if rec.Result != nil {
			var res mcp.CallToolResult
			if err := json.Unmarshal(rec.Result, &res); err != nil {
				return nil, err
			}
			return &typedCallResult{&res, "complete"}, nil
		}
		_, progressed := s.progressOf(id)
		q := s.pendingInput(id)
		if !progressed && q != nil && q.key != answered && rec.Status == string(task.StateInputRequired) && declaresElicitationNow(ctr) {
			return &typedCallResult{&mcp.CallToolResult{
				InputRequests: mcp.InputRequestMap{q.key: q.params},
				RequestState:  s.sealState(owner, mrtrState{Task: id, Key: q.key, Expires: time.Now().Add(mrtrStateTTL).Unix()}),
				Meta:          mcp.Meta{metaXMPP: xmppMeta(rec)},
			}, "input_required"}, nil
		}
		if progressed || q != nil && q.key != answered {
			t := s.extTaskOf(rec, false)
			t.ResultType = "task"
			return t, nil
		}
		changed := s.taskWaiter(id)
		var posted <-chan struct{}
		if mb := s.mailboxOf(id); mb != nil {
			mb.mu.Lock()
			posted = mb.posted
			mb.mu.Unlock()
		}
		select {
		case <-changed:
		case <-posted:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			t := s.extTaskOf(rec, false)
			t.ResultType = "task"
			return t, nil
		case <-ctx.Done():
			// The client gave up the call before it learnt the task's
			// handle: cancel the task, as for MRTR.
			ep, _ := jid.Parse(rec.Endpoint)
			go func() {
				cctx, cancel := context.WithTimeout(s.runCtx, taskCancelWait)
				defer cancel()
				_, _ = s.agents.ac.Cancel(cctx, ep, task.Cancel{TaskID: rec.XMPPTaskID, HasReason: true, Reason: "the MCP client ended the call"}, -1)
			}()
			return nil, ctx.Err()
		}
	}
}

// extMethod serves tasks/get, tasks/update and tasks/cancel for owner's
// own tasks.
func (s *Server) extMethod(ctx context.Context, owner, method string, p *extParams) (mcp.Result, error) {
	rec, err := s.store.Task(ctx, s.acct.JID().String(), owner, p.TaskID)
	if errors.Is(err, ErrNoTask) {
		// Unknown, expired and another caller's are the same answer.
		return nil, invalidParams("Failed to retrieve task: no task %q", agentclient.SafeText(p.TaskID, 128))
	}
	if err != nil {
		return nil, err
	}
	switch method {
	case "tasks/get":
		if rec.Result == nil {
			s.addMailbox(rec.ID)
		}
		if rec.Status == string(task.StateInputRequired) && rec.Result == nil && s.pendingInput(rec.ID) == nil {
			s.awaitInput(ctx, rec.ID, inputWait)
		}
		return s.extTaskOf(rec, true), nil
	case "tasks/update":
		if rec.Result == nil {
			s.addMailbox(rec.ID)
			for key, raw := range p.InputResponses {
				s.answerInput(rec.ID, key, raw)
			}
		}
		return &extAck{ResultType: "complete"}, nil
	default: // tasks/cancel: cooperative, acknowledged at once
		if rec.Result == nil {
			ep, _ := jid.Parse(rec.Endpoint)
			go func() {
				cctx, cancel := context.WithTimeout(s.runCtx, taskCancelWait)
				defer cancel()
				_, _ = s.agents.ac.Cancel(cctx, ep, task.Cancel{TaskID: rec.XMPPTaskID}, -1)
			}()
		}
		return &extAck{ResultType: "complete"}, nil
	}
}

// extTaskOf is the extension's Task of a record. An XMPP failure is a
// tool's failure, not a JSON-RPC error: completed, with the isError
// result (the XMPP state is in _meta). detail adds the pending input
// requests and the progress.
func (s *Server) extTaskOf(rec TaskRecord, detail bool) *extTask {
	t := &extTask{ResultType: "complete", TaskID: rec.ID, Status: rec.Status,
		StatusMessage: "XMPP task " + rec.XMPPTaskID + " is " + rec.XMPPState,
		CreatedAt:     rec.Created.UTC().Format(time.RFC3339Nano), LastUpdatedAt: rec.Updated.UTC().Format(time.RFC3339Nano),
		TTLMs: rec.TTL.Milliseconds(), PollIntervalMs: taskPollInterval.Milliseconds()}
	meta := mcp.Meta{metaXMPP: xmppMeta(rec)}
	var losses []string
	if rec.Result == nil && (rec.Status == "completed" || rec.Status == "failed" || rec.Status == "cancelled") {
		// XMPP has settled but the result is not stored yet: a terminal
		// status comes with its result, so it is still working.
		t.Status = "working"
	}
	switch t.Status {
	case "failed":
		// The XMPP task failed without a tool result: the extension's
		// failed, with a JSON-RPC error (a tool's own error is a
		// completed task with an isError result).
		t.Error = failedError(rec)
	case "working":
		losses = append(losses, lossStateDetail)
	}
	if rec.Result != nil && (t.Status == "completed") {
		t.Result = rec.Result
	}
	if detail && rec.Result == nil {
		if pr, ok := s.progressOf(rec.ID); ok {
			if pr.Message != "" {
				t.StatusMessage = pr.Message
			}
			m := map[string]any{"message": pr.Message}
			if pr.Percent != nil {
				m["percent"] = *pr.Percent
			}
			meta["agentgw/progress"] = m
		}
		if t.Status == string(task.StateInputRequired) {
			if in := s.pendingInput(rec.ID); in != nil {
				t.StatusMessage = in.params.Message
				t.InputRequests = map[string]map[string]any{in.key: {"method": "elicitation/create", "params": in.params}}
			} else {
				// The question is not posed yet: MCP's input_required
				// needs inputRequests.
				t.Status = "working"
			}
		}
	}
	if len(losses) > 0 {
		meta[metaLoss] = losses
	}
	t.Meta = meta
	return t
}

// failedError is the JSON-RPC error of a failed task: Internal error,
// with the XMPP failure's text, and its code and retryability as data.
func failedError(rec TaskRecord) *jsonrpc.Error {
	var res mcp.CallToolResult
	msg := "XMPP task " + rec.XMPPTaskID + " failed"
	data := map[string]any{"xmppTaskId": rec.XMPPTaskID}
	if json.Unmarshal(rec.Result, &res) == nil {
		if len(res.Content) > 0 {
			if tc, ok := res.Content[0].(*mcp.TextContent); ok {
				msg = tc.Text
			}
		}
		for _, k := range []string{"agentgw/error-code", "agentgw/retryable"} {
			if v, ok := res.Meta[k]; ok {
				data[k] = v
			}
		}
	}
	raw, _ := json.Marshal(data)
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: msg, Data: raw}
}

// taskProgress is the last progress of a followed task.
type taskProgress struct {
	Percent *float64
	Message string
}

// setProgress records the last progress event of MCP task id.
func (s *Server) setProgress(id string, p taskProgress) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.progress == nil {
		s.progress = map[string]taskProgress{}
	}
	s.progress[id] = p
}

func (s *Server) progressOf(id string) (taskProgress, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.progress[id]
	return p, ok
}

// mailbox is the asker of an extension task: a question the follower
// poses waits as the task's inputRequests until a tasks/update answers
// it.
type mailbox struct {
	mu      sync.Mutex
	pending *posed
	posted  chan struct{} // closed when a question is posed
	remove  func()
}

// posed is one input request of a task, under a key never used again.
type posed struct {
	key    string
	params *mcp.ElicitParams
	answer chan json.RawMessage
}

// addMailbox makes task id's input requests wait for tasks/update (once).
func (s *Server) addMailbox(id string) {
	s.mu.Lock()
	if s.mailboxes == nil {
		s.mailboxes = map[string]*mailbox{}
	}
	if s.mailboxes[id] != nil {
		s.mu.Unlock()
		return
	}
	mb := &mailbox{posted: make(chan struct{})}
	s.mailboxes[id] = mb
	s.mu.Unlock()
	mb.remove = s.addAsker(id, &asker{canElicit: true, elicit: func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		return mb.ask(ctx, p)
	}})
}

// dropMailbox forgets the mailbox of a task no longer followed.
func (s *Server) dropMailbox(id string) {
	s.mu.Lock()
	mb := s.mailboxes[id]
	delete(s.mailboxes, id)
	delete(s.progress, id)
	s.mu.Unlock()
	if mb != nil && mb.remove != nil {
		mb.remove()
	}
}

// ask poses p and waits for its answer.
func (mb *mailbox) ask(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	q := &posed{key: randomID("input-"), params: p, answer: make(chan json.RawMessage, 1)}
	mb.mu.Lock()
	mb.pending = q
	close(mb.posted)
	mb.posted = make(chan struct{})
	mb.mu.Unlock()
	defer func() {
		mb.mu.Lock()
		if mb.pending == q {
			mb.pending = nil
		}
		mb.mu.Unlock()
	}()
	select {
	case raw := <-q.answer:
		var res mcp.ElicitResult
		if err := json.Unmarshal(raw, &res); err != nil || !slices.Contains([]string{"accept", "decline", "cancel"}, res.Action) {
			return nil, errors.New("the input response is not an ElicitResult (an action accept, decline or cancel and, on accept, an object content)")
		}
		return &res, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (s *Server) mailboxOf(id string) *mailbox {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mailboxes[id]
}

// pendingInput is the question task id waits to have answered, if any.
func (s *Server) pendingInput(id string) *posed {
	mb := s.mailboxOf(id)
	if mb == nil {
		return nil
	}
	mb.mu.Lock()
	defer mb.mu.Unlock()
	return mb.pending
}

// awaitInput waits up to d for task id's question to be posed.
func (s *Server) awaitInput(ctx context.Context, id string, d time.Duration) {
	mb := s.mailboxOf(id)
	if mb == nil {
		return
	}
	mb.mu.Lock()
	if mb.pending != nil {
		mb.mu.Unlock()
		return
	}
	posted := mb.posted
	mb.mu.Unlock()
	select {
	case <-posted:
	case <-time.After(d):
	case <-ctx.Done():
	}
}

// answerInput hands the answer raw to task id's question key; any other
// key (never issued, answered, superseded) is ignored, as the extension
// says.
func (s *Server) answerInput(id, key string, raw json.RawMessage) {
	q := s.pendingInput(id)
	if q == nil || q.key != key {
		return
	}
	select {
	case q.answer <- raw:
	default: // answered already
	}
}
