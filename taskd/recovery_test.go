package taskd_test

import (
	"context"
	"testing"
	"time"

	"agentgw/runtime"
	"agentgw/surface"
	"agentgw/task"

	"mellium.im/xmpp/jid"
)

// TestRestartRecovery closes the service and the store with tasks in
// flight, as a crash leaves them, and reopens both: a running task whose
// runtime cannot resume fails (unavailable, retryable) at the next
// revision with its event; a task never dispatched is dispatched; a task
// whose deadline passed while the gateway was down fails deadline-expired.
func TestRestartRecovery(t *testing.T) {
	rt := newScripted(false)
	e := newEnv(t, withRuntime(rt))
	ctx := context.Background()

	running := e.invoke("req-restart-running-0123456", "count", `{"to":3}`)
	rt.next(t)
	e.next(running.TaskID, 1, task.EventStatus)

	adm, err := e.svc.Invoke(ctx, surface.Request{Policy: e.pol, From: jid.MustParse(alice), To: jid.MustParse(demo), Payload: e.invokeEl("req-restart-accepted-012345", "count", `{"to":1}`, time.Time{})})
	if err != nil {
		t.Fatal(err)
	}
	accepted := adm.Accepted // never dispatched: the crash came first

	adm, err = e.svc.Invoke(ctx, surface.Request{Policy: e.pol, From: jid.MustParse(alice), To: jid.MustParse(demo), Payload: e.invokeEl("req-restart-deadline-012345", "ask", `{"question":"?"}`, t0.Add(time.Minute))})
	if err != nil {
		t.Fatal(err)
	}
	adm.Dispatch()
	expiring := adm.Accepted
	rt.next(t)
	e.next(expiring.TaskID, 1, task.EventStatus)
	e.quiet()

	// The gateway is down for two minutes.
	if err := e.svc.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.store.Close(); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(2 * time.Minute)
	rt2 := newScripted(false)
	e.openStore()
	e.opts.Runtimes = map[string]runtime.Runtime{demo: rt2}
	e.startService()

	got := map[string]task.Event{}
	for range 3 {
		s := <-e.events
		xsdCheck(t, marshal(t, s.ev.TokenReader()))
		if err := task.ValidatePayload(s.ev.Type, s.ev.Payload); err != nil {
			t.Errorf("payload %s: %v", s.ev.Payload, err)
		}
		if s.to.String() != alice {
			t.Errorf("event to %s", s.to)
		}
		got[s.ev.TaskID] = s.ev
	}
	if ev := got[running.TaskID]; ev.Type != task.EventFailed || ev.Revision != 2 {
		t.Errorf("running task: %s at %d", ev.Type, ev.Revision)
	} else if f := failure(t, ev.Payload); f.Code != runtime.CodeUnavailable || !f.Retryable {
		t.Errorf("running task failure %+v", f)
	}
	if ev := got[expiring.TaskID]; ev.Type != task.EventFailed || ev.Revision != 2 {
		t.Errorf("expired task: %s at %d", ev.Type, ev.Revision)
	} else if f := failure(t, ev.Payload); f.Code != runtime.CodeDeadlineExpired {
		t.Errorf("expired task failure %+v", f)
	}
	if ev := got[accepted.TaskID]; ev.Type != task.EventStatus || ev.Revision != 1 {
		t.Errorf("accepted task: %s at %d", ev.Type, ev.Revision)
	}
	x := rt2.next(t)
	if x.resumed || x.call.Tool.Name != "count" {
		t.Errorf("dispatched %s (resumed %v)", x.call.Tool.Name, x.resumed)
	}
	rt2.none(t)
	res, err := runtime.TextResult("Counted to 1.", map[string]int{"counted": 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := x.rep.Complete(res); err != nil {
		t.Fatal(err)
	}
	e.next(accepted.TaskID, 2, task.EventCompleted)
	for id, want := range map[string]task.State{running.TaskID: task.StateFailed, expiring.TaskID: task.StateFailed, accepted.TaskID: task.StateCompleted} {
		if st := e.state(id); st.State != want || st.Revision != 2 {
			t.Errorf("%s: %s at %d", id, st.State, st.Revision)
		}
	}
	if e.svc.Active() != 0 {
		t.Errorf("%d tasks active", e.svc.Active())
	}
}

// TestRestartResume: a runtime that can resume takes a running task over
// after a restart, with the committed state, and its reports continue the
// revisions.
func TestRestartResume(t *testing.T) {
	rt := newScripted(true)
	e := newEnv(t, withRuntime(rt))
	acc := e.invoke("req-resume-0123456789abcdef", "ask", `{"question":"?"}`)
	x := rt.next(t)
	e.next(acc.TaskID, 1, task.EventStatus)
	if err := x.rep.RequestInput(runtime.InputRequest{Question: "Name?", Schema: []byte(`{"type":"object"}`)}); err != nil {
		t.Fatal(err)
	}
	e.next(acc.TaskID, 2, task.EventInputRequired)

	rt2 := newScripted(true)
	e.restart(rt2)
	x = rt2.next(t)
	if !x.resumed || x.call.Resume == nil || x.call.Resume.State != "input_required" ||
		x.call.Resume.PendingInput == nil || x.call.Resume.PendingInput.Question != "Name?" || x.call.Handle != task.Handle(acc.TaskID) {
		t.Fatalf("resumed with %+v", x.call)
	}
	e.quiet()
	if err := x.rep.Fail(runtime.Failure{Code: "com.example:gone", Message: "Gone.", Retryable: false}); err != nil {
		t.Fatal(err)
	}
	ev := e.next(acc.TaskID, 3, task.EventFailed)
	if f := failure(t, ev.Payload); f.Code != "com.example:gone" {
		t.Errorf("failure %+v", f)
	}
}
