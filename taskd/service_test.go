package taskd_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"agentgw/app"
	"agentgw/db"
	"agentgw/policy"
	"agentgw/runtime"
	"agentgw/runtime/builtin"
	"agentgw/surface"
	"agentgw/task"
	"agentgw/taskd"
	"agentgw/wire"

	"mellium.im/xmpp/jid"
)

type wiredEl = wire.Element

// edit changes a parsed <invoke/> and encodes it again.
func edit(t testing.TB, el wire.Element, f func(*task.Invoke)) wire.Element {
	t.Helper()
	inv, err := task.ParseInvoke(el)
	if err != nil {
		t.Fatal(err)
	}
	f(&inv)
	return parseEl(t, marshal(t, inv.TokenReader()))
}

func withHash(t testing.TB, el wire.Element, h [32]byte) wire.Element {
	return edit(t, el, func(i *task.Invoke) { i.ManifestHash = h })
}

func withVersion(t testing.TB, el wire.Element, v string) wire.Element {
	return edit(t, el, func(i *task.Invoke) { i.APIVersion = v })
}

func withTool(t testing.TB, el wire.Element, tool string) wire.Element {
	return edit(t, el, func(i *task.Invoke) { i.Tool = tool })
}

// TestEchoLifecycle: invoke → accepted (revision 0) → running (1) →
// completed (2), each event once, after its commit, to the invoking full
// JID, and the stored log equals what was sent.
func TestEchoLifecycle(t *testing.T) {
	e := newEnv(t)
	acc := e.invoke("req-echo-0123456789abcdef01", "echo", `{"text":"hello"}`)
	if acc.Revision != 0 || !acc.Created.Equal(t0) || !acc.RetainUntil.Equal(t0.Add(10*time.Second+24*time.Hour)) {
		t.Errorf("accepted %+v", acc)
	}
	running := e.next(acc.TaskID, 1, task.EventStatus)
	done := e.next(acc.TaskID, 2, task.EventCompleted)
	if !strings.Contains(string(done.Payload), `"structuredContent":{"text":"hello"}`) {
		t.Errorf("completed %s", done.Payload)
	}
	e.quiet()

	stored, err := e.store.TaskEvents(context.Background(), acc.TaskID)
	if err != nil || len(stored) != 2 {
		t.Fatalf("stored events %v %v", stored, err)
	}
	for i, ev := range []task.Event{running, done} {
		if s := stored[i]; s.ID != ev.ID || s.Revision != ev.Revision || s.Type != string(ev.Type) || string(s.Payload) != string(ev.Payload) {
			t.Errorf("stored %+v, sent %+v", s, ev)
		}
	}
	st := e.state(acc.TaskID)
	if st.State != task.StateCompleted || st.Revision != 2 || !st.ResultAvailable || st.Endpoint != demo ||
		st.ManifestHash != e.man.Hash || st.APIVersion != e.man.Version {
		t.Errorf("state %+v", st)
	}
	res, err := e.svc.Result(context.Background(), surface.Request{From: jid.MustParse("alice@example.org/phone"), To: jid.MustParse(demo), Payload: taskRef(t, "task-result-request", acc.TaskID)})
	if err != nil || res.State != task.StateCompleted || string(res.Payload) != string(done.Payload) || res.Revision != 2 {
		t.Errorf("result %+v %v", res, err)
	}
	xsdCheck(t, marshal(t, res.TokenReader()))
	if e.svc.Active() != 0 {
		t.Errorf("%d tasks still active", e.svc.Active())
	}
}

