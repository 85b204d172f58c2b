package adhoc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"agentgw/db"
	"agentgw/directory"
	"agentgw/manifest"
	"agentgw/policy"
	"agentgw/surface"
	"agentgw/task"
	"agentgw/wire"

	"mellium.im/xmpp/jid"
)

// Tunables of the command surface (docs/limits.md).
const (
	// DefaultWait is how long a submission waits for its task to settle
	// (or ask for input) before the response says executing.
	DefaultWait = 2 * time.Second
	// pollEvery is how often a waiting response looks at the task.
	pollEvery = 50 * time.Millisecond
	// sessionPrefix starts every sessionid this package assigns; it is
	// also the task's request-id, so it follows that grammar.
	sessionPrefix = "ah"
)

// Task is what the service shows of a task: the committed task and, for
// one that runs, the latest progress it reported.
type Task struct {
	task.Task
	// Stage and Message are the latest progress event's, if any.
	Stage, Message string
}

// Tasks is the durable task service as this package uses it; the gateway
// implements it with package taskd, so that a command runs exactly as an
// <invoke/> does: same authorization, pinning, validation, admission and
// replay.
type Tasks interface {
	// Hosts reports whether endpoint (a bare JID) has a runtime.
	Hosts(endpoint string) bool
	// Manifest returns the manifest of version of the active endpoint,
	// or an error that is task.ErrNotFound when there is none.
	Manifest(ctx context.Context, endpoint, version string) (*manifest.Manifest, error)
	// Invoke admits inv from from to the endpoint to under pol, durably,
	// and starts it; an identical replay returns the original task.
	Invoke(ctx context.Context, pol *policy.Policy, from, to jid.JID, inv task.Invoke) (taskID string, err error)
	// Lookup returns the task that from's bare JID admitted at to under
	// requestID, or task.ErrNotFound. It does not read progress.
	Lookup(ctx context.Context, from, to jid.JID, requestID string) (task.Task, error)
	// Progress returns the stage and message of a task's latest progress
	// event, empty when it has none.
	Progress(ctx context.Context, taskID string) (stage, message string, err error)
	// ProvideInput and Cancel are the caller's commands on a task.
	ProvideInput(ctx context.Context, from, to jid.JID, in task.ProvideInput) error
	Cancel(ctx context.Context, from, to jid.JID, c task.Cancel) error
}

// Service answers the commands of endpoints.
type Service struct {
	// Dir answers visibility (discovery needs it; execution does not,
	// as for <invoke/>).
	Dir *directory.Service
	// Store reads the active version of endpoints.
	Store *db.Store
	// Tasks runs the submissions.
	Tasks Tasks
	// Wait is how long a response waits for its task (0: DefaultWait).
	Wait time.Duration
	// Rand is the sessionid source (nil: crypto/rand).
	Rand io.Reader
}

// Request is one request as the service sees it: the one request type of
// every surface.
type Request = surface.Request

// commandTools returns the active version of a visible, hosted endpoint
// and the tools of it that from may invoke, or surface.ErrItemNotFound.
func (s *Service) commandTools(ctx context.Context, r Request) (*manifest.Manifest, []*manifest.Tool, error) {
	v, err := s.Dir.EndpointSummary(ctx, r.Policy, r.From, r.To)
	if err != nil {
		return nil, nil, err
	}
	return s.commandToolsOf(ctx, r, v)
}

// commandToolsOf is commandTools for v, the summary of r.To already read
// for r.From.
func (s *Service) commandToolsOf(ctx context.Context, r Request, v db.Version) (*manifest.Manifest, []*manifest.Tool, error) {
	if s.Tasks == nil || !s.Tasks.Hosts(v.JID) {
		return nil, nil, surface.ErrItemNotFound
	}
	m, err := s.Tasks.Manifest(ctx, v.JID, v.Version)
	if err != nil {
		return nil, nil, notFound(err)
	}
	var tools []*manifest.Tool
	for i := range m.Tools {
		t := &m.Tools[i]
		if offered(t.Name) && runnable(r.Policy, r.From, v.JID, t) {
			tools = append(tools, t)
		}
	}
	if len(tools) == 0 {
		return nil, nil, surface.ErrItemNotFound
	}
	return m, tools, nil
}

