package taskd_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"agentgw/runtime"
	"agentgw/task"
	"agentgw/taskd"

	"mellium.im/xmpp/jid"
)

// fakeStream stands for the gateway's component stream as the notifier
// sees it: Ready blocks while it is down, Notify fails while it is down,
// and failNext makes the next sends fail and take the stream down, as a
// write that times out does.
type fakeStream struct {
	mu       sync.Mutex
	up       bool
	changed  chan struct{}
	failNext int
	// downSends counts sends attempted while down; failed receives one
	// value per send made to fail.
	downSends int
	failed    chan struct{}
	out       chan sent
}

var errStreamDown = errors.New("test: no stream")

func newFakeStream(out chan sent) *fakeStream {
	return &fakeStream{changed: make(chan struct{}), failed: make(chan struct{}, 16), out: out}
}

func (f *fakeStream) set(up bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.setLocked(up)
}

func (f *fakeStream) setLocked(up bool) {
	f.up = up
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *fakeStream) Ready(ctx context.Context) error {
	for {
		f.mu.Lock()
		up, ch := f.up, f.changed
		f.mu.Unlock()
		if up {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (f *fakeStream) Notify(from, to jid.JID, ev task.Event) error {
	f.mu.Lock()
	switch {
	case !f.up:
		f.downSends++
		f.mu.Unlock()
		return errStreamDown
	case f.failNext > 0:
		f.failNext--
		f.setLocked(false)
		f.mu.Unlock()
		f.failed <- struct{}{}
		return errors.New("test: write timed out")
	}
	f.mu.Unlock()
	f.out <- sent{from, to, ev}
	return nil
}

func withStream(f func(*taskd.Options) *fakeStream, st **fakeStream) option {
	return func(e *env) { *st = f(&e.opts) }
}

// settled waits until the task is terminal in the store.
func (e *env) settled(id string) {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !e.state(id).State.Terminal() {
		if time.Now().After(deadline) {
			e.t.Fatalf("task %s never settled", id)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestEventsWaitForStream: events committed while no stream is up are held
// and sent, in commit order, once it is up; a send that fails (and takes the
// stream down) is sent again on the next stream; events of the recovery at
// start wait for the stream too; and Close does not wait for a stream.
func TestEventsWaitForStream(t *testing.T) {
	var st *fakeStream
	rt := newScripted(false)
	e := newEnv(t, withRuntime(rt), withStream(func(o *taskd.Options) *fakeStream {
		s := newFakeStream(make(chan sent, 1024))
		o.Notify, o.Ready = s.Notify, s.Ready
		return s
	}, &st))
	e.events = st.out

	// Two tasks run and settle while the stream is down.
	a := e.invoke("req-held-a-0123456789abcdef", "count", `{"to":1}`)
	xa := rt.next(t)
	completeCount(t, xa, 1)
	e.settled(a.TaskID)
	b := e.invoke("req-held-b-0123456789abcdef", "count", `{"to":1}`)
	xb := rt.next(t)
	completeCount(t, xb, 1)
	e.settled(b.TaskID)
	e.quiet()

	// The stream comes up, and the first send fails and drops it again;
	// on the next stream every event goes out, in order, none lost.
	st.mu.Lock()
	st.failNext = 1
	st.mu.Unlock()
	st.set(true)
	select {
	case <-st.failed:
	case <-time.After(10 * time.Second):
		t.Fatal("no event was sent once the stream was up")
	}
	e.quiet()
	st.set(true)
	e.next(a.TaskID, 1, task.EventStatus)
	e.next(a.TaskID, 2, task.EventCompleted)
	e.next(b.TaskID, 1, task.EventStatus)
	e.next(b.TaskID, 2, task.EventCompleted)

	// A task running when the gateway stops is settled by the recovery at
	// the next start, before any stream is up: its event waits.
	c := e.invoke("req-held-c-0123456789abcdef", "count", `{"to":3}`)
	rt.next(t)
	e.next(c.TaskID, 1, task.EventStatus)
	st.set(false)
	rt2 := newScripted(false)
	e.restart(rt2)
	if got := e.state(c.TaskID); got.State != task.StateFailed {
		t.Fatalf("recovered task is %s", got.State)
	}
	e.quiet()
	st.set(true)
	e.next(c.TaskID, 2, task.EventFailed)

	st.mu.Lock()
	if st.downSends != 0 {
		t.Errorf("%d sends attempted while the stream was down", st.downSends)
	}
	st.mu.Unlock()

	// Closing with an event held does not wait for a stream.
	st.set(false)
	d := e.invoke("req-held-d-0123456789abcdef", "count", `{"to":1}`)
	completeCount(t, rt2.next(t), 1)
	e.settled(d.TaskID)
	closed := make(chan error, 1)
	go func() { closed <- e.svc.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Close waits for a stream")
	}
}

// completeCount completes a scripted count execution with n.
func completeCount(t *testing.T, x *scriptedExec, n int) {
	t.Helper()
	res, err := runtime.TextResult("Counted.", map[string]int{"counted": n})
	if err != nil {
		t.Fatal(err)
	}
	if err := x.rep.Complete(res); err != nil {
		t.Fatal(err)
	}
}
