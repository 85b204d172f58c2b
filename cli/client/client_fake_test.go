package client_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"agentgw/api"
	"agentgw/cli/client"
	"agentgw/directory"
	"agentgw/manifest"
	"agentgw/runtime"
	"agentgw/runtime/builtin"
	"agentgw/surface"
	"agentgw/task"
	"agentgw/wire"

	"mellium.im/xmpp/jid"
	"mellium.im/xmpp/stanza"
)

const (
	demoJID = "demo@agents.example"
	userJID = "alice@home.example"
)

// fakeTarget is an endpoint serving the builtin demo manifest, with the
// real task state machine behind it, reached through in-memory sessions.
// The demo tools run synchronously as the invocation is admitted (echo
// completes; count reports every step then completes, unless holdCount;
// ask requests input). Hooks make it lose answers and events.
type fakeTarget struct {
	t   *testing.T
	m   *task.Machine
	man *manifest.Manifest
	ep  jid.JID

	mu       sync.Mutex
	tasks    map[string]task.Task
	byReq    map[string]string
	inputs   map[string]task.InputRecord
	conns    map[string]*fakeConn
	nextConn int

	// received lists the local names of the IQ payloads, in order;
	// invokes the raw <invoke/> payloads.
	received []string
	invokes  []string
	// starts counts tool executions per task.
	starts map[string]int

	// Hooks, set before the commands run.
	holdCount  bool                           // count stops after running
	loseAccept int                            // answers to <invoke/> lost after admission
	drop       func(ev task.Event) bool       // events never delivered
	inject     func(ev task.Event) []string   // raw stanzas delivered before ev
	onCancel   func(f *fakeTarget, id string) // runs (locked) before a <cancel/>
}

func newFakeTarget(t *testing.T) *fakeTarget {
	man, err := builtin.Manifest(demoJID)
	if err != nil {
		t.Fatal(err)
	}
	return &fakeTarget{
		t: t, m: task.NewMachine(task.Config{}), man: man, ep: jid.MustParse(demoJID),
		tasks: map[string]task.Task{}, byReq: map[string]string{}, inputs: map[string]task.InputRecord{},
		conns: map[string]*fakeConn{}, starts: map[string]int{},
	}
}

// dial returns a login for user; every login gets a new resource.
func (f *fakeTarget) dial(user string) func(ctx context.Context) (client.Conn, error) {
	return func(context.Context) (client.Conn, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.nextConn++
		c := &fakeConn{f: f, jid: jid.MustParse(fmt.Sprintf("%s/r%d", user, f.nextConn)),
			in: make(chan wire.Element, 4096), done: make(chan struct{})}
		f.conns[c.jid.String()] = c
		return c, nil
	}
}

// lastTask returns the most recently admitted task.
func (f *fakeTarget) lastTask() (task.Task, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var last task.Task
	found := false
	for _, t := range f.tasks {
		if !found || t.Created.After(last.Created) || (t.Created.Equal(last.Created) && t.ID > last.ID) {
			last, found = t, true
		}
	}
	return last, found
}

// waitTask waits until a task is in state s.
func (f *fakeTarget) waitTask(s task.State) task.Task {
	f.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if t, ok := f.lastTask(); ok && t.State == s {
			return t
		}
		time.Sleep(5 * time.Millisecond)
	}
	f.t.Fatalf("no task reached state %s", s)
	return task.Task{}
}

func (f *fakeTarget) count(local string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, r := range f.received {
		if r == local {
			n++
		}
	}
	return n
}

// fakeConn is one logged-in session.
type fakeConn struct {
	f      *fakeTarget
	jid    jid.JID
	in     chan wire.Element
	done   chan struct{}
	closed bool
}

func (c *fakeConn) IQ(ctx context.Context, typ, to, payload string) (string, error) {
	answer, lost := c.f.iq(c, typ, to, payload)
	if lost {
		return "", errors.New("fake: the answer was lost")
	}
	return answer, nil
}

// IQElement is IQ as token streams, through the same fake.
func (c *fakeConn) IQElement(ctx context.Context, typ, to string, payload xml.TokenReader) (wire.Element, error) {
	text, err := wire.Marshal(payload)
	if err != nil {
		return wire.Element{}, err
	}
	answer, err := c.IQ(ctx, typ, to, text)
	if err != nil {
		return wire.Element{}, err
	}
	return wire.Parse(answer)
}

func (c *fakeConn) Incoming() <-chan wire.Element { return c.in }
func (c *fakeConn) Done() <-chan struct{}         { return c.done }
func (c *fakeConn) JID() jid.JID                  { return c.jid }

