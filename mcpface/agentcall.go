package mcpface

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"agentgw/agentclient"
	"agentgw/manifest"
	"agentgw/task"
	"agentgw/wire"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"mellium.im/xmpp/jid"
	"mellium.im/xmpp/stanza"
)

// Timing of a call's follow.
const (
	// callPoll is how long a call waits without an event before it asks
	// for the task state, doubling up to callMaxPoll.
	callPoll    = 5 * time.Second
	callMaxPoll = 60 * time.Second
	// cancelSettleTimeout bounds the wait for a task cancelled because
	// its MCP client went away to settle.
	cancelSettleTimeout = 30 * time.Second
)

// ToolDescription is one tool of DescribeAgent.
type ToolDescription struct {
	Name         string               `json:"Name"`
	Title        string               `json:"Title,omitempty"`
	Description  string               `json:"Description,omitempty"`
	Node         string               `json:"Node"`
	Features     []string             `json:"Features"`
	InputSchema  json.RawMessage      `json:"InputSchema"`
	OutputSchema json.RawMessage      `json:"OutputSchema,omitempty"`
	Annotations  *mcp.ToolAnnotations `json:"Annotations,omitempty"`
}

// AgentDescription is the result of DescribeAgent.
type AgentDescription struct {
	Success  bool              `json:"Success"`
	Message  string            `json:"Message"`
	Jid      string            `json:"Jid"`
	Name     string            `json:"Name,omitempty"`
	Info     map[string]string `json:"Info"`
	Features []string          `json:"Features"`
	Version  string            `json:"Version"`
	Hash     string            `json:"Hash"`
	Manifest json.RawMessage   `json:"Manifest"`
	Tools    []ToolDescription `json:"Tools"`
}

func (g *agents) describeAgent(ctx context.Context, _ *mcp.CallToolRequest, in map[string]json.RawMessage) *mcp.CallToolResult {
	a, bad := strArgs("DescribeAgent", in, "Jid")
	if bad != nil {
		return bad
	}
	ep, bad := endpointJID("DescribeAgent", a[0])
	if bad != nil {
		return bad
	}
	info, err := g.ac.CheckEndpoint(ctx, ep)
	if err != nil {
		return xmppFailure("DescribeAgent "+ep.String(), err)
	}
	m, err := g.ac.Manifest(ctx, ep)
	if err != nil {
		return xmppFailure("DescribeAgent "+ep.String()+": the manifest", err)
	}
	nodes, err := g.ac.Tools(ctx, m)
	if err != nil {
		return xmppFailure("DescribeAgent "+ep.String()+": the tools", err)
	}
	d := AgentDescription{Success: true, Jid: ep.String(), Name: info.Name(), Info: info.Values(), Features: info.Features,
		Version: m.Version, Hash: m.HashBase64(), Manifest: json.RawMessage(m.Canonical), Tools: []ToolDescription{}}
	for _, n := range nodes {
		t := n.Tool
		td := ToolDescription{Name: t.Name, Title: t.Title, Description: t.Description, Node: n.Node,
			Features: task.ToolFeatures(t), InputSchema: t.InputSchema, Annotations: annotations(t)}
		if t.OutputSchema != nil {
			td.OutputSchema = t.OutputSchema
		}
		d.Tools = append(d.Tools, td)
	}
	d.Message = fmt.Sprintf("%s version %s: %d tools", ep, m.Version, len(d.Tools))
	return jsonResult(d)
}

// annotations is the MCP form of a tool's annotations.
func annotations(t *manifest.Tool) *mcp.ToolAnnotations {
	a := t.Annotations
	if a.Title == "" && a.ReadOnly == nil && a.Destructive == nil && a.Idempotent == nil && a.OpenWorld == nil {
		return nil
	}
	out := &mcp.ToolAnnotations{Title: a.Title, DestructiveHint: a.Destructive, OpenWorldHint: a.OpenWorld}
	if a.ReadOnly != nil {
		out.ReadOnlyHint = *a.ReadOnly
	}
	if a.Idempotent != nil {
		out.IdempotentHint = *a.Idempotent
	}
	return out
}