// runnable reports whether from may run tool t of endpoint under pol:
// granted the exact tool, and, for a tool that declares approvalRequired
// or requiredPermissions, an approve grant that vouches for them, as
// taskd's admission requires. Everything the command surface shows of a
// tool (the list, its node, the endpoint's feature, its form) is behind
// it, so that a caller who may not run a tool learns no more of it than
// of a tool that does not exist.
func runnable(pol *policy.Policy, from jid.JID, endpoint string, t *manifest.Tool) bool {
	return pol.CanInvoke(from, endpoint, t.Name) &&
		pol.Approved(from, endpoint, t.Name, t.Ext.ApprovalRequired, t.Ext.RequiredPermissions)
}

// offered reports whether a tool name can be a command node: names in
// the agent API's node space stay with the agent API.
func offered(name string) bool { return !strings.HasPrefix(name, "urn:xmpp:") && name != NS }

// IsCommandNode reports whether an endpoint's disco node belongs to this
// package: the command list, or anything outside the agent API's nodes.
func IsCommandNode(node string) bool { return node == NS || offered(node) }

func notFound(err error) error {
	if errors.Is(err, task.ErrNotFound) || errors.Is(err, db.ErrNotFound) {
		return surface.ErrItemNotFound
	}
	return err
}

// EndpointFeatures returns Features when r.From may run at least one
// command of r.To, else nothing.
func (s *Service) EndpointFeatures(ctx context.Context, r Request) ([]string, error) {
	if _, _, err := s.commandTools(ctx, r); err != nil {
		if errors.Is(err, db.ErrWouldBlock) {
			// Memory only (db.MemoryOnly) and the answer needs the
			// database: the caller asks again where it may block.
			return nil, err
		}
		return nil, nil
	}
	return Features, nil
}

// EndpointFeaturesOf is EndpointFeatures for v, the endpoint's summary the
// caller has read for r.From already (the endpoint's disco#info), so that
// it is not read twice.
func (s *Service) EndpointFeaturesOf(ctx context.Context, r Request, v db.Version) ([]string, error) {
	if _, _, err := s.commandToolsOf(ctx, r, v); err != nil {
		if errors.Is(err, db.ErrWouldBlock) {
			return nil, err
		}
		return nil, nil
	}
	return Features, nil
}

// Items answers disco#items on node NS of an endpoint: one item per tool
// r.From may invoke, named by the tool's title, else its name.
func (s *Service) Items(ctx context.Context, r Request) (wire.ItemsResult, error) {
	_, tools, err := s.commandTools(ctx, r)
	if err != nil {
		return wire.ItemsResult{}, err
	}
	out := wire.ItemsResult{Node: NS}
	for _, t := range tools {
		out.Items = append(out.Items, wire.Item{JID: r.To.Bare().String(), Node: t.Name, Name: toolTitle(t)})
	}
	return out, nil
}

// Info answers disco#info on an endpoint's node NS or a command node.
func (s *Service) Info(ctx context.Context, r Request, node string) (wire.InfoResult, error) {
	_, tools, err := s.commandTools(ctx, r)
	if err != nil {
		return wire.InfoResult{}, err
	}
	if node == NS {
		return wire.InfoResult{Node: NS, Identities: []wire.Identity{{Category: CategoryAutomation, Type: TypeCommandList}},
			Features: []string{wire.NSDiscoInfo, wire.NSDiscoItems}}, nil
	}
	for _, t := range tools {
		if t.Name == node {
			return CommandInfo(node, toolTitle(t)), nil
		}
	}
	return wire.InfoResult{}, surface.ErrItemNotFound
}

// CommandInfo is the disco#info of a command node (XEP-0050 §2.3).
func CommandInfo(node, name string) wire.InfoResult {
	return wire.InfoResult{Node: node,
		Identities: []wire.Identity{{Category: CategoryAutomation, Type: TypeCommandNode, Name: name}},
		Features:   []string{NS, wire.NSData}}
}

func toolTitle(t *manifest.Tool) string {
	switch {
	case t.Title != "":
		return t.Title
	case t.Annotations.Title != "":
		return t.Annotations.Title
	}
	return t.Name
}

// session is a decoded sessionid: the request-id of the task and the
// version of the endpoint the form was made from.
type session struct {
	id, version string
}

func (s *Service) newSession(version string) (session, error) {
	r := s.Rand
	if r == nil {
		r = rand.Reader
	}
	var b [16]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return session{}, fmt.Errorf("adhoc: read random: %w", err)
	}
	id := sessionPrefix + hex.EncodeToString(b[:]) + "~" + version
	if !task.ValidID(id) {
		return session{}, surface.ErrItemNotFound
	}
	return session{id: id, version: version}, nil
}

