package integration

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"agentgw/c2s"
	"agentgw/db"
	"agentgw/internal/harness"
	"agentgw/task"
	"agentgw/wire"
)

// Parameters of the crash test.
const (
	// crashAdmissions is how many invocations must be accepted.
	crashAdmissions = 1200
	// crashKills is how many times the gateway is killed with SIGKILL
	// while admissions go on.
	crashKills = 5
	// crashWorkers invocations are in flight at once, over crashConns
	// sessions of alice.
	crashWorkers = 64
	crashConns   = 8
	// crashIQTimeout is how long a worker waits for an answer before it
	// sends the identical invocation again.
	crashIQTimeout = 4 * time.Second
	// crashMaxDelay bounds the ledger tool's delay_ms: tasks are still
	// running when the gateway dies.
	crashMaxDelay = 250
	// crashStall is how long the run may go without a new acceptance:
	// that long is a defect (a hang), not a slow machine. Beside a second
	// suite the run's pace fell below two acceptances a second, and a
	// 10-minute bound on the whole run failed it with nothing wrong.
	crashStall = 3 * time.Minute
	// crashBudget bounds the whole test, as a last resort under the
	// package's own timeout.
	crashBudget = 30 * time.Minute
)

// crashRequest is one invocation of the crash test: its payload never
// changes, so every retry and replay is identical.
type crashRequest struct {
	requestID, key, payload string
	// taskID is set once accepted.
	taskID string
}

// crashStats counts what happened to the invocations.
type crashStats struct {
	accepted, sent, lost, bounced, replays atomic.Int64
}