func (g *agents) callAgentTool(ctx context.Context, req *mcp.CallToolRequest, in map[string]json.RawMessage) *mcp.CallToolResult {
	pc, bad := g.prepareAgentCall(ctx, in)
	if bad != nil {
		return bad
	}
	res, err := g.agentCall(ctx, req, pc)
	if err != nil {
		return errorResult("CallAgentTool: %s", agentclient.SafeText(err.Error(), 600))
	}
	return res
}

// preparedCall is a call checked and pinned, ready to invoke.
type preparedCall struct {
	what string
	pin  *agentclient.Pin
	tool string
	args json.RawMessage
}

// prepareAgentCall checks CallAgentTool's arguments and pins the tool.
func (g *agents) prepareAgentCall(ctx context.Context, in map[string]json.RawMessage) (preparedCall, *mcp.CallToolResult) {
	a, bad := strArgs("CallAgentTool", in, "Jid", "Tool", "Version", "Hash")
	if bad != nil {
		return preparedCall{}, bad
	}
	ep, bad := endpointJID("CallAgentTool", a[0])
	if bad != nil {
		return preparedCall{}, bad
	}
	toolName, version, hash := a[1], a[2], a[3]
	args := in["Arguments"]
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage(`{}`)
	}
	if (version == "") != (hash == "") {
		return preparedCall{}, errorResult("CallAgentTool: Version and Hash go together")
	}
	var pinned [32]byte
	if hash != "" {
		d, err := wire.ParseHashBase64(hash)
		if err != nil {
			return preparedCall{}, errorResult("CallAgentTool: Hash must be the Base64 SHA-256 manifest hash")
		}
		pinned = d
	}
	what := fmt.Sprintf("CallAgentTool %s %s", ep, agentclient.SafeText(toolName, 100))
	if !manifest.ValidToolName(toolName) {
		return preparedCall{}, errorResult("%s: not a tool name", what)
	}
	var p *agentclient.Pin
	m, err := g.manifestOf(ctx, ep)
	switch {
	case err != nil && version != "" && agentclient.IsRefusal(err):
		// An agent one may invoke but not see: the pins given are all
		// there is, and the target validates the arguments.
		p = agentclient.PinFlags(ep, version, pinned)
	case err != nil:
		return preparedCall{}, xmppFailure(what, err)
	case version != "" && (m.Version != version || m.Hash != pinned):
		return preparedCall{}, errorResult("%s: stale pin: the active version of %s is %s (sha-256 %s), not %s (sha-256 %s); nothing was invoked",
			what, ep, agentclient.SafeText(m.Version, 64), m.HashBase64(), agentclient.SafeText(version, 64), hash)
	default:
		if p, err = g.ac.PinTool(ctx, m, toolName); err != nil {
			return preparedCall{}, g.pinFailure(what, m, toolName, err)
		}
	}
	return preparedCall{what: what, pin: p, tool: toolName, args: args}, nil
}

// manifestOf checks the endpoint and retrieves its verified manifest.
func (g *agents) manifestOf(ctx context.Context, ep jid.JID) (*manifest.Manifest, error) {
	info, err := g.ac.CheckEndpoint(ctx, ep)
	if err != nil {
		return nil, err
	}
	if !info.HasFeature(task.NS) {
		return nil, fmt.Errorf("%w: %s does not advertise %s", agentclient.ErrPin, ep, task.NS)
	}
	return g.ac.Manifest(ctx, ep)
}

// pinFailure describes a failed PinTool.
func (g *agents) pinFailure(what string, m *manifest.Manifest, toolName string, err error) *mcp.CallToolResult {
	if errors.Is(err, agentclient.ErrNoTool) {
		return errorResult("%s: %s version %s has no tool %q; nothing was invoked", what, m.JID, agentclient.SafeText(m.Version, 64), agentclient.SafeText(toolName, 100))
	}
	return xmppFailure(what, err)
}

// callHooks let MCP Tasks observe a call: accepted runs once the XMPP
// task exists; state runs at every change of state.
type callHooks struct {
	accepted func(acc task.Accepted, p *agentclient.Pin, requestID string) error
	state    func(tr *agentclient.Tracker)
	// detached: call returns once accepted (nil), and followCall returns
	// without cancelling when ctx ends (the server stops; the task goes
	// on and is followed again after a restart).
	detached bool
	// followed, if set, runs once the task's events are routed to the
	// call.
	followed func()
	// mcpTask is the MCP task followed, if any: its input requests wait
	// for a tasks/result to elicit through (taskinput.go).
	mcpTask string
}

