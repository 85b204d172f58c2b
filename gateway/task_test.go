package gateway_test

import (
	"context"
	"encoding/xml"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"agentgw/app"
	"agentgw/db"
	"agentgw/gateway"
	"agentgw/internal/testclock"
	"agentgw/internal/xsdtest"
	"agentgw/manifest"
	"agentgw/runtime"
	"agentgw/runtime/builtin"
	"agentgw/task"
	"agentgw/taskd"
	"agentgw/wire"
)

const demoJID = "demo@" + domain

// taskT0 is the fixed time of the task tests.
var taskT0 = time.Date(2026, 7, 27, 19, 14, 1, 0, time.UTC)

// taskEnv is a gateway with the task service attached, serving the
// builtin demo endpoint, against the fake server.
type taskEnv struct {
	*env
	t     *testing.T
	clock *testclock.Clock
	svc   *taskd.Service
	man   *manifest.Manifest
	steps chan chan time.Time
	// msgs holds messages read while waiting for an IQ answer.
	msgs []wire.Element
}

const taskConfig = `
[[policy.invoke]]
principals = ["home.example"]
endpoints = ["demo@agents.example", "a001@agents.example"]
tools = ["*"]
[[endpoint]]
jid = "demo@agents.example"
runtime = "builtin"
`

func startTasks(t *testing.T) *taskEnv {
	t.Helper()
	return startTasksOn(t, newFakeServer(t), nil)
}

