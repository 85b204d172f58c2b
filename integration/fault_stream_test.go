package integration

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"agentgw/c2s"
	"agentgw/db"
	"agentgw/internal/harness"
	"agentgw/task"

	"mellium.im/xmpp/jid"
)

// Fault tests of the component stream and of event delivery (issue 12):
// the XMPP server freezes or dies, the gateway dies, and nothing
// acknowledged is lost or left hanging.

const (
	// stallFor is how long Prosody stays frozen: longer than the gateway's
	// 10 s write deadline (gateway.replyTimeout) and than its keepalive.
	stallFor = 30 * time.Second
	// faultDeadline bounds every wait of these tests; it is generous, only
	// there so that a broken gateway fails the test instead of hanging it.
	faultDeadline = 90 * time.Second
	// stallCounts count tasks of stallSteps steps each, one step every
	// 30 ms, run across the freeze: about 1,000 events a second, so that
	// the gateway has more to write than the loopback socket buffers hold
	// (about 4 MB) well before the freeze ends.
	stallCounts = 32
	stallSteps  = 1000
)

// eventLog collects the task events that alice's sessions receive, checked
// against the schemas by a taskWire.
type eventLog struct {
	w       *taskWire
	mu      sync.Mutex
	last    map[string]task.Event // task ID → highest revision received
	changed chan struct{}
}

func newEventLog(w *taskWire) *eventLog {
	return &eventLog{w: w, last: map[string]task.Event{}, changed: make(chan struct{})}
}

// watch records the events c receives until its session ends.
func (l *eventLog) watch(c *c2s.Client) {
	l.w.drains.Add(1)
	go func() {
		defer l.w.drains.Done()
		for el := range c.Incoming() {
			l.w.element(el)
			if el.Start.Name.Local != "message" {
				continue
			}
			for _, k := range el.Children() {
				if k.Start.Name.Space != task.NS || k.Start.Name.Local != "event" {
					continue
				}
				ev, err := task.ParseEvent(k)
				if err != nil {
					continue
				}
				l.mu.Lock()
				if ev.Revision > l.last[ev.TaskID].Revision {
					l.last[ev.TaskID] = ev
				}
				close(l.changed)
				l.changed = make(chan struct{})
				l.mu.Unlock()
			}
		}
	}()
}

// get returns the latest event of a task, if any arrived.
func (l *eventLog) get(id string) (task.Event, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ev, ok := l.last[id]
	return ev, ok
}

// await waits for an event of the task that satisfies ok.
func (l *eventLog) await(t *testing.T, id string, what string, ok func(task.Event) bool) task.Event {
	t.Helper()
	deadline := time.After(faultDeadline)
	for {
		l.mu.Lock()
		ev, seen := l.last[id]
		ch := l.changed
		l.mu.Unlock()
		if seen && ok(ev) {
			return ev
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("task %s: no %s event (last: %+v)\ngateway log tail:\n%s", id, what, ev, tail(suite.gateway.logText(), 30))
		}
	}
}

func terminalEvent(ev task.Event) bool {
	return ev.Type == task.EventCompleted || ev.Type == task.EventFailed || ev.Type == task.EventCancelled
}

// invokeDemo invokes a demo tool as c and returns the task ID accepted.
func invokeDemo(t *testing.T, w *taskWire, c *c2s.Client, tool, args string) string {
	t.Helper()
	version, hash := activeVersion(t, demoEndpoint)
	inv := task.Invoke{RequestID: newRequestID(t), Tool: tool, APIVersion: version, ManifestHash: mustDigest(t, hash), Arguments: args}
	el, raw := w.taskIQ(c, "set", demoEndpoint, marshalTask(t, inv))
	kids := el.Children()
	if len(kids) != 1 {
		t.Fatalf("invoke %s: %s", tool, raw)
	}
	acc, err := task.ParseAccepted(kids[0])
	if err != nil {
		t.Fatalf("invoke %s: %v: %s", tool, err, raw)
	}
	return acc.TaskID
}

