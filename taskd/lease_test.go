package taskd_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"agentgw/db"
	"agentgw/runtime"
	"agentgw/surface"
	"agentgw/task"
	"agentgw/taskd"

	"mellium.im/xmpp/jid"
)

// Several gateways on one store (lease.go): each test runs the env's
// service (gateway A) and one or more peers, each with its own Store on the
// same temp-dir SQLite file and its own runtime, as two `agentgw serve`
// processes have.

// peer is a second gateway on the env's database file.
type peer struct {
	svc    *taskd.Service
	rt     *scripted
	events chan sent
}

// newPeer starts a gateway over its own store on e's file, renewing and
// claiming every renew.
func (e *env) newPeer(resumable bool, renew time.Duration) *peer {
	e.t.Helper()
	store, err := db.Open(context.Background(), e.path)
	if err != nil {
		e.t.Fatal(err)
	}
	store.Now = e.clock.Now
	e.t.Cleanup(func() { store.Close() })
	p := &peer{rt: newScripted(resumable), events: make(chan sent, 1024)}
	opts := e.opts
	opts.Runtimes = map[string]runtime.Runtime{demo: p.rt}
	opts.Notify = func(from, to jid.JID, ev task.Event) error {
		p.events <- sent{from, to, ev}
		return nil
	}
	opts.Instance = ""
	opts.LeaseRenew = renew
	svc, err := taskd.New(store, opts)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { svc.Close() })
	if err := svc.Start(context.Background()); err != nil {
		e.t.Fatal(err)
	}
	p.svc = svc
	return p
}

// next waits for the peer's next event and checks it.
func (p *peer) next(t *testing.T, id string, rev int64, typ task.EventType) task.Event {
	t.Helper()
	select {
	case s := <-p.events:
		if s.ev.TaskID != id || s.ev.Revision != rev || s.ev.Type != typ {
			t.Fatalf("peer event %s rev %d %s %s, want %s rev %d %s", s.ev.TaskID, s.ev.Revision, s.ev.Type, s.ev.Payload, id, rev, typ)
		}
		return s.ev
	case <-time.After(10 * time.Second):
		t.Fatalf("peer: no %s event at revision %d", typ, rev)
	}
	return task.Event{}
}

// withLease makes gateway A renew every renew (a long one: A never renews
// within the test, as if it had died or hung).
func withLease(renew time.Duration) option {
	return withOptions(func(o *taskd.Options) { o.LeaseRenew = renew })
}

// TestLeaseTakeover: a task whose holder stops renewing stays with it until
// the lease lapses; then another gateway claims it and resumes it, and the
// old holder's execution can change nothing any more (its report is
// refused, and it drops the task).
func TestLeaseTakeover(t *testing.T) {
	rt := newScripted(true)
	e := newEnv(t, withRuntime(rt), withLease(time.Hour))
	acc := e.invoke("req-lease-takeover-01234567", "ask", `{"question":"?"}`)
	x := rt.next(t)
	e.next(acc.TaskID, 1, task.EventStatus)

	b := e.newPeer(true, 20*time.Millisecond)
	// The lease has not lapsed: B leaves the task alone.
	time.Sleep(200 * time.Millisecond)
	if b.svc.Active() != 0 {
		t.Fatalf("B took a task whose lease runs: %d active", b.svc.Active())
	}
	b.rt.none(t)

	e.clock.Advance(taskd.DefaultLeaseLapse + time.Second)
	y := b.rt.next(t)
	if !y.resumed || y.call.Handle != task.Handle(acc.TaskID) {
		t.Fatalf("B started %+v (resumed %v)", y.call, y.resumed)
	}
	if b.svc.Active() != 1 {
		t.Errorf("B has %d tasks", b.svc.Active())
	}
	// A's execution reports: refused, and A lets the task go.
	err := x.rep.RequestInput(runtime.InputRequest{Question: "Late?", Schema: []byte(`{"type":"object"}`)})
	if !errors.Is(err, runtime.ErrSettled) {
		t.Fatalf("A's report after the takeover: %v", err)
	}
	if e.svc.Active() != 0 {
		t.Errorf("A still has %d tasks", e.svc.Active())
	}
	select {
	case <-x.done:
	case <-time.After(5 * time.Second):
		t.Error("A's execution was not stopped")
	}
	e.quiet()
	// B's execution settles it, at the next revision.
	if err := y.rep.Fail(runtime.Failure{Code: "com.example:by-b", Message: "B.", Retryable: false}); err != nil {
		t.Fatal(err)
	}
	b.next(t, acc.TaskID, 2, task.EventFailed)
	if st := e.state(acc.TaskID); st.State != task.StateFailed || st.Revision != 2 {
		t.Errorf("state %s at %d", st.State, st.Revision)
	}
	rt.none(t)
}