// TestCrash kills the gateway with SIGKILL at random points while
// crashWorkers concurrent invocations of the ledger tool (an exec tool
// whose side effect is a line in a file) are being admitted, restarts it
// each time, and then checks the durability promises: every request that
// got <accepted/> exists and replays to the same task ID; no task's side
// effect happened twice; no task's history has a revision gap.
func TestCrash(t *testing.T) {
	need(t)
	if testing.Short() {
		t.Skip("the crash test is skipped with -short")
	}
	start := time.Now()
	ledger := withTaskEndpoints(t)
	ctx, cancel := context.WithTimeout(context.Background(), crashBudget)
	defer cancel()

	_, hash := activeVersion(t, ledgerEndpoint)
	digest := mustDigest(t, hash)
	run := newRequestID(t)[4:16]
	reqs := make([]*crashRequest, crashAdmissions)
	for i := range reqs {
		r := &crashRequest{requestID: newRequestID(t), key: fmt.Sprintf("crash-%s-%04d", run, i)}
		r.payload = marshalTask(t, task.Invoke{
			RequestID: r.requestID, Tool: ledgerTool, APIVersion: ledgerVersion, ManifestHash: digest,
			Arguments: fmt.Sprintf(`{"delay_ms":%d,"key":%q}`, rand.IntN(crashMaxDelay+1), r.key),
		})
		reqs[i] = r
	}
	// Every task payload received, answers and events, is validated.
	w := newTaskWire(t)
	conns := make([]*c2s.Client, crashConns)
	for i := range conns {
		conns[i] = login(t, "alice", harness.HomeDomain)
		w.drain(conns[i])
	}

	var stats crashStats
	var failures sync.Map // request ID → unexpected answer
	work := make(chan *crashRequest, len(reqs))
	for _, r := range reqs {
		work <- r
	}
	close(work)
	var wg sync.WaitGroup
	// On any early exit, stop the workers before the sessions close.
	defer func() {
		cancel()
		wg.Wait()
	}()
	for i := 0; i < crashWorkers; i++ {
		wg.Add(1)
		go func(c *c2s.Client) {
			defer wg.Done()
			for r := range work {
				for ctx.Err() == nil {
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
		}(conns[i%crashConns])
	}

	// The watchdog: no acceptance for crashStall ends the run.
	var stalled atomic.Bool
	go func() {
		last, seen := stats.accepted.Load(), time.Now()
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if n := stats.accepted.Load(); n != last {
				last, seen = n, time.Now()
			} else if time.Since(seen) > crashStall {
				stalled.Store(true)
				cancel()
				return
			}
		}
	}()

	// The killer: SIGKILL at random admission counts, spread over the run,
	// then a restart; the workers keep sending meanwhile.
	var kills []string
	for k := 1; k <= crashKills; k++ {
		at := int64(k*crashAdmissions/(crashKills+1) + rand.IntN(crashAdmissions/(2*(crashKills+1))) - crashAdmissions/(4*(crashKills+1)))
		for stats.accepted.Load() < at && ctx.Err() == nil {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(time.Duration(rand.IntN(50)) * time.Millisecond)
		n := stats.accepted.Load()
		g := suite.gateway
		if err := g.cmd.Process.Kill(); err != nil {
			t.Fatalf("kill: %v", err)
		}
		<-g.done
		down := time.Now()
		ng, err := startGateway(ctx)
		if err != nil {
			t.Fatalf("restart after kill %d: %v\n%s", k, err, tail(g.logText(), 30))
		}
		suite.gateway = ng
		kills = append(kills, fmt.Sprintf("kill %d after %d acceptances, up again in %v", k, n, time.Since(down).Round(time.Millisecond)))
	}
	wg.Wait()
	if ctx.Err() != nil {
		if stalled.Load() {
			t.Fatalf("no acceptance for %v: %d of %d accepted", crashStall, stats.accepted.Load(), len(reqs))
		}
		t.Fatalf("out of time: %d of %d accepted", stats.accepted.Load(), len(reqs))
	}
	failures.Range(func(k, v any) bool {
		t.Errorf("request %s: %s", k, v)
		return true
	})
	if t.Failed() {
		t.FailNow()
	}
	admitted := time.Now()

	// Every accepted request exists: replaying each gives its task ID.
	replay := make(chan *crashRequest, len(reqs))
	for _, r := range reqs {
		replay <- r
	}
	close(replay)
	for i := 0; i < crashWorkers; i++ {
		wg.Add(1)
		go func(c *c2s.Client) {
			defer wg.Done()
			for r := range replay {
				for ctx.Err() == nil {
					id, err := crashInvoke(ctx, c, w, r, &stats)
					if errors.Is(err, errRetry) {
						time.Sleep(100 * time.Millisecond)
						continue
					}
					if err != nil || id != r.taskID {
						failures.Store(r.requestID, fmt.Sprintf("replay: task %q, error %v; accepted as %s", id, err, r.taskID))
					}
					stats.replays.Add(1)
					break
				}
			}
		}(conns[i%crashConns])
	}
	wg.Wait()
	failures.Range(func(k, v any) bool {
		t.Errorf("request %s: %s", k, v)
		return true
	})

	// Wait for every task to settle, then check each one's history in the
	// store: revisions 1..N with no gap, ending in a terminal event.
	store, err := db.Open(ctx, suite.db)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	byID := map[string]*crashRequest{}
	for _, r := range reqs {
		byID[r.taskID] = r
	}
	for {
		live, err := store.LiveTasks(ctx)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, rec := range live {
			if byID[rec.ID] != nil {
				n++
			}
		}
		if n == 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("%d tasks never settled", n)
		}
		time.Sleep(100 * time.Millisecond)
	}
	states := map[string]int{}
	for id, r := range byID {
		rec, err := store.Task(ctx, id)
		if err != nil {
			t.Errorf("task %s (request %s): %v", id, r.requestID, err)
			continue
		}
		if rec.RequestID != r.requestID || rec.Caller != "alice@"+harness.HomeDomain || !rec.Terminal {
			t.Errorf("task %s: request %s, caller %s, terminal %v", id, rec.RequestID, rec.Caller, rec.Terminal)
		}
		states[rec.State]++
		evs, err := store.TaskEvents(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		for i, ev := range evs {
			if ev.Revision != int64(i+1) {
				t.Errorf("task %s: event %d has revision %d: a gap", id, i+1, ev.Revision)
				break
			}
			if err := task.ValidatePayload(task.EventType(ev.Type), ev.Payload); err != nil {
				t.Errorf("task %s revision %d: %v", id, ev.Revision, err)
			}
		}
		if int64(len(evs)) != rec.Revision || len(evs) == 0 || evs[len(evs)-1].Type != map[string]string{
			"completed": "completed", "failed": "failed", "cancelled": "cancelled"}[rec.State] {
			t.Errorf("task %s: revision %d, %d events, state %s", id, rec.Revision, len(evs), rec.State)
		}
	}

	// The ledger: one line per executed task at most, and every completed
	// task executed exactly once; every line belongs to its task.
	raw, err := os.ReadFile(ledger)
	if err != nil {
		t.Fatal(err)
	}
	lines := map[string][]string{} // key → handles
	for _, l := range strings.Split(string(raw), "\n") {
		f := strings.Fields(l)
		if len(f) == 2 && strings.HasPrefix(f[1], "crash-"+run+"-") {
			lines[f[1]] = append(lines[f[1]], f[0])
		}
	}
	executed := 0
	for _, r := range reqs {
		hs := lines[r.key]
		executed += len(hs)
		if len(hs) > 1 {
			t.Errorf("task %s (%s) executed %d times", r.taskID, r.key, len(hs))
		}
		for _, h := range hs {
			if h != task.Handle(r.taskID) {
				t.Errorf("ledger line of %s has handle %s, not its task's %s", r.key, h, task.Handle(r.taskID))
			}
		}
		if rec, err := store.Task(ctx, r.taskID); err == nil && rec.State == string(task.StateCompleted) && len(hs) != 1 {
			t.Errorf("completed task %s has %d ledger lines", r.taskID, len(hs))
		}
	}

	// A sample checked over XMPP too: the state agrees with the store.
	for i, r := range reqs {
		if i%40 != 0 {
			continue
		}
		st := w.awaitSettled(conns[0], ledgerEndpoint, r.taskID)
		rec, err := store.Task(ctx, r.taskID)
		if err != nil || st.Revision != rec.Revision || string(st.State) != rec.State {
			t.Errorf("task %s: state %s/%d over XMPP, %s/%d stored (%v)", r.taskID, st.State, st.Revision, rec.State, rec.Revision, err)
		}
	}

	for _, k := range kills {
		t.Log(k)
	}
	t.Logf("%d accepted (%d invocations sent, %d answers lost to kills, %d bounced while down) in %v; %d replays gave the same task; states %v; %d side effects executed, none twice; total %v",
		stats.accepted.Load(), stats.sent.Load(), stats.lost.Load(), stats.bounced.Load(), admitted.Sub(start).Round(time.Millisecond),
		stats.replays.Load(), states, executed, time.Since(start).Round(time.Millisecond))
}

// errRetry marks an invocation whose outcome is unknown or temporarily
// refused: the identical request is sent again.
var errRetry = errors.New("retry")

// crashInvoke sends r's invocation once and returns the task ID accepted.
func crashInvoke(ctx context.Context, c *c2s.Client, w *taskWire, r *crashRequest, stats *crashStats) (string, error) {
	stats.sent.Add(1)
	ictx, cancel := context.WithTimeout(ctx, crashIQTimeout)
	defer cancel()
	raw, err := c.IQ(ictx, "set", ledgerEndpoint, r.payload)
	if err != nil {
		// No answer: the gateway died with the request in hand, or before.
		stats.lost.Add(1)
		return "", errRetry
	}
	el, err := wire.Parse(raw)
	if err != nil {
		return "", err
	}
	w.stanza(raw)
	if typ, _ := el.AttrValue("type"); typ == "error" {
		// A server bounce while the component is down, or a wait from the
		// gateway: type wait. Anything else is a real refusal.
		if strings.Contains(raw, `type="wait"`) || strings.Contains(raw, `type='wait'`) {
			stats.bounced.Add(1)
			return "", errRetry
		}
		return "", fmt.Errorf("refused: %s", raw)
	}
	kids := el.Children()
	if len(kids) != 1 {
		return "", fmt.Errorf("unexpected answer: %s", raw)
	}
	acc, err := task.ParseAccepted(kids[0])
	if err != nil || acc.RequestID != r.requestID {
		return "", fmt.Errorf("not an acceptance of %s: %s", r.requestID, raw)
	}
	return acc.TaskID, nil
}
