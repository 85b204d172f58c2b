package taskd_test

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"path/filepath"

	"agentgw/internal/pgtest"
	"sync"
	"testing"
	"time"

	"agentgw/app"
	"agentgw/db"
	"agentgw/internal/testclock"
	"agentgw/internal/xsdtest"
	"agentgw/manifest"
	"agentgw/policy"
	"agentgw/runtime"
	"agentgw/runtime/builtin"
	"agentgw/surface"
	"agentgw/task"
	"agentgw/taskd"
	"agentgw/wire"

	"mellium.im/xmpp/jid"
	"mellium.im/xmpp/stanza"
)

// t0 is the test clock's start.
var t0 = time.Date(2026, 7, 27, 19, 14, 1, 0, time.UTC)

const (
	demo  = "demo@agents.example"
	bare  = "alice@example.org"
	alice = "alice@example.org/laptop"
)

// sent is one notification the service sent.
type sent struct {
	from, to jid.JID
	ev       task.Event
}

// env is a service over a real store in a temporary directory, with the
// demo endpoint, a fixed clock, and every sent event collected.
type env struct {
	t      *testing.T
	path   string
	store  *db.Store
	clock  *testclock.Clock
	svc    *taskd.Service
	opts   taskd.Options
	man    *manifest.Manifest
	pol    *policy.Policy
	events chan sent
	// steps releases the builtin count tool's steps.
	steps chan chan time.Time
}

// options adjusts an env before its service starts.
type option func(*env)

// withRuntime replaces the demo endpoint's runtime.
func withRuntime(rt runtime.Runtime) option {
	return func(e *env) { e.opts.Runtimes[demo] = rt }
}

func withOptions(f func(*taskd.Options)) option { return func(e *env) { f(&e.opts) } }

func newEnv(t *testing.T, opts ...option) *env {
	t.Helper()
	e := &env{
		t:      t,
		path:   pgtest.Location(t, filepath.Join(t.TempDir(), "agentgw.db")),
		clock:  testclock.New(t0),
		events: make(chan sent, 1024),
		steps:  make(chan chan time.Time, 64),
	}
	e.openStore()
	ctx := context.Background()
	if err := app.RegisterBuiltin(ctx, e.store, demo); err != nil {
		t.Fatal(err)
	}
	man, err := builtin.Manifest(demo)
	if err != nil {
		t.Fatal(err)
	}
	e.man = man
	p, err := policy.ParsePrincipal(bare)
	if err != nil {
		t.Fatal(err)
	}
	e.pol = &policy.Policy{Invoke: []policy.Grant{{Principals: []policy.Principal{p}, AllEndpoints: true, AllTools: true}}}
	e.opts = taskd.Options{
		Runtimes: map[string]runtime.Runtime{demo: builtin.New(builtin.Options{After: func(time.Duration) <-chan time.Time {
			ch := make(chan time.Time, 1)
			e.steps <- ch
			return ch
		}})},
		Notify: func(from, to jid.JID, ev task.Event) error {
			e.events <- sent{from, to, ev}
			return nil
		},
		Clock: e.clock,
	}
	for _, o := range opts {
		o(e)
	}
	e.startService()
	return e
}

func (e *env) openStore() {
	e.t.Helper()
	s, err := db.Open(context.Background(), e.path)
	if err != nil {
		e.t.Fatal(err)
	}
	s.Now = e.clock.Now
	e.store = s
	e.t.Cleanup(func() { s.Close() })
}

func (e *env) startService() {
	e.t.Helper()
	svc, err := taskd.New(e.store, e.opts)
	if err != nil {
		e.t.Fatal(err)
	}
	e.svc = svc
	e.t.Cleanup(func() { svc.Close() })
	if err := svc.Start(context.Background()); err != nil {
		e.t.Fatal(err)
	}
}

// restart stops the service and the store, as a crash would leave them
// (executions stop, nothing settles them), and starts both again with the
// given runtime for the demo endpoint.
func (e *env) restart(rt runtime.Runtime) {
	e.t.Helper()
	if err := e.svc.Close(); err != nil {
		e.t.Fatal(err)
	}
	if err := e.store.Close(); err != nil {
		e.t.Fatal(err)
	}
	e.openStore()
	e.opts.Runtimes = map[string]runtime.Runtime{demo: rt}
	e.startService()
}

// invokeEl builds an <invoke/> of a demo tool.
func (e *env) invokeEl(requestID, tool, args string, deadline time.Time) wire.Element {
	inv := task.Invoke{RequestID: requestID, Tool: tool, APIVersion: e.man.Version, ManifestHash: e.man.Hash, Arguments: args}
	if !deadline.IsZero() {
		d, err := task.ParseDateTime(task.FormatDateTime(deadline))
		if err != nil {
			e.t.Fatal(err)
		}
		inv.Deadline = d
	}
	return parseEl(e.t, marshal(e.t, inv.TokenReader()))
}

// invoke admits a demo tool call from alice's laptop and dispatches it.
func (e *env) invoke(requestID, tool, args string) task.Accepted {
	e.t.Helper()
	adm, err := e.svc.Invoke(context.Background(), surface.Request{Policy: e.pol, From: jid.MustParse(alice), To: jid.MustParse(demo), Payload: e.invokeEl(requestID, tool, args, time.Time{})})
	if err != nil {
		e.t.Fatalf("invoke %s: %v", tool, err)
	}
	xsdCheck(e.t, marshal(e.t, adm.Accepted.TokenReader()))
	if adm.Dispatch != nil {
		adm.Dispatch()
	}
	return adm.Accepted
}