// TestLeaseTakeoverInterrupts: a gateway whose runtime cannot resume
// settles a taken-over running task failed (unavailable, retryable), as a
// restart does, and dispatches a task its dead holder never started.
func TestLeaseTakeoverInterrupts(t *testing.T) {
	rt := newScripted(false)
	e := newEnv(t, withRuntime(rt), withLease(time.Hour))
	running := e.invoke("req-lease-running-012345678", "count", `{"to":3}`)
	rt.next(t)
	e.next(running.TaskID, 1, task.EventStatus)
	adm, err := e.svc.Invoke(context.Background(), surface.Request{Policy: e.pol, From: jid.MustParse(alice), To: jid.MustParse(demo),
		Payload: e.invokeEl("req-lease-accepted-01234567", "count", `{"to":1}`, time.Time{})})
	if err != nil {
		t.Fatal(err)
	}
	accepted := adm.Accepted // A dies before it dispatches it

	b := e.newPeer(false, 20*time.Millisecond)
	e.clock.Advance(taskd.DefaultLeaseLapse + time.Second)
	got := map[string]task.Event{}
	for range 2 {
		select {
		case s := <-b.events:
			got[s.ev.TaskID] = s.ev
		case <-time.After(10 * time.Second):
			t.Fatal("no takeover event")
		}
	}
	if ev := got[running.TaskID]; ev.Type != task.EventFailed || ev.Revision != 2 {
		t.Errorf("running task: %s at %d", ev.Type, ev.Revision)
	} else if f := failure(t, ev.Payload); f.Code != runtime.CodeUnavailable || !f.Retryable {
		t.Errorf("running task failure %+v", f)
	}
	if ev := got[accepted.TaskID]; ev.Type != task.EventStatus || ev.Revision != 1 {
		t.Errorf("accepted task: %s at %d", ev.Type, ev.Revision)
	}
	if x := b.rt.next(t); x.resumed || x.call.Handle != task.Handle(accepted.TaskID) {
		t.Errorf("B ran %s (resumed %v)", x.call.Handle, x.resumed)
	}
	// A, alive after all, cannot start what B has.
	adm.Dispatch()
	time.Sleep(100 * time.Millisecond)
	rt.none(t)
	b.rt.none(t)
}

// TestLeaseClaimedOnce: three gateways race for the lapsed leases of
// twenty tasks; each task is resumed by exactly one of them.
func TestLeaseClaimedOnce(t *testing.T) {
	rt := newScripted(true)
	e := newEnv(t, withRuntime(rt), withLease(time.Hour))
	const n = 20
	ids := map[string]bool{}
	for i := range n {
		acc := e.invoke(fmt.Sprintf("req-lease-once-%012d", i), "ask", `{"question":"?"}`)
		rt.next(t)
		e.next(acc.TaskID, 1, task.EventStatus)
		ids[string(task.Handle(acc.TaskID))] = false
	}
	peers := []*peer{e.newPeer(true, 5*time.Millisecond), e.newPeer(true, 7*time.Millisecond), e.newPeer(true, 11*time.Millisecond)}
	e.clock.Advance(taskd.DefaultLeaseLapse + time.Second)
	var mu sync.Mutex
	var wg sync.WaitGroup
	resumed, all := 0, make(chan struct{})
	stop := make(chan struct{})
	for _, p := range peers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case x := <-p.rt.calls:
					mu.Lock()
					h := string(x.call.Handle)
					if ids[h] {
						t.Errorf("%s resumed twice", h)
					}
					ids[h] = true
					if resumed++; resumed == n {
						close(all)
					}
					mu.Unlock()
				case <-stop:
					return
				}
			}
		}()
	}
	// Until all are resumed (however slow the machine), then a while
	// longer, in which a second resumption would show.
	select {
	case <-all:
		time.Sleep(time.Second)
	case <-time.After(2 * time.Minute):
	}
	close(stop)
	wg.Wait()
	total := 0
	for h, done := range ids {
		if !done {
			t.Errorf("%s never resumed", h)
		}
	}
	for _, p := range peers {
		total += p.svc.Active()
	}
	if total != n {
		t.Errorf("%d tasks active over the peers, want %d", total, n)
	}
}