// call invokes the pinned tool with a CSPRNG request ID (retrying the
// identical request while the answer is lost), follows the task to its
// end (progress to the caller's progress token, input through
// elicitation, the caller's cancellation to an XMPP <cancel/>, lost
// events recovered from the task state) and returns the task's
// CallToolResult whole.
func (g *agents) call(ctx context.Context, req *mcp.CallToolRequest, pc preparedCall, hooks *callHooks) *mcp.CallToolResult {
	what, p := pc.what, pc.pin
	args, err := p.CanonicalArgs(pc.args)
	if err != nil {
		return errorResult("%s: %s; nothing was invoked", what, agentclient.SafeText(err.Error(), 600))
	}
	reqID, err := agentclient.NewRequestID()
	if err != nil {
		return errorResult("%s: %v", what, err)
	}
	inv := task.Invoke{RequestID: reqID, Tool: pc.tool, Arguments: string(args)}
	// Events may overtake the acceptance: keep the endpoint's until the
	// task is followed (a detached call's runTask releases it then).
	release, handed := g.expect(p.Endpoint), false
	defer func() {
		if !handed {
			release()
		}
	}()
	acc, retried, err := g.ac.Invoke(ctx, p, inv)
	if err != nil {
		if agentclient.Condition(err) == stanza.ItemNotFound || agentclient.Condition(err) == stanza.Gone {
			return errorResult("%s: %s; the pinned version may no longer be invocable (stale pin): describe the agent again", what, agentclient.SafeText(err.Error(), 600))
		}
		return xmppFailure(what, err)
	}
	if hooks != nil && hooks.accepted != nil {
		if err := hooks.accepted(acc, p, reqID); err != nil {
			return errorResult("%s: %v", what, err)
		}
		if hooks.detached {
			// The follower (runTask) releases once it follows.
			hooks.followed, handed = release, true
			return nil
		}
	}
	res, _ := g.followCall(ctx, req, what, p, acc.TaskID, retried, hooks)
	return res
}

// followCall follows an accepted task to its result.
func (g *agents) followCall(ctx context.Context, req *mcp.CallToolRequest, what string, p *agentclient.Pin, taskID string, stateFirst bool, hooks *callHooks) (*mcp.CallToolResult, task.State) {
	events, stop := g.follow(taskID)
	defer stop()
	if hooks != nil && hooks.followed != nil {
		hooks.followed()
	}
	tr := agentclient.NewTracker(p, taskID)
	f := &callFollow{g: g, req: req, tr: tr, asked: map[string]bool{}, hooks: hooks}
	if hooks != nil {
		f.mcpTask = hooks.mcpTask
	}
	defer f.stopEliciting()
	fl := &agentclient.Follower{Client: g.ac, Tracker: tr, Poll: callPoll, MaxPoll: callMaxPoll, Events: events,
		Recovered: f.recovered, Wait: f.wait}
	fl.Observed = func(ctx context.Context, o agentclient.Observation) bool {
		switch o.Verdict {
		case agentclient.Applied:
			f.applied(ctx, o.Event)
		case agentclient.Gap, agentclient.Inconsistent:
			fl.Recover(ctx, "")
		}
		return false
	}
	if stateFirst {
		fl.Recover(ctx, "")
	}
	if fl.Run(ctx) != nil {
		f.stopEliciting()
		if hooks != nil && hooks.detached {
			return nil, tr.State
		}
		// notifications/cancelled (or the client went away): cancel
		// the XMPP task and see it settle.
		bg, cancel := context.WithTimeout(context.Background(), cancelSettleTimeout)
		g.cancelAndSettle(bg, tr, events)
		cancel()
		return errorResult("%s: cancelled by the MCP client; task %s %s", what, taskID, tr.State), tr.State
	}
	f.stopEliciting()
	if f.why != "" {
		res := errorResult("%s: the agent asked for input, but %s; task %s was cancelled (it settled as %s)", what, f.why, taskID, tr.State)
		res.Meta = mcp.Meta{"agentgw/xmpp-state": string(tr.State), "agentgw/xmpp-task-id": taskID}
		return res, tr.State
	}
	return g.result(ctx, what, tr), tr.State
}