// parseSession decodes a sessionid this package assigned.
func parseSession(id string) (session, bool) {
	rest, ok := strings.CutPrefix(id, sessionPrefix)
	if !ok || !task.ValidID(id) {
		return session{}, false
	}
	nonce, version, ok := strings.Cut(rest, "~")
	if !ok || len(nonce) != 32 || strings.Trim(nonce, "0123456789abcdef") != "" || !manifest.ValidVersion(version) {
		return session{}, false
	}
	return session{id: id, version: version}, true
}

// Execute answers a <command/> addressed to an endpoint. Authorization is
// that of <invoke/>: r.From must be granted this exact tool, and approval
// when the tool declares it (runnable); visibility is not needed. Anything else answers surface.ErrItemNotFound, before any other check
// that could tell a hidden command from a missing one.
func (s *Service) Execute(ctx context.Context, r Request) (Command, error) {
	cmd, err := ParseCommand(r.Payload)
	if err != nil {
		return Command{}, surface.ErrBadRequest
	}
	target := r.To.Bare().String()
	if !offered(cmd.Node) || !r.Policy.CanInvoke(r.From, target, cmd.Node) || s.Tasks == nil {
		return Command{}, surface.ErrItemNotFound
	}
	var sess session
	if cmd.SessionID != "" {
		var ok bool
		if sess, ok = parseSession(cmd.SessionID); !ok {
			return Command{}, surface.ErrBadRequest
		}
	}
	v, err := s.Store.ActiveSummary(ctx, target)
	if err != nil {
		return Command{}, notFound(err)
	}
	if cmd.SessionID == "" {
		if sess, err = s.newSession(v.Version); err != nil {
			return Command{}, err
		}
	} else if sess.version != v.Version {
		// The client writes the sessionid, version included: a version
		// other than the active one is accepted only when this caller's
		// own task of this command pinned it under that sessionid, so
		// that a version never activated (or one the caller never ran)
		// shows nothing, as for a command that does not exist.
		cur, err := s.Tasks.Lookup(ctx, r.From, r.To, sess.id)
		switch {
		case errors.Is(err, task.ErrNotFound):
			return Command{}, surface.ErrItemNotFound
		case err != nil:
			return Command{}, err
		case cur.Tool != cmd.Node || cur.APIVersion != sess.version:
			return Command{}, surface.ErrItemNotFound
		}
	}
	if !s.Tasks.Hosts(target) {
		return Command{}, surface.ErrItemNotFound
	}
	m, err := s.Tasks.Manifest(ctx, target, sess.version)
	if err != nil {
		return Command{}, notFound(err)
	}
	tool, ok := m.Tool(cmd.Node)
	if !ok || !runnable(r.Policy, r.From, target, tool) {
		// Not granted approval: fail closed, with a missing tool's bytes.
		return Command{}, surface.ErrItemNotFound
	}
	x := exchange{s: s, r: r, cmd: cmd, sess: sess, m: m, tool: tool}
	if cmd.SessionID == "" {
		return x.firstStage(), nil
	}
	return x.run(ctx)
}

// exchange is one request of a command session.
type exchange struct {
	s    *Service
	r    Request
	cmd  Command
	sess session
	m    *manifest.Manifest
	tool *manifest.Tool
}

func (x *exchange) reply(status string, acts *Actions, form *Form, notes ...Note) Command {
	return Command{Node: x.cmd.Node, SessionID: x.sess.id, Status: status, Actions: acts, Notes: notes, Form: form}
}

// toolForm is the first stage: the form of the tool's pinned input
// schema.
func (x *exchange) toolForm() *Form {
	f := SchemaForm(x.tool.InputSchema, toolTitle(x.tool), x.tool.Description)
	return &f
}

var submitActions = &Actions{Execute: ActionComplete, Complete: true}

func (x *exchange) firstStage(notes ...Note) Command {
	return x.reply(StatusExecuting, submitActions, x.toolForm(), notes...)
}

// lookup reads the session's task.
func (x *exchange) lookup(ctx context.Context) (Task, error) {
	t, err := x.s.Tasks.Lookup(ctx, x.r.From, x.r.To, x.sess.id)
	return Task{Task: t}, err
}

// show presents cur, with its latest progress when it runs: read only
// here, once per response, not at every look while waiting.
func (x *exchange) show(ctx context.Context, cur Task, extra ...Note) (Command, error) {
	if !cur.State.Terminal() && cur.State != task.StateInputRequired && cur.Features.Progress {
		var err error
		if cur.Stage, cur.Message, err = x.s.Tasks.Progress(ctx, cur.ID); err != nil {
			return Command{}, err
		}
	}
	return x.present(cur, extra...), nil
}