// TestLeaseRemoteCancelAndInput: a cancel and an input that reach a
// gateway that does not hold the task get the answers the holder would
// give, and reach the holder's execution through the store.
func TestLeaseRemoteCancelAndInput(t *testing.T) {
	rt := newScripted(false)
	e := newEnv(t, withRuntime(rt))
	ctx := context.Background()
	me, to := jid.MustParse(alice), jid.MustParse(demo)
	b := e.newPeer(false, 20*time.Millisecond)

	acc := e.invoke("req-lease-input-0123456789a", "ask", `{"question":"?"}`)
	x := rt.next(t)
	e.next(acc.TaskID, 1, task.EventStatus)
	if err := x.rep.RequestInput(runtime.InputRequest{Question: "Name?", Schema: []byte(`{"type":"object"}`)}); err != nil {
		t.Fatal(err)
	}
	ir := e.next(acc.TaskID, 2, task.EventInputRequired)
	reqID := between(string(ir.Payload), `"requestId":"`, `"`)
	answer := parseEl(t, fmt.Sprintf(`<provide-input xmlns='urn:xmpp:agent-task:0' task-id='%s' request-id='%s' expected-revision='2'><input media-type='application/json'>{"name":"Ada"}</input></provide-input>`, acc.TaskID, reqID))
	ia, err := b.svc.ProvideInput(ctx, surface.Request{From: me, To: to, Payload: answer})
	if err != nil || ia.Revision != 3 {
		t.Fatalf("input at B: %+v %v", ia, err)
	}
	xsdCheck(t, marshal(t, ia.TokenReader()))
	b.next(t, acc.TaskID, 3, task.EventStatus)
	select {
	case a := <-x.inputs:
		if string(a) != `{"name":"Ada"}` {
			t.Errorf("A's execution got %s", a)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the input did not reach the holder's execution")
	}
	// The identical input again, at either gateway: the original answer,
	// and nothing handed over.
	for _, svc := range []*taskd.Service{b.svc, e.svc} {
		if again, err := svc.ProvideInput(ctx, surface.Request{From: me, To: to, Payload: answer}); err != nil || again != ia {
			t.Errorf("input replay %+v %v", again, err)
		}
	}

	cancel := parseEl(t, fmt.Sprintf(`<cancel xmlns='urn:xmpp:agent-task:0' task-id='%s' expected-revision='3'><reason>enough</reason></cancel>`, acc.TaskID))
	ca, err := b.svc.Cancel(ctx, surface.Request{From: me, To: to, Payload: cancel})
	if err != nil || ca.Revision != 4 {
		t.Fatalf("cancel at B: %+v %v", ca, err)
	}
	b.next(t, acc.TaskID, 4, task.EventStatus)
	select {
	case <-x.cancel:
	case <-time.After(5 * time.Second):
		t.Fatal("the cancel did not reach the holder's execution")
	}
	if err := x.rep.Cancelled("enough"); err != nil {
		t.Fatal(err)
	}
	e.next(acc.TaskID, 5, task.EventCancelled)
	time.Sleep(100 * time.Millisecond)
	select {
	case a := <-x.inputs:
		t.Errorf("the input was handed over twice: %s", a)
	default:
	}
	b.rt.none(t)
}

// TestLeaseReleasedOnClose: a gateway that stops leaves its tasks to
// another at once, without the lapse.
func TestLeaseReleasedOnClose(t *testing.T) {
	rt := newScripted(true)
	e := newEnv(t, withRuntime(rt))
	acc := e.invoke("req-lease-release-012345678", "ask", `{"question":"?"}`)
	rt.next(t)
	e.next(acc.TaskID, 1, task.EventStatus)
	b := e.newPeer(true, 20*time.Millisecond)
	b.rt.none(t)
	if err := e.svc.Close(); err != nil {
		t.Fatal(err)
	}
	y := b.rt.next(t)
	if !y.resumed || y.call.Handle != task.Handle(acc.TaskID) {
		t.Errorf("B started %s (resumed %v)", y.call.Handle, y.resumed)
	}
}

// TestLeaseStrayRecovered: a task held here that was never made live (its
// admission committed while its caller was told the commit had failed: the
// connection lost during COMMIT) is not renewed for ever with the rest: it
// is let go and recovered. The stray is made as the store would leave it,
// by moving a task's lease to gateway A, which never made it live.
func TestLeaseStrayRecovered(t *testing.T) {
	rt := newScripted(true)
	e := newEnv(t, withRuntime(rt), withLease(20*time.Millisecond))
	// A task live at A, so that A renews its leases at all.
	live := e.invoke("req-lease-stray-live-0123456", "ask", `{"question":"?"}`)
	rt.next(t)
	e.next(live.TaskID, 1, task.EventStatus)

	b := e.newPeer(true, time.Hour)
	adm, err := b.svc.Invoke(context.Background(), surface.Request{Policy: e.pol, From: jid.MustParse(alice), To: jid.MustParse(demo),
		Payload: e.invokeEl("req-lease-stray-0123456789ab", "ask", `{"question":"?"}`, time.Time{})})
	if err != nil {
		t.Fatal(err)
	}
	adm.Dispatch()
	x := b.rt.next(t)
	id := adm.Accepted.TaskID

	store, err := db.Open(context.Background(), e.path)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	gc, err := store.NewGroupCommitter(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer gc.Close()
	if err := gc.Do(context.Background(), func(tx *db.TaskTx) error {
		return tx.Hold(id, e.svc.Instance(), e.clock.Now().Add(taskd.DefaultLeaseLapse))
	}); err != nil {
		t.Fatal(err)
	}
	// A lets it go within two renewals, claims it and resumes it.
	y := rt.next(t)
	if !y.resumed || y.call.Handle != task.Handle(id) {
		t.Fatalf("A started %+v (resumed %v), want %s resumed", y.call, y.resumed, id)
	}
	if n := e.svc.Active(); n != 2 {
		t.Errorf("A has %d tasks, want 2", n)
	}
	// B's execution can change nothing.
	if err := x.rep.Fail(runtime.Failure{Code: "com.example:late", Message: "B."}); !errors.Is(err, runtime.ErrSettled) {
		t.Errorf("B's report after A recovered the task: %v", err)
	}
}