// next returns the next event sent, which must be of type typ at revision
// rev of task id, after checking its payload against the event schema and
// the <event/> against the XML Schema.
func (e *env) next(id string, rev int64, typ task.EventType) task.Event {
	e.t.Helper()
	select {
	case s := <-e.events:
		ev := s.ev
		if ev.TaskID != id || ev.Revision != rev || ev.Type != typ {
			e.t.Fatalf("event %s rev %d %s %s, want %s rev %d %s", ev.TaskID, ev.Revision, ev.Type, ev.Payload, id, rev, typ)
		}
		if s.from.String() != demo {
			e.t.Errorf("event from %s", s.from)
		}
		if err := task.ValidatePayload(ev.Type, ev.Payload); err != nil {
			e.t.Errorf("event payload %s: %v", ev.Payload, err)
		}
		xsdCheck(e.t, marshal(e.t, ev.TokenReader()))
		return ev
	case <-time.After(10 * time.Second):
		e.t.Fatalf("no %s event at revision %d", typ, rev)
	}
	return task.Event{}
}

// quiet checks that no event is waiting.
func (e *env) quiet() {
	e.t.Helper()
	select {
	case s := <-e.events:
		e.t.Fatalf("unexpected event %s rev %d %s", s.ev.Type, s.ev.Revision, s.ev.Payload)
	default:
	}
}

// state reads the task state as alice.
func (e *env) state(id string) task.TaskState {
	e.t.Helper()
	st, err := e.svc.State(context.Background(), surface.Request{From: jid.MustParse(alice), To: jid.MustParse(demo), Payload: taskRef(e.t, "task-state-request", id)})
	if err != nil {
		e.t.Fatalf("state: %v", err)
	}
	xsdCheck(e.t, marshal(e.t, st.TokenReader()))
	return st
}

func taskRef(t testing.TB, local, id string) wire.Element {
	return parseEl(t, fmt.Sprintf(`<%s xmlns='urn:xmpp:agent-task:0' task-id='%s'/>`, local, id))
}

func parseEl(t testing.TB, s string) wire.Element {
	t.Helper()
	el, err := wire.Parse(s)
	if err != nil {
		t.Fatalf("parse %s: %v", s, err)
	}
	return el
}

func marshal(t testing.TB, r xml.TokenReader) string {
	t.Helper()
	s, err := wire.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// errorBytes is the wire form of err as the gateway sends it: condition
// and type only.
func errorBytes(t testing.TB, err error) string {
	t.Helper()
	var se stanza.Error
	if !errors.As(err, &se) {
		t.Fatalf("%v is not a stanza error", err)
	}
	return marshal(t, stanza.Error{Type: se.Type, Condition: se.Condition}.TokenReader())
}

// failure decodes a failed payload.
func failure(t testing.TB, payload []byte) runtime.Failure {
	t.Helper()
	var p struct {
		Error runtime.Failure `json:"error"`
	}
	if err := json.Unmarshal(payload, &p); err != nil {
		t.Fatal(err)
	}
	return p.Error
}

// xsdCheck validates one urn:xmpp:agent-task:0 document against
// testdata/agent-task.xsd when the test ends (internal/xsdtest).
func xsdCheck(t *testing.T, doc string) {
	t.Helper()
	xsdtest.Check(t, filepath.Join("..", "testdata", "agent-task.xsd"), doc)
}

// scripted is a runtime the test drives: each Start or Resume hands the
// test the call and its reporter.
type scripted struct {
	resumable bool
	calls     chan *scriptedExec
}

func newScripted(resumable bool) *scripted {
	return &scripted{resumable: resumable, calls: make(chan *scriptedExec, 64)}
}

type scriptedExec struct {
	call    runtime.Call
	rep     runtime.Reporter
	ctx     context.Context
	resumed bool
	inputs  chan json.RawMessage
	cancel  chan struct{}
	cOnce   sync.Once
	once    sync.Once
	done    chan struct{}
}

func (s *scripted) start(ctx context.Context, call runtime.Call, rep runtime.Reporter, resumed bool) *scriptedExec {
	x := &scriptedExec{call: call, rep: rep, ctx: ctx, resumed: resumed,
		inputs: make(chan json.RawMessage, 8), cancel: make(chan struct{}), done: make(chan struct{})}
	// The execution ends when its context does (settlement or Close).
	go func() {
		<-ctx.Done()
		x.once.Do(func() { close(x.done) })
	}()
	s.calls <- x
	return x
}

func (s *scripted) Start(ctx context.Context, call runtime.Call, rep runtime.Reporter) (runtime.Execution, error) {
	return s.start(ctx, call, rep, false), nil
}

func (s *scripted) CanResume() bool { return s.resumable }

func (s *scripted) Resume(ctx context.Context, call runtime.Call, rep runtime.Reporter) (runtime.Execution, error) {
	if !s.resumable {
		return nil, runtime.ErrNotResumable
	}
	return s.start(ctx, call, rep, true), nil
}

// next returns the next execution started or resumed.
func (s *scripted) next(t testing.TB) *scriptedExec {
	t.Helper()
	select {
	case x := <-s.calls:
		return x
	case <-time.After(10 * time.Second):
		t.Fatal("the runtime was not started")
	}
	return nil
}

// none checks that no execution was started.
func (s *scripted) none(t testing.TB) {
	t.Helper()
	select {
	case x := <-s.calls:
		t.Fatalf("unexpected execution of %s", x.call.Tool.Name)
	default:
	}
}

func (x *scriptedExec) Input(a json.RawMessage) error {
	x.inputs <- a
	return nil
}
func (x *scriptedExec) Cancel()                          { x.cOnce.Do(func() { close(x.cancel) }) }
func (x *scriptedExec) Done() <-chan struct{}            { return x.done }
func (x *scriptedExec) Diagnostics() runtime.Diagnostics { return runtime.Diagnostics{ExitCode: -1} }