// TestAdmissionIsDurableBeforeAccepted: when Invoke returns, the task row
// with its replay record is in the database file, as another connection
// sees it, before anything is dispatched.
func TestAdmissionIsDurableBeforeAccepted(t *testing.T) {
	rt := newScripted(false)
	e := newEnv(t, withRuntime(rt))
	ctx := context.Background()
	adm, err := e.svc.Invoke(ctx, surface.Request{Policy: e.pol, From: jid.MustParse(alice), To: jid.MustParse(demo), Payload: e.invokeEl("req-durable-0123456789abcd", "echo", `{"text":"x"}`, time.Time{})})
	if err != nil {
		t.Fatal(err)
	}
	// A second store on the same file: another connection, another pool.
	other, err := db.Open(ctx, e.path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	other.Now = e.clock.Now
	rec, err := other.Task(ctx, adm.Accepted.TaskID)
	if err != nil {
		t.Fatalf("task not in the file when Invoke returned: %v", err)
	}
	if rec.State != "accepted" || rec.Revision != 0 || rec.Caller != bare || rec.Target != demo || rec.RequestID != "req-durable-0123456789abcd" {
		t.Errorf("row %+v", rec)
	}
	// The pinned version is held from admission, in the same commit.
	if held, err := other.VersionRetained(ctx, demo, e.man.Version); err != nil || !held {
		t.Errorf("version held: %v %v", held, err)
	}
	rt.none(t)
	e.quiet()
	adm.Dispatch()
	rt.next(t)
	e.next(adm.Accepted.TaskID, 1, task.EventStatus)
}

// TestReplay: the same request ID with the same fingerprint returns the
// original <accepted/> and never executes again, from any resource of the
// caller (events then follow the new route); a different fingerprint is
// <conflict/>.
func TestReplay(t *testing.T) {
	rt := newScripted(false)
	e := newEnv(t, withRuntime(rt))
	ctx := context.Background()
	const rid = "req-replay-0123456789abcdef"
	first := e.invoke(rid, "echo", `{"text":"once"}`)
	x := rt.next(t)
	e.next(first.TaskID, 1, task.EventStatus)

	for _, from := range []string{alice, "alice@example.org/phone"} {
		// Argument order differs; the canonical form is the same.
		adm, err := e.svc.Invoke(ctx, surface.Request{Policy: e.pol, From: jid.MustParse(from), To: jid.MustParse(demo), Payload: e.invokeEl(rid, "echo", `{ "text" : "once" }`, time.Time{})})
		if err != nil {
			t.Fatalf("replay from %s: %v", from, err)
		}
		if adm.Accepted != first || adm.Dispatch != nil {
			t.Errorf("replay from %s: %+v, want %+v", from, adm.Accepted, first)
		}
		if marshal(t, adm.Accepted.TokenReader()) != marshal(t, first.TokenReader()) {
			t.Error("replay bytes differ")
		}
	}
	rt.none(t)
	// The last route wins: the completion goes to the phone.
	if err := x.rep.Complete(mustText(t, "once")); err != nil {
		t.Fatal(err)
	}
	s := <-e.events
	xsdCheck(t, marshal(t, s.ev.TokenReader()))
	if err := task.ValidatePayload(s.ev.Type, s.ev.Payload); err != nil {
		t.Error(err)
	}
	if s.ev.Type != task.EventCompleted || s.to.String() != "alice@example.org/phone" {
		t.Errorf("completion %s to %s", s.ev.Type, s.to)
	}

	for name, el := range map[string]func() error{
		"other arguments": func() error {
			_, err := e.svc.Invoke(ctx, surface.Request{Policy: e.pol, From: jid.MustParse(alice), To: jid.MustParse(demo), Payload: e.invokeEl(rid, "echo", `{"text":"twice"}`, time.Time{})})
			return err
		},
		"other tool": func() error {
			_, err := e.svc.Invoke(ctx, surface.Request{Policy: e.pol, From: jid.MustParse(alice), To: jid.MustParse(demo), Payload: e.invokeEl(rid, "ask", `{"question":"?"}`, time.Time{})})
			return err
		},
		"a deadline": func() error {
			_, err := e.svc.Invoke(ctx, surface.Request{Policy: e.pol, From: jid.MustParse(alice), To: jid.MustParse(demo), Payload: e.invokeEl(rid, "echo", `{"text":"once"}`, t0.Add(time.Minute))})
			return err
		},
	} {
		if err := el(); !errors.Is(err, task.ErrConflict) {
			t.Errorf("%s: %v, want conflict", name, err)
		}
	}
	rt.none(t)
}

func mustText(t testing.TB, s string) runtime.Result {
	r, err := runtime.TextResult(s, map[string]string{"text": s})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestAuthorizationBeforeValidity: a sender without an invoke grant for
// the exact tool gets the same bytes whatever is wrong or right with the
// request, and the same as for an endpoint that does not exist.
func TestAuthorizationBeforeValidity(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	// bob may invoke echo only, and only at the demo endpoint.
	bob, _ := policy.ParsePrincipal("bob@example.org")
	e.pol.Invoke = append(e.pol.Invoke, policy.Grant{Principals: []policy.Principal{bob}, Endpoints: []string{demo}, Tools: []string{"echo"}})
	if err := app.RegisterBuiltin(ctx, e.store, "norun@agents.example"); err != nil {
		t.Fatal(err)
	}
	good := e.invokeEl("req-auth-0123456789abcdef01", "ask", `{"question":"?"}`, time.Time{})
	norun, err := builtin.Manifest("norun@agents.example")
	if err != nil {
		t.Fatal(err)
	}
	goodNorun := edit(t, good, func(i *task.Invoke) { i.APIVersion, i.ManifestHash = norun.Version, norun.Hash })
	badArgs := e.invokeEl("req-auth-0123456789abcdef01", "ask", `{"question":42}`, time.Time{})
	var notFound string
	for _, tc := range []struct {
		name     string
		from, to string
		el       func() wiredEl
	}{
		{"unauthorized tool", "bob@example.org/x", demo, func() wiredEl { return good }},
		{"unauthorized, bad arguments", "bob@example.org/x", demo, func() wiredEl { return badArgs }},
		{"unauthorized, stale hash", "bob@example.org/x", demo, func() wiredEl { return withHash(t, good, [32]byte{1}) }},
		{"unauthorized, unknown version", "bob@example.org/x", demo, func() wiredEl { return withVersion(t, good, "9.9.9") }},
		{"stranger", "mallory@evil.example/x", demo, func() wiredEl { return good }},
		{"nonexistent endpoint", alice, "nobody@agents.example", func() wiredEl { return good }},
		{"authorized, unknown version", alice, demo, func() wiredEl { return withVersion(t, good, "9.9.9") }},
		{"authorized, unknown tool", alice, demo, func() wiredEl { return withTool(t, good, "nosuchtool") }},
		{"unauthorized endpoint without a runtime", "bob@example.org/x", "norun@agents.example", func() wiredEl { return goodNorun }},
	} {
		_, err := e.svc.Invoke(ctx, surface.Request{Policy: e.pol, From: jid.MustParse(tc.from), To: jid.MustParse(tc.to), Payload: tc.el()})
		if !errors.Is(err, task.ErrNotFound) {
			t.Errorf("%s: %v, want item-not-found", tc.name, err)
			continue
		}
		b := errorBytes(t, err)
		if notFound == "" {
			notFound = b
		} else if b != notFound {
			t.Errorf("%s: %s differs from %s", tc.name, b, notFound)
		}
	}
	if !strings.Contains(notFound, "item-not-found") || strings.Contains(notFound, "<text") {
		t.Errorf("not found bytes %s", notFound)
	}

	// Once authorized, validity is reported.
	for _, tc := range []struct {
		name string
		to   string
		el   wiredEl
		want error
	}{
		{"stale hash", demo, withHash(t, good, [32]byte{1}), task.ErrConflict},
		{"bad arguments", demo, badArgs, task.ErrNotAcceptable},
		{"not I-JSON", demo, e.invokeEl("req-auth-0123456789abcdef02", "echo", `{"text":"a","text":"b"}`, time.Time{}), task.ErrNotAcceptable},
		{"deadline passed", demo, e.invokeEl("req-auth-0123456789abcdef03", "echo", `{"text":"a"}`, t0.Add(-time.Millisecond)), task.ErrNotAcceptable},
		{"no runtime", "norun@agents.example", goodNorun, task.ErrServiceUnavailable},
		{"malformed", demo, parseEl(t, `<invoke xmlns='urn:xmpp:agent-task:0' request-id='short'/>`), task.ErrBadRequest},
	} {
		_, err := e.svc.Invoke(ctx, surface.Request{Policy: e.pol, From: jid.MustParse(alice), To: jid.MustParse(tc.to), Payload: tc.el})
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	// Visibility is not needed: the policy above grants none.
	if len(e.pol.Visibility) != 0 {
		t.Fatal("the test policy must grant no visibility")
	}
	e.invoke("req-auth-0123456789abcdef04", "echo", `{"text":"ok"}`)
	// bob's exact-tool grant works.
	if _, err := e.svc.Invoke(ctx, surface.Request{Policy: e.pol, From: jid.MustParse("bob@example.org/x"), To: jid.MustParse(demo), Payload: e.invokeEl("req-auth-0123456789abcdef05", "echo", `{"text":"bob"}`, time.Time{})}); err != nil {
		t.Errorf("bob's echo: %v", err)
	}
}

// TestRecoveryIQsAuthorize: a task answers only its caller, from any
// resource; anyone else, a nonexistent ID and an expired task get the same
// bytes; a malformed ID is <bad-request/>.
func TestRecoveryIQsAuthorize(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	acc := e.invoke("req-recover-0123456789abcde", "echo", `{"text":"x"}`)
	e.next(acc.TaskID, 1, task.EventStatus)
	e.next(acc.TaskID, 2, task.EventCompleted)
	state := func(from, to, id string) error {
		_, err := e.svc.State(ctx, surface.Request{From: jid.MustParse(from), To: jid.MustParse(to), Payload: taskRef(t, "task-state-request", id)})
		return err
	}
	result := func(from, to, id string) error {
		_, err := e.svc.Result(ctx, surface.Request{From: jid.MustParse(from), To: jid.MustParse(to), Payload: taskRef(t, "task-result-request", id)})
		return err
	}
	if err := state("alice@example.org/other", demo, acc.TaskID); err != nil {
		t.Errorf("another resource of the caller: %v", err)
	}
	want := ""
	for _, f := range []func() error{
		func() error { return state("bob@example.org/x", demo, acc.TaskID) },
		func() error { return result("bob@example.org/x", demo, acc.TaskID) },
		func() error { return state(alice, "other@agents.example", acc.TaskID) },
		func() error { return state(alice, demo, "task-00000000000000000000000000000000") },
		func() error { return result(alice, demo, "task-00000000000000000000000000000000") },
	} {
		err := f()
		if !errors.Is(err, task.ErrNotFound) {
			t.Fatalf("got %v, want item-not-found", err)
		}
		if b := errorBytes(t, err); want == "" {
			want = b
		} else if b != want {
			t.Errorf("%s differs from %s", b, want)
		}
	}
	if _, err := e.svc.State(ctx, surface.Request{From: jid.MustParse(alice), To: jid.MustParse(demo), Payload: taskRef(t, "task-state-request", "bad id")}); !errors.Is(err, task.ErrBadRequest) {
		t.Errorf("malformed ID: %v", err)
	}
	// Expired: past retain-until the task answers like a missing one.
	e.clock.Advance(acc.RetainUntil.Sub(t0))
	if err := result(alice, demo, acc.TaskID); !errors.Is(err, task.ErrNotFound) || errorBytes(t, err) != want {
		t.Errorf("expired: %v", err)
	}
}

// TestCancelAndInput drives count (cancelled) and ask (answered) through
// the service, and checks that only the caller may do either.
func TestCancelAndInput(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	me, other, to := jid.MustParse(alice), jid.MustParse("bob@example.org/x"), jid.MustParse(demo)

	acc := e.invoke("req-count-0123456789abcdef0", "count", `{"to":5,"interval_ms":100}`)
	e.next(acc.TaskID, 1, task.EventStatus)
	(<-e.steps) <- time.Time{}
	e.next(acc.TaskID, 2, task.EventProgress)
	<-e.steps // count waits for its second step
	cancel := parseEl(t, fmt.Sprintf(`<cancel xmlns='urn:xmpp:agent-task:0' task-id='%s' expected-revision='2'><reason>enough</reason></cancel>`, acc.TaskID))
	if _, err := e.svc.Cancel(ctx, surface.Request{From: other, To: to, Payload: cancel}); !errors.Is(err, task.ErrNotFound) {
		t.Errorf("cancel by another caller: %v", err)
	}
	ca, err := e.svc.Cancel(ctx, surface.Request{From: me, To: to, Payload: cancel})
	if err != nil || ca.Revision != 3 {
		t.Fatalf("cancel %+v %v", ca, err)
	}
	xsdCheck(t, marshal(t, ca.TokenReader()))
	e.next(acc.TaskID, 3, task.EventStatus)
	e.next(acc.TaskID, 4, task.EventCancelled)
	// The identical cancel again is the original acceptance.
	if again, err := e.svc.Cancel(ctx, surface.Request{From: jid.MustParse("alice@example.org/phone"), To: to, Payload: cancel}); err != nil || again != ca {
		t.Errorf("cancel replay %+v %v", again, err)
	}

	acc = e.invoke("req-ask-0123456789abcdef012", "ask", `{"question":"Colour?"}`)
	e.next(acc.TaskID, 1, task.EventStatus)
	ir := e.next(acc.TaskID, 2, task.EventInputRequired)
	st := e.state(acc.TaskID)
	if st.State != task.StateInputRequired || string(st.PendingInput) != string(ir.Payload) {
		t.Fatalf("state %+v", st)
	}
	reqID := between(string(ir.Payload), `"requestId":"`, `"`)
	answer := parseEl(t, fmt.Sprintf(`<provide-input xmlns='urn:xmpp:agent-task:0' task-id='%s' request-id='%s' expected-revision='2'><input media-type='application/json'>{"answer":"blue"}</input></provide-input>`, acc.TaskID, reqID))
	if _, err := e.svc.ProvideInput(ctx, surface.Request{From: other, To: to, Payload: answer}); !errors.Is(err, task.ErrNotFound) {
		t.Errorf("input by another caller: %v", err)
	}
	ia, err := e.svc.ProvideInput(ctx, surface.Request{From: me, To: to, Payload: answer})
	if err != nil || ia.Revision != 3 {
		t.Fatalf("provide %+v %v", ia, err)
	}
	xsdCheck(t, marshal(t, ia.TokenReader()))
	e.next(acc.TaskID, 3, task.EventStatus)
	done := e.next(acc.TaskID, 4, task.EventCompleted)
	if !strings.Contains(string(done.Payload), `{"answer":"blue"}`) {
		t.Errorf("ask %s", done.Payload)
	}
	if again, err := e.svc.ProvideInput(ctx, surface.Request{From: me, To: to, Payload: answer}); err != nil || again != ia {
		t.Errorf("input replay %+v %v", again, err)
	}
	e.quiet()
}

func between(s, a, b string) string {
	_, rest, _ := strings.Cut(s, a)
	v, _, _ := strings.Cut(rest, b)
	return v
}

// TestCancelBeforeDispatch: a task cancelled while still accepted is
// confirmed cancelled at once, and its runtime is never started.
func TestCancelBeforeDispatch(t *testing.T) {
	rt := newScripted(false)
	e := newEnv(t, withRuntime(rt))
	ctx := context.Background()
	adm, err := e.svc.Invoke(ctx, surface.Request{Policy: e.pol, From: jid.MustParse(alice), To: jid.MustParse(demo), Payload: e.invokeEl("req-early-0123456789abcdef0", "count", `{"to":1}`, time.Time{})})
	if err != nil {
		t.Fatal(err)
	}
	id := adm.Accepted.TaskID
	ca, err := e.svc.Cancel(ctx, surface.Request{From: jid.MustParse(alice), To: jid.MustParse(demo), Payload: parseEl(t, fmt.Sprintf(`<cancel xmlns='urn:xmpp:agent-task:0' task-id='%s' expected-revision='0'/>`, id))})
	if err != nil || ca.Revision != 1 {
		t.Fatalf("cancel %+v %v", ca, err)
	}
	e.next(id, 1, task.EventStatus)
	e.next(id, 2, task.EventCancelled)
	adm.Dispatch()
	if st := e.state(id); st.State != task.StateCancelled || st.Revision != 2 {
		t.Errorf("state %+v", st)
	}
	rt.none(t)
	e.quiet()
}

// TestDeadline: a timer settles a task at its deadline (failed,
// deadline-expired) and stops its execution; a report at or after the
// deadline settles it the same way instead of committing.
func TestDeadline(t *testing.T) {
	rt := newScripted(false)
	e := newEnv(t, withRuntime(rt))
	ctx := context.Background()

	// The timer.
	adm, err := e.svc.Invoke(ctx, surface.Request{Policy: e.pol, From: jid.MustParse(alice), To: jid.MustParse(demo), Payload: e.invokeEl("req-deadline-0123456789abcd", "ask", `{"question":"?"}`, t0.Add(90*time.Second))})
	if err != nil {
		t.Fatal(err)
	}
	adm.Dispatch()
	id := adm.Accepted.TaskID
	x := rt.next(t)
	if !x.call.Deadline.Equal(t0.Add(90 * time.Second)) {
		t.Errorf("call deadline %v", x.call.Deadline)
	}
	e.next(id, 1, task.EventStatus)
	e.clock.Advance(89 * time.Second)
	e.quiet()
	e.clock.Advance(time.Second)
	ev := e.next(id, 2, task.EventFailed)
	if f := failure(t, ev.Payload); f.Code != runtime.CodeDeadlineExpired || !f.Retryable {
		t.Errorf("failure %+v", f)
	}
	select {
	case <-x.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the execution was not stopped at the deadline")
	}
	if err := x.rep.Complete(mustText(t, "late")); !errors.Is(err, runtime.ErrSettled) {
		t.Errorf("late report: %v", err)
	}
	e.quiet()

	// The commit boundary: echo has a 10 s default timeout. Its report
	// arrives at the deadline, whichever of it and the timer commits
	// first, the task fails deadline-expired exactly once.
	acc := e.invoke("req-boundary-0123456789abcd", "echo", `{"text":"x"}`)
	x = rt.next(t)
	e.next(acc.TaskID, 1, task.EventStatus)
	e.clock.Advance(10 * time.Second)
	if err := x.rep.Complete(mustText(t, "x")); !errors.Is(err, runtime.ErrSettled) {
		t.Errorf("report at the deadline: %v", err)
	}
	ev = e.next(acc.TaskID, 2, task.EventFailed)
	if f := failure(t, ev.Payload); f.Code != runtime.CodeDeadlineExpired {
		t.Errorf("failure %+v", f)
	}
	e.quiet()
}

// TestInputExpiryReissues: an input request with a timeout and re-issues
// is issued again with a new request ID at its expiry, then the task fails.
func TestInputExpiryReissues(t *testing.T) {
	rt := newScripted(false)
	e := newEnv(t, withRuntime(rt))
	acc := e.invoke("req-expiry-0123456789abcdef", "ask", `{"question":"?"}`)
	x := rt.next(t)
	e.next(acc.TaskID, 1, task.EventStatus)
	if err := x.rep.RequestInput(runtime.InputRequest{Question: "Name?", Schema: []byte(`{"type":"object"}`), Timeout: time.Minute, Reasks: 1}); err != nil {
		t.Fatal(err)
	}
	first := e.next(acc.TaskID, 2, task.EventInputRequired)
	e.clock.Advance(time.Minute)
	second := e.next(acc.TaskID, 3, task.EventInputRequired)
	if between(string(first.Payload), `"requestId":"`, `"`) == between(string(second.Payload), `"requestId":"`, `"`) {
		t.Error("re-issued request kept its ID")
	}
	e.clock.Advance(time.Minute)
	ev := e.next(acc.TaskID, 4, task.EventFailed)
	if f := failure(t, ev.Payload); f.Code != task.CodeInputExpired {
		t.Errorf("failure %+v", f)
	}
}

// TestRetentionAndPurge: a task retains its pinned version; past its purge
// time the purge deletes it with its events and replay record and
// releases the version. Before that, past retain-until, it is expired but
// its replay record still answers.
func TestRetentionAndPurge(t *testing.T) {
	e := newEnv(t, withOptions(func(o *taskd.Options) {
		o.Retention = time.Hour
		o.ReplayWindow = 48 * time.Hour
		o.PurgeInterval = 24 * time.Hour
	}))
	ctx := context.Background()
	acc := e.invoke("req-retain-0123456789abcdef", "echo", `{"text":"x"}`)
	e.next(acc.TaskID, 1, task.EventStatus)
	e.next(acc.TaskID, 2, task.EventCompleted)
	if !acc.RetainUntil.Equal(t0.Add(10*time.Second + time.Hour)) {
		t.Errorf("retain-until %v", acc.RetainUntil)
	}
	held := func() bool {
		h, err := e.store.VersionRetained(ctx, demo, e.man.Version)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	if !held() {
		t.Fatal("the task does not hold its version")
	}

	// Expired, not yet purged: state is gone, the replay still answers.
	e.clock.Advance(2 * time.Hour)
	if _, err := e.svc.State(ctx, surface.Request{From: jid.MustParse(alice), To: jid.MustParse(demo), Payload: taskRef(t, "task-state-request", acc.TaskID)}); !errors.Is(err, task.ErrNotFound) {
		t.Errorf("expired state: %v", err)
	}
	if n, err := e.svc.Purge(ctx); err != nil || n != 0 {
		t.Errorf("purged %d %v before the replay window ended", n, err)
	}
	again := e.invoke("req-retain-0123456789abcdef", "echo", `{"text":"x"}`)
	if again != acc || !held() {
		t.Errorf("replay after expiry %+v", again)
	}

	// Past the replay window: the purge loop deletes it all.
	e.clock.Advance(46 * time.Hour)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := e.store.Task(ctx, acc.TaskID); errors.Is(err, db.ErrNotFound) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the purge loop did not delete the task")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if evs, err := e.store.TaskEvents(ctx, acc.TaskID); err != nil || len(evs) != 0 {
		t.Errorf("events after purge %v %v", evs, err)
	}
	if held() {
		t.Error("the version is still held after the purge")
	}
	// The request ID may now be admitted as new work.
	if fresh := e.invoke("req-retain-0123456789abcdef", "echo", `{"text":"x"}`); fresh.TaskID == acc.TaskID {
		t.Error("a purged replay record still answered")
	}
}

// TestCapacity: past max_active a new invocation gets
// <resource-constraint/>; a replay of an admitted one still answers.
func TestCapacity(t *testing.T) {
	rt := newScripted(false)
	e := newEnv(t, withRuntime(rt), withOptions(func(o *taskd.Options) { o.MaxActive = 1 }))
	ctx := context.Background()
	first := e.invoke("req-cap-0123456789abcdef012", "echo", `{"text":"1"}`)
	x := rt.next(t)
	_, err := e.svc.Invoke(ctx, surface.Request{Policy: e.pol, From: jid.MustParse(alice), To: jid.MustParse(demo), Payload: e.invokeEl("req-cap-0123456789abcdef013", "echo", `{"text":"2"}`, time.Time{})})
	if !errors.Is(err, task.ErrResourceConstraint) {
		t.Errorf("over capacity: %v", err)
	}
	if again := e.invoke("req-cap-0123456789abcdef012", "echo", `{"text":"1"}`); again != first {
		t.Errorf("replay at capacity %+v", again)
	}
	if err := x.rep.Complete(mustText(t, "1")); err != nil {
		t.Fatal(err)
	}
	e.invoke("req-cap-0123456789abcdef013", "echo", `{"text":"2"}`)
}

// TestConcurrentAdmissions: many callers at once, each task admitted once,
// executed once, with revisions 1 and 2 and nothing else; fewer commits
// than closures. Run with -race.
func TestConcurrentAdmissions(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	const callers, each = 32, 8
	var wg sync.WaitGroup
	ids := make(chan string, callers*each*2)
	for c := 0; c < callers; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			from := jid.MustParse(fmt.Sprintf("alice@example.org/r%d", c))
			for i := 0; i < each; i++ {
				rid := fmt.Sprintf("req-conc-%04d-%04d-0123456789", c, i)
				// Every request is sent twice, concurrently in effect:
				// the second is a replay.
				for range 2 {
					adm, err := e.svc.Invoke(ctx, surface.Request{Policy: e.pol, From: from, To: jid.MustParse(demo), Payload: e.invokeEl(rid, "echo", fmt.Sprintf(`{"text":"%d-%d"}`, c, i), time.Time{})})
					if err != nil {
						t.Error(err)
						return
					}
					if adm.Dispatch != nil {
						adm.Dispatch()
						ids <- adm.Accepted.TaskID
					}
				}
			}
		}()
	}
	wg.Wait()
	close(ids)
	want := map[string]int{}
	for id := range ids {
		want[id]++
	}
	if len(want) != callers*each {
		t.Fatalf("%d tasks admitted, want %d", len(want), callers*each)
	}
	got := map[string][]int64{}
	for n := 0; n < 2*callers*each; n++ {
		select {
		case s := <-e.events:
			got[s.ev.TaskID] = append(got[s.ev.TaskID], s.ev.Revision)
			if err := task.ValidatePayload(s.ev.Type, s.ev.Payload); err != nil {
				t.Error(err)
			}
			xsdCheck(t, marshal(t, s.ev.TokenReader()))
		case <-time.After(10 * time.Second):
			t.Fatalf("only %d events", n)
		}
	}
	for id := range want {
		if fmt.Sprint(got[id]) != "[1 2]" {
			t.Errorf("task %s events %v", id, got[id])
		}
	}
	e.quiet()
}