// cancelAndSettle sends <cancel/> for the task and follows it until it
// settles or ctx ends, asking for its state every second.
func (g *agents) cancelAndSettle(ctx context.Context, tr *agentclient.Tracker, events <-chan wire.Element) {
	if _, err := g.ac.Cancel(ctx, tr.Pin.Endpoint, task.Cancel{TaskID: tr.TaskID}, -1); err != nil {
		return
	}
	fl := &agentclient.Follower{Client: g.ac, Tracker: tr, Poll: time.Second, MaxPoll: time.Second, Events: events,
		Recovered: func(context.Context, string, task.TaskState, bool, error, error) error { return nil }}
	fl.Observed = func(ctx context.Context, o agentclient.Observation) bool {
		if o.Verdict == agentclient.Gap || o.Verdict == agentclient.Inconsistent {
			fl.Recover(ctx, "")
		}
		return false
	}
	fl.Run(ctx)
}

// result turns the settled task into the MCP result: the completed
// task's CallToolResult whole; a failed or cancelled task as an isError
// result that says so.
func (g *agents) result(ctx context.Context, what string, tr *agentclient.Tracker) *mcp.CallToolResult {
	r, err := g.ac.SettledResult(ctx, tr.Pin.Endpoint, tr.TaskID)
	if err != nil {
		return errorResult("%s: task %s settled as %s, but its result could not be retrieved: %s", what, tr.TaskID, tr.State,
			agentclient.SafeText(err.Error(), 400))
	}
	return taskResultToMCP(what, r)
}

// taskResultToMCP maps a terminal task result to a CallToolResult.
func taskResultToMCP(what string, r task.TaskResult) *mcp.CallToolResult {
	switch r.State {
	case task.StateCompleted:
		var p struct {
			Result json.RawMessage `json:"result"`
		}
		var res mcp.CallToolResult
		if json.Unmarshal(r.Payload, &p) != nil || json.Unmarshal(p.Result, &res) != nil {
			return errorResult("%s: task %s completed with a result MCP cannot carry", what, r.TaskID)
		}
		if res.Content == nil {
			res.Content = []mcp.Content{}
		}
		return &res
	case task.StateCancelled:
		var p struct {
			Reason string `json:"reason"`
		}
		json.Unmarshal(r.Payload, &p)
		res := errorResult("%s: task %s was cancelled %s", what, r.TaskID, agentclient.SafeText(p.Reason, 400))
		res.Meta = mcp.Meta{"agentgw/xmpp-state": "cancelled", "agentgw/xmpp-task-id": r.TaskID}
		return res
	}
	f := agentclient.FailureOf(r.Payload)
	res := errorResult("%s: task %s failed: %s: %s", what, r.TaskID, agentclient.SafeText(f.Code, 128), agentclient.SafeText(f.Message, 600))
	res.Meta = mcp.Meta{"agentgw/xmpp-state": "failed", "agentgw/xmpp-task-id": r.TaskID, "agentgw/error-code": f.Code, "agentgw/retryable": f.Retryable}
	return res
}

// callFollow is the MCP side of one followed call.
type callFollow struct {
	g     *agents
	req   *mcp.CallToolRequest
	tr    *agentclient.Tracker
	asked map[string]bool
	hooks *callHooks
	// mcpTask is the MCP task followed, if any.
	mcpTask string
	// progress is the last progress value sent: MCP wants it to grow.
	progress float64
	// why, once set, is why an input request could not be answered (the
	// task was cancelled for it).
	why string
	// eliciting is the elicitation of an MCP task's input in flight.
	eliciting *elicitation
}

// elicitation is an MCP task's input request being elicited while its
// follower goes on following: the task may settle (its deadline, a
// tasks/cancel) before the client answers, and the question is then
// withdrawn.
type elicitation struct {
	in     agentclient.InputRequest
	cancel context.CancelFunc
	// done carries the client's answer (or why none came), as work for
	// the follower; buffered: the asking goroutine never waits.
	done chan func(context.Context)
}

// elicited is the channel of the elicitation in flight (nil: none).
func (f *callFollow) elicited() <-chan func(context.Context) {
	if f.eliciting == nil {
		return nil
	}
	return f.eliciting.done
}