func (x *exchange) run(ctx context.Context) (Command, error) {
	cur, err := x.lookup(ctx)
	exists := err == nil
	if err != nil && !errors.Is(err, task.ErrNotFound) {
		return Command{}, err
	}
	if exists && cur.Tool != x.tool.Name {
		// The sessionid of another command: not this session.
		return Command{}, surface.ErrBadRequest
	}
	cancel := x.cmd.Action == ActionCancel || (x.cmd.Form != nil && x.cmd.Form.Type == FormCancel)
	switch {
	case x.cmd.Action == ActionPrev:
		return Command{}, surface.ErrBadRequest
	case cancel && !exists:
		// Nothing was submitted: nothing runs.
		return x.reply(StatusCanceled, nil, nil, Note{Type: NoteInfo, Text: "Canceled before anything ran."}), nil
	case cancel:
		return x.cancel(ctx, cur)
	case !exists && x.cmd.Form != nil && x.cmd.Form.Type == FormSubmit:
		return x.submit(ctx)
	case !exists:
		// Still at the form stage (a refresh, or a restart of the
		// client's dialog).
		return x.firstStage(), nil
	case cur.State == task.StateInputRequired && x.cmd.Form != nil && x.cmd.Form.Type == FormSubmit:
		return x.answer(ctx, cur)
	}
	return x.show(ctx, cur)
}

// submit turns the form into arguments and invokes the tool.
func (x *exchange) submit(ctx context.Context) (Command, error) {
	args, err := Arguments(x.tool.InputSchema, *x.cmd.Form)
	var fe *FieldError
	if errors.As(err, &fe) {
		f := x.toolForm()
		keepValues(f, *x.cmd.Form)
		return x.reply(StatusExecuting, submitActions, f, fe.Note()), nil
	}
	if err != nil {
		return Command{}, err
	}
	inv := task.Invoke{RequestID: x.sess.id, Tool: x.tool.Name, APIVersion: x.m.Version, ManifestHash: x.m.Hash, Arguments: string(args)}
	id, err := x.s.Tasks.Invoke(ctx, x.r.Policy, x.r.From, x.r.To, inv)
	if err != nil {
		if errors.Is(err, task.ErrNotAcceptable) {
			return x.firstStage(Note{Type: NoteError, Text: "The arguments do not satisfy the tool's input schema. Correct them and submit again."}), nil
		}
		return Command{}, err
	}
	return x.waitAndPresent(ctx, id, -1)
}

// answer submits the input form as the answer of the pending request.
func (x *exchange) answer(ctx context.Context, cur Task) (Command, error) {
	p := cur.Pending
	ans, err := Arguments(p.Schema, *x.cmd.Form)
	var fe *FieldError
	if errors.As(err, &fe) {
		f := inputForm(cur)
		keepValues(f, *x.cmd.Form)
		return x.reply(StatusExecuting, submitActions, f, fe.Note()), nil
	}
	if err != nil {
		return Command{}, err
	}
	err = x.s.Tasks.ProvideInput(ctx, x.r.From, x.r.To, task.ProvideInput{TaskID: cur.ID, RequestID: p.ID, ExpectedRevision: cur.Revision, Input: string(ans)})
	if err != nil {
		if errors.Is(err, task.ErrConflict) || errors.Is(err, task.ErrNotAcceptable) {
			// The request moved on, or the answer was refused: show the
			// current state.
			now, lerr := x.lookup(ctx)
			if lerr != nil {
				return Command{}, lerr
			}
			return x.show(ctx, now, Note{Type: NoteWarn, Text: "The answer was not accepted."})
		}
		return Command{}, err
	}
	return x.waitAndPresent(ctx, cur.ID, cur.Revision)
}

// cancel asks for the task's cancellation; the response says canceled
// only once the task has settled as cancelled.
func (x *exchange) cancel(ctx context.Context, cur Task) (Command, error) {
	if !cur.Features.Cancel && !cur.State.Terminal() {
		return x.show(ctx, cur, Note{Type: NoteWarn, Text: "This tool cannot be canceled."})
	}
	// The revision moves with every progress event: retry at the new one.
	for try := 0; try < cancelTries && !cur.State.Terminal() && cur.State != task.StateCancelling; try++ {
		err := x.s.Tasks.Cancel(ctx, x.r.From, x.r.To, task.Cancel{TaskID: cur.ID, ExpectedRevision: cur.Revision})
		if err == nil {
			break
		}
		if !errors.Is(err, task.ErrConflict) {
			return Command{}, err
		}
		if cur, err = x.lookup(ctx); err != nil {
			return Command{}, err
		}
	}
	return x.waitAndPresent(ctx, cur.ID, cur.Revision)
}