func (c *fakeConn) Close() error {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	if !c.closed {
		c.closed = true
		close(c.in)
		close(c.done)
	}
	return nil
}

// deliver queues a stanza for the session with full JID route; the lock
// is held.
func (f *fakeTarget) deliver(route, raw string) {
	if c, ok := f.conns[route]; ok && !c.closed {
		el, err := wire.Parse(raw)
		if err != nil {
			panic(err)
		}
		c.in <- el
	}
}

func marshal(t *testing.T, r xml.TokenReader) string {
	t.Helper()
	s, err := wire.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// eventMessage is the notification of ev from the endpoint to route.
func (f *fakeTarget) eventMessage(ev task.Event, route string) string {
	return fmt.Sprintf(`<message xmlns='jabber:client' from='%s' to='%s' id='%s' type='normal'>%s</message>`,
		f.ep, route, ev.ID, marshal(f.t, ev.TokenReader()))
}

// commit stores a step and sends its events, as the gateway does after
// its transaction; the lock is held.
func (f *fakeTarget) commit(s task.Step) {
	if !s.Changed() {
		return
	}
	f.tasks[s.Task.ID] = s.Task
	for _, r := range s.Inputs {
		f.inputs[s.Task.ID+"|"+r.RequestID] = r
	}
	for _, ev := range s.Events {
		if f.inject != nil {
			for _, raw := range f.inject(ev) {
				f.deliver(s.Task.Route.String(), raw)
			}
		}
		if f.drop != nil && f.drop(ev) {
			continue
		}
		f.deliver(s.Task.Route.String(), f.eventMessage(ev, s.Task.Route.String()))
	}
}

func (f *fakeTarget) step(s task.Step, err error) task.Task {
	if err != nil && !errors.Is(err, runtime.ErrRejected) {
		f.t.Errorf("fake target: %v", err)
	}
	f.commit(s)
	return f.tasks[s.Task.ID]
}

// run starts the demo tool of a newly admitted task; the lock is held.
func (f *fakeTarget) run(t task.Task) {
	f.starts[t.ID]++
	now := time.Now()
	t = f.step(f.m.Start(t, now))
	var args map[string]any
	json.Unmarshal(t.Args, &args)
	tool, _ := f.man.Tool(t.Tool)
	switch t.Tool {
	case builtin.ToolEcho:
		raw, _ := json.Marshal(map[string]any{
			"content":           []any{map[string]any{"type": "text", "text": args["text"]}},
			"structuredContent": map[string]any{"text": args["text"]},
		})
		f.step(f.m.Complete(t, runtime.Result{Raw: raw}, tool.OutputSchema, now))
	case builtin.ToolCount:
		if f.holdCount {
			return
		}
		to := int(args["to"].(float64))
		for i := 1; i <= to; i++ {
			pct := float64(i * 100 / to)
			t = f.step(f.m.Progress(t, runtime.Progress{Percent: &pct, Message: fmt.Sprintf("%d of %d", i, to)}, now))
		}
		raw, _ := json.Marshal(map[string]any{
			"content":           []any{map[string]any{"type": "text", "text": fmt.Sprintf("counted to %d", to)}},
			"structuredContent": map[string]any{"counted": to},
		})
		f.step(f.m.Complete(t, runtime.Result{Raw: raw}, tool.OutputSchema, now))
	case builtin.ToolAsk:
		schema := []byte(`{"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"],"additionalProperties":false}`)
		f.step(f.m.RequestInput(t, runtime.InputRequest{Question: args["question"].(string), Schema: schema}, now))
	}
}

// iq answers one IQ; lost reports an answer that never arrives.
func (f *fakeTarget) iq(c *fakeConn, typ, to, payload string) (answer string, lost bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	el, err := wire.Parse(payload)
	if err != nil {
		f.t.Errorf("fake target: payload %q: %v", payload, err)
		return f.errorIQ(c, to, stanza.Error{Type: stanza.Modify, Condition: stanza.BadRequest}), false
	}
	f.received = append(f.received, el.Start.Name.Local)
	result := func(r xml.TokenReader) string {
		return fmt.Sprintf(`<iq xmlns='jabber:client' type='result' id='x' from='%s' to='%s'>%s</iq>`, to, c.jid, marshal(f.t, r))
	}
	if to != f.ep.String() {
		return f.errorIQ(c, to, surface.ErrItemNotFound), false
	}
	node, _ := el.AttrValue("node")
	var out xml.TokenReader
	var serr error
	switch el.Start.Name {
	case xml.Name{Space: wire.NSDiscoInfo, Local: "query"}:
		out, serr = f.discoInfo(node)
	case xml.Name{Space: wire.NSDiscoItems, Local: "query"}:
		out, serr = f.discoItems(node, el)
	case api.NameManifestRequest:
		out = api.Manifest{Version: f.man.Version, Hash: wire.Hash(f.man.Hash), JSON: string(f.man.Canonical)}.TokenReader()
	case api.NameSchemaRequest:
		out, serr = f.schema(el)
	case xml.Name{Space: task.NS, Local: "invoke"}:
		f.invokes = append(f.invokes, payload)
		var a task.Accepted
		a, serr = f.invoke(c, el)
		if serr == nil && f.loseAccept > 0 {
			f.loseAccept--
			return "", true
		}
		out = a.TokenReader()
	case xml.Name{Space: task.NS, Local: "task-state-request"}:
		req, _ := task.ParseTaskStateRequest(el)
		t := f.lookup(req.TaskID)
		var st task.TaskState
		st, serr = f.m.State(t, c.jid, f.ep, req, time.Now())
		out = st.TokenReader()
	case xml.Name{Space: task.NS, Local: "task-result-request"}:
		req, _ := task.ParseTaskResultRequest(el)
		var r task.TaskResult
		r, serr = f.m.Result(f.lookup(req.TaskID), c.jid, f.ep, req, time.Now())
		out = r.TokenReader()
	case xml.Name{Space: task.NS, Local: "cancel"}:
		req, err := task.ParseCancel(el)
		if err != nil {
			return f.errorIQ(c, to, err), false
		}
		if f.onCancel != nil {
			f.onCancel(f, req.TaskID)
		}
		var o task.CancelOutcome
		o, serr = f.m.Cancel(f.lookup(req.TaskID), c.jid, f.ep, req, time.Now())
		f.commit(o.Step)
		if serr == nil && !o.Replay {
			f.step(f.m.ConfirmCancel(o.Step.Task, "cancelled by the caller", time.Now()))
		}
		out = o.Accepted.TokenReader()
	case xml.Name{Space: task.NS, Local: "provide-input"}:
		req, err := task.ParseProvideInput(el)
		if err != nil {
			return f.errorIQ(c, to, err), false
		}
		var rec *task.InputRecord
		if r, ok := f.inputs[req.TaskID+"|"+req.RequestID]; ok {
			rec = &r
		}
		var o task.InputOutcome
		o, serr = f.m.ProvideInput(f.lookup(req.TaskID), rec, c.jid, f.ep, req, time.Now())
		f.commit(o.Step)
		if serr == nil && o.Answer != nil {
			var ans struct {
				Answer string `json:"answer"`
			}
			json.Unmarshal(o.Answer, &ans)
			raw, _ := json.Marshal(map[string]any{
				"content":           []any{map[string]any{"type": "text", "text": ans.Answer}},
				"structuredContent": map[string]any{"answer": ans.Answer},
			})
			tool, _ := f.man.Tool(builtin.ToolAsk)
			f.step(f.m.Complete(f.tasks[req.TaskID], runtime.Result{Raw: raw}, tool.OutputSchema, time.Now()))
		}
		out = o.Accepted.TokenReader()
	default:
		serr = stanza.Error{Type: stanza.Cancel, Condition: stanza.ServiceUnavailable}
	}
	if serr != nil {
		return f.errorIQ(c, to, serr), false
	}
	return result(out), false
}

func (f *fakeTarget) lookup(id string) *task.Task {
	if t, ok := f.tasks[id]; ok {
		return &t
	}
	return nil
}

func (f *fakeTarget) invoke(c *fakeConn, el wire.Element) (task.Accepted, error) {
	inv, err := task.ParseInvoke(el)
	if err != nil {
		return task.Accepted{}, err
	}
	req, err := f.m.Prepare(inv, c.jid, f.man)
	if err != nil {
		return task.Accepted{}, err
	}
	key := req.Caller.String() + "|" + req.RequestID
	adm, err := f.m.Admit(req, f.lookup(f.byReq[key]), time.Now())
	if err != nil {
		return task.Accepted{}, err
	}
	if adm.Replay {
		if adm.RouteChanged {
			f.tasks[adm.Task.ID] = adm.Task
		}
		return adm.Accepted(), nil
	}
	f.tasks[adm.Task.ID] = adm.Task
	f.byReq[key] = adm.Task.ID
	f.run(adm.Task)
	return adm.Accepted(), nil
}

// errorIQ is an error answer; the lock is held.
func (f *fakeTarget) errorIQ(c *fakeConn, from string, err error) string {
	var se stanza.Error
	if !errors.As(err, &se) {
		f.t.Errorf("fake target: %v", err)
		se = stanza.Error{Type: stanza.Cancel, Condition: stanza.InternalServerError}
	}
	return fmt.Sprintf(`<iq xmlns='jabber:client' type='error' id='x' from='%s' to='%s'><error type='%s'><%s xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/></error></iq>`,
		from, c.jid, se.Type, se.Condition)
}

func (f *fakeTarget) discoInfo(node string) (xml.TokenReader, error) {
	m := f.man
	if node == "" {
		features := append([]string{wire.NSDiscoInfo, wire.NSDiscoItems, directory.NSEndpoint, api.FeatureManifest, api.FeatureSchema},
			task.EndpointFeatures(m)...)
		return wire.InfoResult{
			Identities: []wire.Identity{{Category: directory.CategoryAutomation, Type: directory.TypeEndpoint, Name: m.Title}},
			Features:   features,
			Forms: []wire.Form{{Type: "result", FormType: directory.FormEndpointInfo, Fields: []wire.Field{
				{Var: "version", Values: []string{m.Version}},
				{Var: "manifest_hash_algo", Values: []string{wire.HashAlgoSHA256}},
				{Var: "manifest_hash_value", Values: []string{m.HashBase64()}},
			}}},
		}.TokenReader(), nil
	}
	version, name, err := manifest.ParseToolNode(node)
	t, ok := m.Tool(name)
	if err != nil || version != m.Version || !ok {
		return nil, surface.ErrItemNotFound
	}
	return wire.InfoResult{
		Node:       node,
		Identities: []wire.Identity{{Category: directory.CategoryAutomation, Type: api.TypeTool, Name: t.Title}},
		Features:   append([]string{wire.NSDiscoInfo, api.FeatureTool}, task.ToolFeatures(t)...),
		Forms: []wire.Form{{Type: "result", FormType: api.FormToolInfo, Fields: []wire.Field{
			{Var: "name", Values: []string{t.Name}},
			{Var: "api_version", Values: []string{m.Version}},
			{Var: "input_schema_hash_algo", Values: []string{wire.HashAlgoSHA256}},
			{Var: "input_schema_hash_value", Values: []string{base64.StdEncoding.EncodeToString(t.InputHash[:])}},
		}}},
	}.TokenReader(), nil
}

// discoItems lists the tools two by two, as pages of XEP-0059.
func (f *fakeTarget) discoItems(node string, el wire.Element) (xml.TokenReader, error) {
	if node != manifest.ToolsNode(f.man.Version) {
		return nil, surface.ErrItemNotFound
	}
	rsm, _, err := wire.FindRSM(el)
	if err != nil {
		return nil, surface.ErrBadRequest
	}
	var items []wire.Item
	started := rsm.After == nil
	for _, t := range f.man.Tools {
		n := manifest.ToolNode(f.man.Version, t.Name)
		if started && len(items) < 2 {
			items = append(items, wire.Item{JID: demoJID, Node: n, Name: t.Title})
		}
		if rsm.After != nil && *rsm.After == n {
			started = true
		}
	}
	set := &wire.RSMResult{Count: len(f.man.Tools)}
	if len(items) > 0 {
		set.First, set.Last, set.HasItems = items[0].Node, items[len(items)-1].Node, true
	}
	return wire.ItemsResult{Node: node, Items: items, Set: set}.TokenReader(), nil
}

func (f *fakeTarget) schema(el wire.Element) (xml.TokenReader, error) {
	req, err := api.ParseSchemaRequest(el)
	if err != nil {
		return nil, surface.ErrBadRequest
	}
	if req.Hash != f.man.Hash {
		return nil, surface.ErrConflict
	}
	t, ok := f.man.Tool(req.Tool)
	if !ok || req.Version != f.man.Version || req.Direction != api.DirectionInput {
		return nil, surface.ErrItemNotFound
	}
	return api.Schema{Tool: t.Name, Version: f.man.Version, Direction: api.DirectionInput,
		ManifestHash: wire.Hash(f.man.Hash), SchemaHash: wire.Hash(t.InputHash), JSON: string(t.InputSchema)}.TokenReader(), nil
}

// runClient runs `agentgw client -jid user ARGS` against f.
func (f *fakeTarget) runClient(user string, args ...string) (stdout, stderr string, err error) {
	var out, errb strings.Builder
	err = f.runClientIO(user, client.ClientIO{Stdout: &out, Stderr: &errb}, args...)
	return out.String(), errb.String(), err
}

func (f *fakeTarget) runClientIO(user string, cio client.ClientIO, args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cio.Dial = f.dial(user)
	return client.RunClient(ctx, append([]string{"-jid", user}, args...), cio)
}