// dropStaleElicitation withdraws the elicitation in flight once the task no
// longer waits for that input.
func (f *callFollow) dropStaleElicitation() {
	e := f.eliciting
	if e == nil {
		return
	}
	if f.tr.State == task.StateInputRequired && f.tr.Pending != nil && f.tr.Pending.RequestID == e.in.RequestID {
		return
	}
	f.stopEliciting()
}

// stopEliciting withdraws the elicitation in flight, if any, and waits
// until the client has been told (notifications/cancelled).
func (f *callFollow) stopEliciting() {
	if e := f.eliciting; e != nil {
		f.eliciting = nil
		e.cancel()
		<-e.done
	}
}

// recovered passes on a state adopted; a failed state request does not
// end the follow (the next poll asks again).
func (f *callFollow) recovered(_ context.Context, _ string, _ task.TaskState, adopted bool, _, err error) error {
	if err == nil && adopted && f.hooks != nil && f.hooks.state != nil {
		f.hooks.state(f.tr)
	}
	return nil
}

// wait withdraws an elicitation the task no longer waits for, asks for
// input if the task waits for some, and returns what wakes the follower
// besides events: a tasks/result request arriving, an elicitation's
// outcome.
func (f *callFollow) wait(ctx context.Context) (<-chan struct{}, <-chan func(context.Context)) {
	f.dropStaleElicitation()
	arrived := f.askerArrived()
	f.input(ctx)
	return arrived, f.elicited()
}

// applied passes on what an event means to the MCP client.
func (f *callFollow) applied(ctx context.Context, ev task.Event) {
	if f.hooks != nil && f.hooks.state != nil {
		f.hooks.state(f.tr)
	}
	if ev.Type != task.EventProgress {
		return
	}
	var p struct {
		Percent *float64 `json:"percent"`
		Stage   string   `json:"stage"`
		Message string   `json:"message"`
	}
	json.Unmarshal(ev.Payload, &p)
	if f.mcpTask != "" {
		msg := p.Message
		if msg == "" {
			msg = p.Stage
		}
		f.g.s.setProgress(f.mcpTask, taskProgress{Percent: p.Percent, Message: msg})
	}
	if f.req == nil || f.req.Session == nil {
		return
	}
	token := f.req.Params.GetProgressToken()
	if token == nil {
		return
	}
	n := math.Nextafter(f.progress, math.Inf(1))
	params := &mcp.ProgressNotificationParams{ProgressToken: token, Message: p.Message,
		Meta: mcp.Meta{"agentgw/xmpp-task-id": f.tr.TaskID, "agentgw/xmpp-revision": ev.Revision}}
	if p.Percent != nil && *p.Percent > f.progress {
		n = *p.Percent
		params.Total = 100
	} else if p.Percent == nil {
		n = math.Floor(f.progress) + 1
	}
	if params.Message == "" {
		params.Message = p.Stage
	}
	params.Progress, f.progress = n, n
	_ = f.req.Session.NotifyProgress(ctx, params)
}

// input answers a pending input request through MCP elicitation when the
// client supports it and the schema fits what elicitation can express;
// otherwise the task is cancelled, and the call ends with an isError
// result that says why (docs/mcp.md). A plain call asks through its own
// session; an MCP task through the tasks/result request of its client,
// and while there is none it waits (followCall wakes when one comes).
func (f *callFollow) input(ctx context.Context) {
	in := f.tr.Pending
	if f.tr.State != task.StateInputRequired || in == nil || f.asked[in.RequestID] {
		return
	}
	if f.eliciting != nil {
		return // one question at a time: the answer comes first
	}
	a := f.asker()
	if a == nil && f.mcpTask != "" {
		return
	}
	f.asked[in.RequestID] = true
	why := ""
	switch {
	case a == nil:
		why = "this call has no MCP client to ask"
	case !a.canElicit:
		why = "the MCP client does not support elicitation"
	default:
		if err := elicitable(in.Schema); err != nil {
			why = "the requested input cannot be expressed as an MCP elicitation: " + err.Error()
		}
	}
	if why == "" {
		p := &mcp.ElicitParams{Mode: "form", Message: in.Question, RequestedSchema: json.RawMessage(in.Schema)}
		if f.mcpTask != "" {
			// The follower goes on following while the client thinks
			// (followCall takes the outcome).
			p.Meta = mcp.Meta{metaRelatedTask: map[string]any{"taskId": f.mcpTask}}
			ectx, cancel := context.WithCancel(ctx)
			e := &elicitation{in: *in, cancel: cancel, done: make(chan func(context.Context), 1)}
			go func() {
				res, err := a.elicit(ectx, p)
				e.done <- func(ctx context.Context) {
					f.eliciting = nil
					f.answered(ctx, e.in, res, err)
				}
			}()
			f.eliciting = e
			return
		}
		res, err := a.elicit(ctx, p)
		f.answered(ctx, *in, res, err)
		return
	}
	f.unanswerable(ctx, why)
}