// cancelTries bounds the cancellations one request sends when the task's
// revision keeps moving under it.
const cancelTries = 5

// waitAndPresent waits up to the service's wait for the task to move past
// revision rev and then settle or ask for input, and presents it.
func (x *exchange) waitAndPresent(ctx context.Context, id string, rev int64) (Command, error) {
	wait := x.s.Wait
	if wait <= 0 {
		wait = DefaultWait
	}
	deadline := time.Now().Add(wait)
	for {
		cur, err := x.lookup(ctx)
		if err != nil {
			return Command{}, err
		}
		settled := cur.State.Terminal() || (cur.State == task.StateInputRequired && cur.Revision > rev)
		if settled || !time.Now().Before(deadline) {
			return x.show(ctx, cur)
		}
		select {
		case <-ctx.Done():
			return Command{}, ctx.Err()
		case <-time.After(pollEvery):
		}
	}
}

var refreshActions = &Actions{Execute: ActionNext, Next: true}

// present is the response for the task's current state.
func (x *exchange) present(cur Task, extra ...Note) Command {
	switch cur.State {
	case task.StateCompleted:
		res := struct {
			Result json.RawMessage `json:"result"`
		}{}
		_ = json.Unmarshal(cur.Outcome, &res)
		form, notes := ResultForm(res.Result, x.tool.OutputSchema, toolTitle(x.tool))
		return x.reply(StatusCompleted, nil, form, append(extra, notes...)...)
	case task.StateFailed:
		var out struct {
			Error struct {
				Code, Message string
			} `json:"error"`
		}
		_ = json.Unmarshal(cur.Outcome, &out)
		return x.reply(StatusCompleted, nil, nil, append(extra, NewNote(NoteError, fmt.Sprintf("The task failed (%s): %s", out.Error.Code, out.Error.Message)))...)
	case task.StateCancelled:
		text := "The task was canceled."
		var out struct {
			Reason string `json:"reason"`
		}
		if json.Unmarshal(cur.Outcome, &out) == nil && out.Reason != "" {
			text += " " + out.Reason
		}
		return x.reply(StatusCanceled, nil, nil, append(extra, NewNote(NoteInfo, text))...)
	case task.StateInputRequired:
		return x.reply(StatusExecuting, submitActions, inputForm(cur), extra...)
	}
	return x.reply(StatusExecuting, refreshActions, nil, append(extra, NewNote(NoteInfo, statusText(cur)))...)
}

// statusText says where a running task is.
func statusText(cur Task) string {
	var b strings.Builder
	fmt.Fprintf(&b, "The task is %s", cur.State)
	if cur.Percent > 0 {
		fmt.Fprintf(&b, ", %s%% done", trimFloat(cur.Percent))
	}
	b.WriteString(".")
	if cur.Stage != "" || cur.Message != "" {
		b.WriteString(" ")
		b.WriteString(strings.TrimSpace(strings.Join([]string{cur.Stage, cur.Message}, ": ")))
	}
	b.WriteString(" Refresh with next")
	if cur.Features.Cancel {
		b.WriteString(", or cancel it")
	}
	b.WriteString(".")
	return b.String()
}

func trimFloat(f float64) string {
	s := fmt.Sprintf("%.1f", f)
	return strings.TrimSuffix(s, ".0")
}

// inputForm is the form of a pending input request: its schema's form,
// with the question as instructions.
func inputForm(cur Task) *Form {
	f := SchemaForm(cur.Pending.Schema, "Input requested", cur.Pending.Question)
	return &f
}

// keepValues copies submitted values into the form shown again, so that
// the user corrects rather than retypes, up to maxKeptBytes: past it a
// field is shown empty, so that the response stays within one stanza.
func keepValues(f *Form, submitted Form) {
	left := maxKeptBytes
	for i := range f.Fields {
		sub, ok := submitted.Field(f.Fields[i].Var)
		if !ok {
			continue
		}
		n := 0
		for _, v := range sub.Values {
			n += len(v) + fieldOverhead/4
		}
		if n > left {
			f.Fields[i].Values = nil
			continue
		}
		left -= n
		f.Fields[i].Values = sub.Values
	}
}

// maxKeptBytes bounds the submitted values a refused form shows again.
const maxKeptBytes = 8 << 10