// awaitTerminal polls the task's state until it is terminal, for up to
// limit: the counts of TestFaultProsodyStopped run far slower than their
// nominal 30 s on a loaded machine, past awaitSettled's patience.
func awaitTerminal(t *testing.T, w *taskWire, c *c2s.Client, ep, id string, limit time.Duration) task.TaskState {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		el, raw := w.taskIQ(c, "get", ep, marshalTask(t, task.TaskStateRequest{TaskID: id}))
		kids := el.Children()
		if len(kids) != 1 {
			t.Fatalf("task state: %s", raw)
		}
		st, err := task.ParseTaskState(kids[0])
		if err != nil {
			t.Fatalf("task state: %v: %s", err, raw)
		}
		if st.State.Terminal() {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s still %s", id, st.State)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// ensureProsody leaves Prosody running and the gateway connected for the
// tests after this one, whatever this one did to them.
func ensureProsody(t *testing.T) {
	t.Cleanup(func() {
		_ = suite.env.SignalProsody(syscall.SIGCONT)
		ctx, cancel := context.WithTimeout(context.Background(), faultDeadline)
		defer cancel()
		if suite.env.PIDs()["prosody"] == 0 {
			if err := suite.env.StartProsody(ctx); err != nil {
				t.Errorf("start prosody: %v", err)
			}
		}
	})
}

// TestFaultProsodyStopped: Prosody is frozen (SIGSTOP) for longer than the
// gateway's write deadline while tasks keep producing events, more than the
// socket buffers hold, then resumed (SIGCONT). A write times out; the
// gateway drops that stream rather than stay connected and mute (mellium
// keeps the write error), reconnects and answers within a few seconds;
// every task completes and its terminal event reaches the caller. The
// keepalive is out of play (ping_interval far beyond the test), so only
// the failed write can reveal the stall.
func TestFaultProsodyStopped(t *testing.T) {
	need(t)
	ledger := withTaskEndpoints(t)
	extra, err := taskConfig(ledger)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeConfig(extra); err != nil {
		t.Fatal(err)
	}
	body, err := os.ReadFile(suite.config)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(suite.config, []byte(strings.Replace(string(body), `ping_interval = "5s"`, `ping_interval = "10m"`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	rctx, rcancel := context.WithTimeout(context.Background(), faultDeadline)
	defer rcancel()
	if _, err := restartGateway(rctx); err != nil {
		t.Fatal(err)
	}
	ensureProsody(t)
	w := newTaskWire(t)
	alice := login(t, "alice", harness.HomeDomain)
	events := newEventLog(w)
	events.watch(alice)

	// Counts run across the freeze, their progress events written on a
	// stream that the server does not read, until a write times out.
	var ids []string
	for range stallCounts {
		ids = append(ids, invokeDemo(t, w, alice, "count", fmt.Sprintf(`{"to":%d,"interval_ms":30}`, stallSteps)))
	}
	for _, id := range ids {
		events.await(t, id, "progress", func(ev task.Event) bool { return ev.Revision >= 2 })
	}

	if err := suite.env.SignalProsody(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	frozen := make(chan string, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), stallFor+10*time.Second)
		defer cancel()
		raw, err := alice.IQ(ctx, "get", demoEndpoint, discoInfo)
		if err != nil {
			raw = "no answer: " + err.Error()
		}
		frozen <- raw
	}()
	time.Sleep(stallFor)
	if err := suite.env.SignalProsody(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}

	resumed := time.Now()
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for _, l := range strings.Split(suite.gateway.logText(), "\n") {
			if !strings.Contains(l, "level=DEBUG") && !strings.Contains(l, "event queue full") {
				t.Log(l)
			}
		}
		t.Log("resumed at", resumed.UTC().Format(time.RFC3339Nano))
	})
	// The gateway answers again: on the same stream if every write fitted
	// in the socket buffers, or on a new one once a write timed out. The
	// server bounces requests while the component is reconnecting.
	fresh := login(t, "alice", harness.HomeDomain)
	for answerBy := time.Now().Add(faultDeadline); ; {
		// A short wait per attempt: a request the server routes to the
		// component session it has not yet noticed is gone is lost there.
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		raw, err := fresh.IQ(ctx, "get", demoEndpoint, discoInfo)
		cancel()
		if err == nil && strings.Contains(raw, "urn:xmpp:agent-endpoint-info:0") {
			break
		}
		if time.Now().After(answerBy) {
			t.Fatalf("no answer after the freeze: %v %.200s\n%s", err, raw, tail(suite.gateway.logText(), 30))
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("answered %v after SIGCONT", time.Since(resumed).Round(10*time.Millisecond))
	// The IQ sent into the frozen server is either answered or lost by
	// the server: Prosody routes it to the component session it has not
	// yet seen closed, which is out of the gateway's hands (the pending
	// IQs of the gateway itself fail with the stream; see the gateway's
	// TestWriteTimeoutDropsStream).
	t.Logf("IQ sent during the freeze: %.100s", <-frozen)
	// Every task that ran across the freeze completes; its terminal event
	// reaches the caller, unless the caller's own session or its buffer
	// gave out under the flood.
	for _, id := range ids {
		st := awaitTerminal(t, w, fresh, demoEndpoint, id, 3*time.Minute)
		if st.State != task.StateCompleted {
			t.Errorf("task %s ended %s", id, st.State)
		}
		select {
		case <-alice.Done():
			t.Logf("alice's first session did not survive the freeze: %v", alice.Err())
			continue
		default:
		}
		if alice.Dropped() == 0 {
			events.await(t, id, "terminal", terminalEvent)
		}
	}
	log := suite.gateway.logText()
	t.Logf("stall detected by a failed write: %v; reconnects: %d",
		strings.Contains(log, "write failed; dropping the component stream"), strings.Count(log, "component stream up")-1)
}

// TestFaultGatewayKilledDuringTask: the gateway is killed (SIGKILL) while
// a task runs. The restarted gateway settles the task in its recovery,
// before its stream is up; the caller, still connected, receives that
// terminal event without asking for it.
func TestFaultGatewayKilledDuringTask(t *testing.T) {
	need(t)
	withTaskEndpoints(t)
	w := newTaskWire(t)
	alice := login(t, "alice", harness.HomeDomain)
	events := newEventLog(w)
	events.watch(alice)

	id := invokeDemo(t, w, alice, "count", `{"to":200,"interval_ms":50}`)
	events.await(t, id, "progress", func(ev task.Event) bool { return ev.Revision >= 2 })
	g := suite.gateway
	if err := g.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-g.done
	before, _ := events.get(id)
	ctx, cancel := context.WithTimeout(context.Background(), faultDeadline)
	defer cancel()
	ng, err := startGateway(ctx)
	if err != nil {
		t.Fatalf("restart: %v\n%s", err, tail(g.logText(), 30))
	}
	suite.gateway = ng

	ev := events.await(t, id, "terminal", terminalEvent)
	if ev.Revision <= before.Revision {
		t.Errorf("terminal event at revision %d, after %d before the kill", ev.Revision, before.Revision)
	}
	// The event agrees with the committed task.
	st := w.awaitSettled(alice, demoEndpoint, id)
	if string(st.State) != string(ev.Type) || st.Revision != ev.Revision {
		t.Errorf("event %s at %d, task-state %s at %d", ev.Type, ev.Revision, st.State, st.Revision)
	}
	t.Logf("terminal event after the restart: %s at revision %d: %s", ev.Type, ev.Revision, ev.Payload)
}

// Parameters of TestFaultProsodyRestartsUnderLoad.
const (
	loadTasks    = 200
	loadKills    = 3
	loadWorkers  = 16
	loadConns    = 4
	loadMaxDelay = 1500 // ms of the ledger tool: tasks run across the kills
)

// liveSession is one of alice's sessions that comes back after Prosody
// restarts: every user of it gets the current client, or a new one.
type liveSession struct {
	mu     sync.Mutex
	c      *c2s.Client
	t      *testing.T
	events *eventLog
}

// get returns a connected client, dialing again (until ctx ends) when the
// last one's session has ended.
func (s *liveSession) get(ctx context.Context) (*c2s.Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.c != nil {
		select {
		case <-s.c.Done():
		default:
			return s.c, nil
		}
	}
	for {
		dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		c, err := c2s.Dial(dctx, suite.env.ProsodyC2S, jid.MustParse("alice@"+harness.HomeDomain), password)
		if err == nil {
			// Available, so that an event addressed to a resource that
			// died with the server reaches alice's other resources, or
			// waits in her offline storage for them.
			err = c.SendRaw(dctx, `<presence/>`)
			if err != nil {
				c.Close()
			}
		}
		cancel()
		if err == nil {
			s.t.Cleanup(func() { c.Close() })
			s.events.watch(c)
			s.c = c
			return c, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestFaultProsodyRestartsUnderLoad kills Prosody (SIGKILL) and starts it
// again three times while 200 invocations of the ledger tool (an exec tool
// whose side effect is one line in a file) are admitted and run, from
// sessions that log in again after each kill. Every acknowledged task
// settles; its terminal event reached the caller, or task-state gives the
// committed outcome; and no task ran twice.
func TestFaultProsodyRestartsUnderLoad(t *testing.T) {
	need(t)
	if testing.Short() {
		t.Skip("the load fault test is skipped with -short")
	}
	ledger := withTaskEndpoints(t)
	ensureProsody(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	_, hash := activeVersion(t, ledgerEndpoint)
	digest := mustDigest(t, hash)
	run := newRequestID(t)[4:16]
	reqs := make([]*crashRequest, loadTasks)
	for i := range reqs {
		r := &crashRequest{requestID: newRequestID(t), key: fmt.Sprintf("fault-%s-%04d", run, i)}
		r.payload = marshalTask(t, task.Invoke{
			RequestID: r.requestID, Tool: ledgerTool, APIVersion: ledgerVersion, ManifestHash: digest,
			Arguments: fmt.Sprintf(`{"delay_ms":%d,"key":%q}`, rand.IntN(loadMaxDelay+1), r.key),
		})
		reqs[i] = r
	}
	w := newTaskWire(t)
	events := newEventLog(w)
	sessions := make([]*liveSession, loadConns)
	for i := range sessions {
		sessions[i] = &liveSession{t: t, events: events}
		if _, err := sessions[i].get(ctx); err != nil {
			t.Fatal(err)
		}
	}

	var stats crashStats
	var failures sync.Map
	work := make(chan *crashRequest, len(reqs))
	for _, r := range reqs {
		work <- r
	}
	close(work)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	for i := 0; i < loadWorkers; i++ {
		wg.Add(1)
		go func(s *liveSession) {
			defer wg.Done()
			for r := range work {
				for ctx.Err() == nil {
					c, err := s.get(ctx)
					if err != nil {
						break
					}
					id, err := crashInvoke(ctx, c, w, r, &stats)
					if err == nil {
						r.taskID = id
						stats.accepted.Add(1)
						break
					}
					if !errors.Is(err, errRetry) {
						failures.Store(r.requestID, err.Error())
						break
					}
					time.Sleep(time.Duration(50+rand.IntN(200)) * time.Millisecond)
				}
			}
		}(sessions[i%loadConns])
	}

	// The killer: Prosody dies at spread admission counts and comes back.
	for k := 1; k <= loadKills; k++ {
		at := int64(k * loadTasks / (loadKills + 1))
		for stats.accepted.Load() < at && ctx.Err() == nil {
			time.Sleep(5 * time.Millisecond)
		}
		n := stats.accepted.Load()
		if err := suite.env.KillProsody(); err != nil {
			t.Fatal(err)
		}
		if err := suite.env.StartProsody(ctx); err != nil {
			t.Fatal(err)
		}
		if err := suite.gateway.waitUp(ctx); err != nil {
			t.Fatalf("the gateway did not reconnect after kill %d: %v\n%s", k, err, tail(suite.gateway.logText(), 30))
		}
		t.Logf("prosody killed after %d acceptances; gateway reconnected", n)
	}
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatalf("out of time: %d of %d accepted", stats.accepted.Load(), len(reqs))
	}
	failures.Range(func(k, v any) bool {
		t.Errorf("request %s: %s", k, v)
		return true
	})
	if t.Failed() {
		t.FailNow()
	}

	// Every acknowledged task settles.
	store, err := db.Open(ctx, suite.db)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ours := map[string]*crashRequest{}
	for _, r := range reqs {
		ours[r.taskID] = r
	}
	for {
		live, err := store.LiveTasks(ctx)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, rec := range live {
			if ours[rec.ID] != nil {
				n++
			}
		}
		if n == 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("%d acknowledged tasks never settled", n)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// Each terminal outcome reached the caller as an event, or task-state
	// gives it; both agree with the store.
	c, err := sessions[0].get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	received, recovered := 0, 0
	states := map[string]int{}
	for _, r := range reqs {
		rec, err := store.Task(ctx, r.taskID)
		if err != nil {
			t.Errorf("task %s: %v", r.taskID, err)
			continue
		}
		states[rec.State]++
		if ev, ok := events.get(r.taskID); ok && terminalEvent(ev) {
			received++
			if string(ev.Type) != rec.State || ev.Revision != rec.Revision {
				t.Errorf("task %s: event %s at %d, stored %s at %d", r.taskID, ev.Type, ev.Revision, rec.State, rec.Revision)
			}
			continue
		}
		recovered++
		st := w.awaitSettled(c, ledgerEndpoint, r.taskID)
		if string(st.State) != rec.State || st.Revision != rec.Revision {
			t.Errorf("task %s: task-state %s at %d, stored %s at %d", r.taskID, st.State, st.Revision, rec.State, rec.Revision)
		}
	}

	// Nothing ran twice; every completed task ran once.
	raw, err := os.ReadFile(ledger)
	if err != nil {
		t.Fatal(err)
	}
	lines := map[string]int{}
	for _, l := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(l); len(f) == 2 {
			lines[f[1]]++
		}
	}
	for _, r := range reqs {
		n := lines[r.key]
		if n > 1 {
			t.Errorf("task %s (%s) ran %d times", r.taskID, r.key, n)
		}
		if rec, err := store.Task(ctx, r.taskID); err == nil && rec.State == string(task.StateCompleted) && n != 1 {
			t.Errorf("completed task %s has %d ledger lines", r.taskID, n)
		}
	}
	t.Logf("%d accepted (%d invocations sent, %d unanswered, %d bounced); states %v; terminal events received %d, recovered by task-state %d",
		stats.accepted.Load(), stats.sent.Load(), stats.lost.Load(), stats.bounced.Load(), states, received, recovered)
}