// answered passes on the client's answer to input request in: accepted
// content to the agent; anything else cancels the task and says why.
func (f *callFollow) answered(ctx context.Context, in agentclient.InputRequest, res *mcp.ElicitResult, err error) {
	why := ""
	switch {
	case f.mcpTask != "" && (errors.Is(err, errAskerGone) || ctx.Err() != nil):
		// The tasks/result request (or the server) went away: no
		// answer yet; the next tasks/result asks again.
		delete(f.asked, in.RequestID)
		return
	case err != nil:
		why = "the elicitation failed: " + agentclient.SafeText(err.Error(), 200)
	case res.Action != "accept":
		why = "the user chose " + agentclient.SafeText(res.Action, 20)
	default:
		raw, _ := json.Marshal(res.Content)
		canon, err := agentclient.CanonicalInput(raw)
		if err == nil {
			_, err = f.g.ac.ProvideInput(ctx, f.tr.Pin.Endpoint, f.tr.TaskID, in.RequestID, canon, -1)
		}
		if err == nil {
			return
		}
		why = "the answer was not accepted: " + agentclient.SafeText(err.Error(), 300)
	}
	f.unanswerable(ctx, why)
}

// unanswerable cancels the task whose input cannot be answered, for why.
func (f *callFollow) unanswerable(ctx context.Context, why string) {
	f.g.log.Info("agent input not answerable: cancelling the task", "task", f.tr.TaskID, "why", why)
	f.g.ac.Cancel(ctx, f.tr.Pin.Endpoint, task.Cancel{TaskID: f.tr.TaskID, HasReason: true, Reason: "input not available: " + why}, -1)
	f.why = why
}

// asker is where the call's input is elicited: the MCP task's latest
// tasks/result request, or the session of a plain call.
func (f *callFollow) asker() *asker {
	if f.mcpTask != "" {
		return f.g.s.takeAsker(f.mcpTask)
	}
	if f.req == nil || f.req.Session == nil {
		return nil
	}
	ss := f.req.Session
	return &asker{canElicit: elicitationSupported(ss), elicit: ss.Elicit}
}

// askerArrived wakes the follower of an MCP task when a tasks/result
// request comes; a plain call never waits for one (nil).
func (f *callFollow) askerArrived() <-chan struct{} {
	if f.mcpTask == "" {
		return nil
	}
	return f.g.s.askerArrived(f.mcpTask)
}

// elicitationSupported reports whether the client declared elicitation.
func elicitationSupported(ss *mcp.ServerSession) bool {
	ip := ss.InitializeParams()
	return ip != nil && ip.Capabilities != nil && ip.Capabilities.Elicitation != nil
}

// elicitable checks that a JSON Schema fits MCP form elicitation: an
// object of flat properties, each a string, number, integer or boolean
// (strings possibly with an enum or a format).
func elicitable(schema json.RawMessage) error {
	var s struct {
		Type       any                        `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil || s.Type != "object" {
		return errors.New("it is not an object schema")
	}
	for name, raw := range s.Properties {
		var p map[string]any
		if json.Unmarshal(raw, &p) != nil {
			return fmt.Errorf("property %q is not a schema", agentclient.SafeText(name, 64))
		}
		switch p["type"] {
		case "string", "number", "integer", "boolean":
		default:
			return fmt.Errorf("property %q is not a string, number, integer or boolean", agentclient.SafeText(name, 64))
		}
		for k := range p {
			switch k {
			case "type", "title", "description", "default", "enum", "enumNames", "format", "minLength", "maxLength", "minimum", "maximum", "oneOf", "anyOf":
			default:
				return fmt.Errorf("property %q uses %q", agentclient.SafeText(name, 64), agentclient.SafeText(k, 64))
			}
		}
	}
	return nil
}