// startTasksOn is startTasks against srv, with setup applied to the
// gateway before it runs.
func startTasksOn(t *testing.T, srv *fakeServer, setup func(*gateway.Gateway)) *taskEnv {
	t.Helper()
	cfg := testConfig(t, srv.ln.Addr().String(), taskConfig)
	clock := testclock.New(taskT0)
	store, err := db.Open(context.Background(), filepath.Join(t.TempDir(), "gw.db"))
	if err != nil {
		t.Fatal(err)
	}
	store.Now = clock.Now
	t.Cleanup(func() { store.Close() })
	ctx := context.Background()
	if err := app.RegisterBuiltin(ctx, store, demoJID); err != nil {
		t.Fatal(err)
	}
	man, err := builtin.Manifest(demoJID)
	if err != nil {
		t.Fatal(err)
	}
	te := &taskEnv{t: t, clock: clock, man: man, steps: make(chan chan time.Time, 64)}
	gw := newGateway(cfg, store)
	svc, err := taskd.New(store, taskd.Options{
		Limits: taskd.Limits{Retention: cfg.Tasks.Retention}, ReplayWindow: time.Duration(cfg.RequestReplaySeconds) * time.Second,
		Runtimes: map[string]runtime.Runtime{demoJID: builtin.New(builtin.Options{After: func(time.Duration) <-chan time.Time {
			ch := make(chan time.Time, 1)
			te.steps <- ch
			return ch
		}})},
		Notify:       gw.SendEvent,
		Ready:        gw.WaitConnected,
		Availability: gw.Availability(),
		Clock:        clock,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	gw.AttachTasks(svc)
	if err := svc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	te.svc = svc
	if setup != nil {
		setup(gw)
	}

	done := runGateway(t, ctx, gw)
	srv.accept()
	waitUp(t, gw)
	te.env = &env{t: t, srv: srv, gw: gw, store: store, cfg: cfg, done: done}
	return te
}

// taskIQ sends an IQ and returns its answer; messages that arrive first
// are kept for event.
func (te *taskEnv) taskIQ(from, to, typ, payload string) wire.Element {
	te.t.Helper()
	te.srv.seq++
	id := fmt.Sprintf("t%d", te.srv.seq)
	te.srv.write(fmt.Sprintf(`<iq xmlns='jabber:component:accept' type='%s' id='%s' from='%s' to='%s'>%s</iq>`, typ, id, from, to, payload))
	for {
		el := te.srv.next()
		if el.Start.Name.Local == "message" {
			te.msgs = append(te.msgs, el)
			continue
		}
		if v, _ := el.AttrValue("id"); v == id {
			return el
		}
	}
}

// event returns the next event message, which must carry an event of type
// typ at revision rev, after checking the message shape, the payload
// against the event schema and the <event/> against the XML Schema.
func (te *taskEnv) event(typ task.EventType, rev int64) (wire.Element, task.Event) {
	te.t.Helper()
	var msg wire.Element
	if len(te.msgs) > 0 {
		msg, te.msgs = te.msgs[0], te.msgs[1:]
	} else {
		msg = te.srv.next()
	}
	if msg.Start.Name.Local != "message" {
		te.t.Fatalf("expected an event message, got %s", marshal(te.t, msg))
	}
	typAttr, _ := msg.AttrValue("type")
	from, _ := msg.AttrValue("from")
	kids := msg.Children()
	if typAttr != "normal" || from != demoJID || len(kids) != 1 {
		te.t.Fatalf("event message %s", marshal(te.t, msg))
	}
	ev, err := task.ParseEvent(kids[0])
	if err != nil {
		te.t.Fatal(err)
	}
	if id, _ := msg.AttrValue("id"); id != ev.ID {
		te.t.Errorf("message id %s, event id %s", id, ev.ID)
	}
	if ev.Type != typ || ev.Revision != rev {
		te.t.Fatalf("event %s at %d, want %s at %d: %s", ev.Type, ev.Revision, typ, rev, marshal(te.t, msg))
	}
	if err := task.ValidatePayload(ev.Type, ev.Payload); err != nil {
		te.t.Errorf("payload %s: %v", ev.Payload, err)
	}
	taskXSD(te.t, marshal(te.t, kids[0]))
	return msg, ev
}

// payload returns the single child of an IQ result, XSD-checked.
func (te *taskEnv) payload(iq wire.Element) wire.Element {
	te.t.Helper()
	if typ, _ := iq.AttrValue("type"); typ != "result" || len(iq.Children()) != 1 {
		te.t.Fatalf("not a result with a payload: %s", marshal(te.t, iq))
	}
	p := iq.Children()[0]
	taskXSD(te.t, marshal(te.t, p))
	return p
}

func (te *taskEnv) invoke(from, requestID, tool, args string) string {
	inv := task.Invoke{RequestID: requestID, Tool: tool, APIVersion: te.man.Version, ManifestHash: te.man.Hash, Arguments: args}
	return marshal(te.t, parseWire(te.t, inv.TokenReader()))
}

func parseWire(t *testing.T, r xml.TokenReader) wire.Element {
	t.Helper()
	s, err := wire.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	el, err := wire.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return el
}

// generated matches the random identifiers, which goldens normalize.
var generated = regexp.MustCompile(`(task|evt|input)-[0-9a-f]{32}`)

func normalize(s string) string {
	return generated.ReplaceAllString(s, "${1}-00000000000000000000000000000000")
}

// TestTaskEcho: invoke → accepted → running → completed with the builtin
// echo tool, then state and result from another resource, as golden
// stanzas; replay returns the same bytes and no event.
func TestTaskEcho(t *testing.T) {
	te := startTasks(t)
	invoke := te.invoke(alice, "req-echo-0123456789abcdef01", "echo", `{"text":"hello"}`)
	iq := te.taskIQ(alice, demoJID, "set", invoke)
	// The <accepted/> is written before the task is dispatched, so no
	// event can overtake it.
	if len(te.msgs) != 0 {
		t.Fatalf("an event arrived before <accepted/>: %s", marshal(t, te.msgs[0]))
	}
	acc, err := task.ParseAccepted(te.payload(iq))
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "task-accepted", normalize(marshal(t, iq)))
	msg, _ := te.event(task.EventStatus, 1)
	golden(t, "task-event-running", normalize(marshal(t, msg)))
	msg, _ = te.event(task.EventCompleted, 2)
	golden(t, "task-event-completed", normalize(marshal(t, msg)))
	if s := marshal(t, msg); strings.Contains(s, "urn:xmpp:hints") || strings.Contains(s, "urn:xmpp:receipts") {
		t.Errorf("event with hints or receipts: %s", s)
	}

	again := te.taskIQ(alice, demoJID, "set", invoke)
	if marshal(t, again.Children()[0]) != marshal(t, iq.Children()[0]) {
		t.Errorf("replay: %s", marshal(t, again))
	}

	const phone = "alice@home.example/tablet"
	state := te.taskIQ(phone, demoJID, "get", fmt.Sprintf(`<task-state-request xmlns='urn:xmpp:agent-task:0' task-id='%s'/>`, acc.TaskID))
	te.payload(state)
	golden(t, "task-state", normalize(marshal(t, state)))
	result := te.taskIQ(phone, demoJID, "get", fmt.Sprintf(`<task-result-request xmlns='urn:xmpp:agent-task:0' task-id='%s'/>`, acc.TaskID))
	te.payload(result)
	golden(t, "task-result", normalize(marshal(t, result)))
	if len(te.msgs) != 0 {
		t.Errorf("unexpected messages: %d", len(te.msgs))
	}
}

// TestTaskNotFoundIsUniform: without an invoke grant, for an endpoint that
// does not exist, or for a task of someone else, the error is the same
// bytes; malformed is bad-request; an active endpoint with no runtime is
// service-unavailable and advertises no task feature.
func TestTaskNotFoundIsUniform(t *testing.T) {
	te := startTasks(t)
	register(t, te.store, "a001", "Agent One", true)
	invoke := te.invoke(alice, "req-nf-0123456789abcdef0123", "echo", `{"text":"x"}`)
	norm := func(el wire.Element) string {
		el.Start.Attr = nil
		return marshal(t, el)
	}
	missing := te.taskIQ(alice, "nobody@"+domain, "set", invoke)
	golden(t, "task-not-found", norm(missing))
	for name, el := range map[string]wire.Element{
		"no grant":            te.taskIQ(carol, demoJID, "set", invoke),
		"stranger":            te.taskIQ(mall, demoJID, "set", invoke),
		"state of a stranger": te.taskIQ(alice, demoJID, "get", `<task-state-request xmlns='urn:xmpp:agent-task:0' task-id='task-00000000000000000000000000000000'/>`),
	} {
		if norm(el) != norm(missing) {
			t.Errorf("%s: %s", name, marshal(t, el))
		}
	}
	if el := te.taskIQ(alice, demoJID, "get", `<task-state-request xmlns='urn:xmpp:agent-task:0' task-id='x'/>`); !strings.Contains(marshal(t, el), "bad-request") {
		t.Errorf("malformed: %s", marshal(t, el))
	}

	v, err := te.store.ActiveSummary(context.Background(), "a001@"+domain)
	if err != nil {
		t.Fatal(err)
	}
	inv := task.Invoke{RequestID: "req-norun-0123456789abcdef0", Tool: "anything", APIVersion: v.Version, ManifestHash: v.Hash, Arguments: `{}`}
	el := te.taskIQ(alice, "a001@"+domain, "set", marshal(t, parseWire(t, inv.TokenReader())))
	golden(t, "task-service-unavailable", marshal(t, el))
	info := marshal(t, te.taskIQ(alice, "a001@"+domain, "get", `<query xmlns='http://jabber.org/protocol/disco#info'/>`))
	if strings.Contains(info, task.NS) {
		t.Errorf("an endpoint without a runtime advertises tasks: %s", info)
	}
}

// TestTaskDiscovery: the demo endpoint advertises the task namespace and
// the features its tools declare; a tool node the features of its tool.
func TestTaskDiscovery(t *testing.T) {
	te := startTasks(t)
	info := te.taskIQ(alice, demoJID, "get", `<query xmlns='http://jabber.org/protocol/disco#info'/>`)
	golden(t, "task-endpoint-info", marshal(t, info))
	for _, f := range []string{task.NS, task.FeatureProgress, task.FeatureCancel, task.FeatureInput} {
		if !strings.Contains(marshal(t, info), "var='"+f+"'") {
			t.Errorf("endpoint lacks %s", f)
		}
	}
	node := manifest.ToolNode(te.man.Version, "count")
	got := marshal(t, te.taskIQ(alice, demoJID, "get", `<query xmlns='http://jabber.org/protocol/disco#info' node='`+node+`'/>`))
	if !strings.Contains(got, task.FeatureProgress) || !strings.Contains(got, task.FeatureCancel) || strings.Contains(got, task.FeatureInput) {
		t.Errorf("count tool node: %s", got)
	}
	node = manifest.ToolNode(te.man.Version, "echo")
	got = marshal(t, te.taskIQ(alice, demoJID, "get", `<query xmlns='http://jabber.org/protocol/disco#info' node='`+node+`'/>`))
	if strings.Contains(got, "urn:xmpp:agent-task:0#") {
		t.Errorf("echo tool node: %s", got)
	}
}

// TestTaskCancelAndInput: count cancelled mid-way; ask answered after its
// question was recovered from task-state.
func TestTaskCancelAndInput(t *testing.T) {
	te := startTasks(t)
	iq := te.taskIQ(alice, demoJID, "set", te.invoke(alice, "req-count-0123456789abcdef0", "count", `{"to":3,"interval_ms":100}`))
	acc, err := task.ParseAccepted(te.payload(iq))
	if err != nil {
		t.Fatal(err)
	}
	te.event(task.EventStatus, 1)
	(<-te.steps) <- time.Time{}
	msg, _ := te.event(task.EventProgress, 2)
	golden(t, "task-event-progress", normalize(marshal(t, msg)))
	<-te.steps
	ca := te.taskIQ(alice, demoJID, "set", fmt.Sprintf(`<cancel xmlns='urn:xmpp:agent-task:0' task-id='%s' expected-revision='2'><reason>enough</reason></cancel>`, acc.TaskID))
	te.payload(ca)
	golden(t, "task-cancel-accepted", normalize(marshal(t, ca)))
	te.event(task.EventStatus, 3)
	msg, _ = te.event(task.EventCancelled, 4)
	golden(t, "task-event-cancelled", normalize(marshal(t, msg)))

	iq = te.taskIQ(alice, demoJID, "set", te.invoke(alice, "req-ask-0123456789abcdef012", "ask", `{"question":"Colour?"}`))
	if acc, err = task.ParseAccepted(te.payload(iq)); err != nil {
		t.Fatal(err)
	}
	te.event(task.EventStatus, 1)
	te.event(task.EventInputRequired, 2)
	state := te.taskIQ("alice@home.example/tablet", demoJID, "get", fmt.Sprintf(`<task-state-request xmlns='urn:xmpp:agent-task:0' task-id='%s'/>`, acc.TaskID))
	st, err := task.ParseTaskState(te.payload(state))
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "task-state-input", normalize(marshal(t, state)))
	reqID := generated.FindString(string(st.PendingInput[strings.Index(string(st.PendingInput), "requestId"):]))
	ia := te.taskIQ("alice@home.example/tablet", demoJID, "set", fmt.Sprintf(`<provide-input xmlns='urn:xmpp:agent-task:0' task-id='%s' request-id='%s' expected-revision='2'><input media-type='application/json'>{"answer":"blue"}</input></provide-input>`, acc.TaskID, reqID))
	te.payload(ia)
	golden(t, "task-input-accepted", normalize(marshal(t, ia)))
	te.event(task.EventStatus, 3)
	_, ev := te.event(task.EventCompleted, 4)
	if !strings.Contains(string(ev.Payload), `{"answer":"blue"}`) {
		t.Errorf("ask: %s", ev.Payload)
	}
}

// taskXSD validates one urn:xmpp:agent-task:0 element against
// testdata/agent-task.xsd when the test ends (internal/xsdtest).
func taskXSD(t *testing.T, doc string) {
	t.Helper()
	xsdtest.Check(t, filepath.Join("..", "testdata", "agent-task.xsd"), doc)
}
