package integration

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"agentgw/c2s"
	"agentgw/db"
	"agentgw/internal/harness"
	"agentgw/internal/pgtest"
	"agentgw/task"
	"agentgw/wire"
)

// Several gateways on one store (taskd/lease.go): real `agentgw serve`
// processes sharing one PostgreSQL database or one SQLite file, one of them
// killed with SIGKILL.

// Parameters of the two-gateway kill tests: issue 34 asks for 1,000
// admissions, on PostgreSQL; the SQLite variant, one machine's deployment,
// takes fewer to keep the suite's time down.
const (
	multiAdmissions       = 1000
	multiAdmissionsSQLite = 200
	multiWorkers          = 32
	multiConns            = 4
	multiMaxDelay         = 250
	multiIQTimeout        = 4 * time.Second
	multiIQTimeoutPG      = 30 * time.Second
	multiBudget           = 10 * time.Minute
	multiBudgetPG         = 20 * time.Minute
)

// multiLedger is the ledger endpoint the ejabberd gateways host.
const multiLedger = "ledger@" + harness.RemoteComponentDomain

// startGatewayNoWait starts `agentgw serve -config config` and returns at
// once: on Prosody a second gateway waits for the component domain and
// has no stream yet. It stops when the test ends.
func startGatewayNoWait(t testing.TB, config string) *gatewayProc {
	t.Helper()
	g := &gatewayProc{done: make(chan struct{}), upCh: make(chan struct{}, 16)}
	g.cmd = exec.Command(suite.bin, "serve", "-config", config)
	stderr, err := g.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := g.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			g.mu.Lock()
			g.log.WriteString(line + "\n")
			if strings.Contains(line, "component stream up") {
				g.ups++
				select {
				case g.upCh <- struct{}{}:
				default:
				}
			}
			g.mu.Unlock()
		}
		g.cmd.Wait()
		close(g.done)
	}()
	return g
}

// multiEjabberdConfig writes the configuration of the gateways that share
// one SQLite database as ejabberd's component: the ledger endpoint, which
// bob may invoke. It returns the configuration's path and the ledger file.
func multiEjabberdConfig(t *testing.T, name string) (config, ledger string) {
	t.Helper()
	return multiEjabberdConfigOn(t, name, "")
}

// multiEjabberdConfigOn is multiEjabberdConfig on the store at pgURL, a
// PostgreSQL database, or on SQLite's agentgw.db beside the configuration
// if pgURL is "".
func multiEjabberdConfigOn(t *testing.T, name, pgURL string) (config, ledger string) {
	t.Helper()
	return ledgerGateways(t, name, ledgerSetup{
		domain: harness.RemoteComponentDomain, server: suite.env.EjabberdComponentAddr,
		gateway: `name = "Two gateways on ejabberd"
rate_limit = 100000
rate_burst = 100000
domain_rate_limit = 100000
domain_rate_burst = 100000`,
		pgURL: pgURL, home: harness.RemoteDomain, ledgerJID: multiLedger, invoker: "bob",
	})
}

// ledgerSetup is the configuration of gateways sharing one store as one
// component: its domain, the server's component address, the [gateway]
// table's keys, the store (pgURL, or SQLite's agentgw.db if ""), the
// local domain, and the ledger endpoint that invoker@home may invoke.
type ledgerSetup struct {
	domain, server, gateway, pgURL, home, ledgerJID, invoker string
}

// ledgerGateways writes c's configuration under name, registers and
// activates the ledger endpoint, and returns the configuration's path and
// the ledger file.
func ledgerGateways(t *testing.T, name string, c ledgerSetup) (config, ledger string) {
	t.Helper()
	dir := filepath.Join(suite.dir, name)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "component.secret"), []byte(suite.env.ComponentSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ledgerDir := t.TempDir()
	ledger = filepath.Join(ledgerDir, "ledger.log")
	tool, err := filepath.Abs("../examples/tools/ledger-tool.sh")
	if err != nil {
		t.Fatal(err)
	}
	store := `path = "agentgw.db"`
	if c.pgURL != "" {
		store = fmt.Sprintf("url = %q", c.pgURL)
	}
	config = filepath.Join(dir, "agentgw.toml")
	body := fmt.Sprintf(`
[component]
domain = %[1]q
server = %[2]q
secret_file = "component.secret"
ping_interval = "5s"
ping_timeout = "3s"
reconnect_max = "2s"

[gateway]
%[3]s

[database]
%[4]s

[log]
level = "debug"

[policy]
local_domains = [%[5]q]

[[policy.visibility]]
principals = [%[5]q]
endpoints = ["*"]

[[endpoint]]
jid = %[6]q
runtime = "exec"
command = [%[7]q, %[8]q]
sandbox_write = [%[9]q]

[[policy.invoke]]
principals = ["%[10]s@%[5]s"]
endpoints = [%[6]q]
tools = ["*"]
`, c.domain, c.server, c.gateway, store, c.home, c.ledgerJID, tool, ledger, ledgerDir, c.invoker)
	if err := os.WriteFile(config, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(ledgerManifest)
	if err != nil {
		t.Fatal(err)
	}
	man := filepath.Join(dir, "ledger.manifest.json")
	if err := os.WriteFile(man, []byte(strings.ReplaceAll(string(raw), ledgerEndpoint, c.ledgerJID)), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if out, err := agentgw(ctx, "endpoint", "register", "-config", config, "-activate", man); err != nil {
		t.Fatalf("register ledger: %v %s", err, out)
	}
	return config, ledger
}

// multiRequest is one invocation: its payload never changes, so a retry
// is a replay.
type multiRequest struct {
	requestID, key, payload string
	taskID                  string
}

// multiInvoke sends r once and returns the task ID accepted, or errRetry
// when the outcome is unknown (no answer) or a wait.
func multiInvoke(ctx context.Context, c *c2s.Client, to string, r *multiRequest, lost, bounced *atomic.Int64) (string, error) {
	return multiInvokeWithin(ctx, c, to, r, lost, bounced, multiIQTimeout)
}

// multiInvokeWithin is multiInvoke waiting up to timeout for the answer.
func multiInvokeWithin(ctx context.Context, c *c2s.Client, to string, r *multiRequest, lost, bounced *atomic.Int64, timeout time.Duration) (string, error) {
	ictx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	raw, err := c.IQ(ictx, "set", to, r.payload)
	if err != nil {
		lost.Add(1)
		return "", errRetry
	}
	el, err := wire.Parse(raw)
	if err != nil {
		return "", err
	}
	if typ, _ := el.AttrValue("type"); typ == "error" {
		if strings.Contains(raw, `type="wait"`) || strings.Contains(raw, `type='wait'`) {
			bounced.Add(1)
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

// multiStream sends every request of reqs to multiLedger from workers
// goroutines over conns, each invocation waiting up to timeout for its
// answer and sent again after errRetry, until it is accepted (counted in
// accepted, its task ID set) or ctx ends; any other error is stored in
// failures. Wait on the group it returns.
func multiStream(ctx context.Context, conns []*c2s.Client, workers int, reqs []*multiRequest, timeout time.Duration,
	accepted, lost, bounced *atomic.Int64, failures *sync.Map) *sync.WaitGroup {
	work := make(chan *multiRequest, len(reqs))
	for _, r := range reqs {
		work <- r
	}
	close(work)
	wg := &sync.WaitGroup{}
	for i := range workers {
		wg.Add(1)
		go func(c *c2s.Client) {
			defer wg.Done()
			for r := range work {
				for ctx.Err() == nil {
					id, err := multiInvokeWithin(ctx, c, multiLedger, r, lost, bounced, timeout)
					if err == nil {
						r.taskID = id
						accepted.Add(1)
						break
					}
					if !errors.Is(err, errRetry) {
						failures.Store(r.requestID, err.Error())
						break
					}
					time.Sleep(time.Duration(50+rand.IntN(200)) * time.Millisecond)
				}
			}
		}(conns[i%len(conns)])
	}
	return wg
}

// TestTwoGatewaysOnEjabberdKill: two gateways on one PostgreSQL database
// are both ejabberd's component for one domain; bob's 1,000 invocations of
// the ledger tool (a line in a file per execution) are spread over both by
// ejabberd. One gateway is killed with SIGKILL in the middle of the
// stream. Every accepted task is found again by its replay, every one
// settles (those the dead gateway held are taken over by the survivor),
// and no task's side effect happens twice.
func TestTwoGatewaysOnEjabberdKill(t *testing.T) {
	onePass(t)
	need(t)
	if testing.Short() {
		t.Skip("skipped with -short")
	}
	twoGatewaysKill(t, "two-on-ejabberd-pg", pgtest.URL(t), multiAdmissions)
}

// TestTwoGatewaysOnEjabberdKillSQLite is TestTwoGatewaysOnEjabberdKill on
// one SQLite file shared by two gateways on one machine, with fewer
// admissions.
func TestTwoGatewaysOnEjabberdKillSQLite(t *testing.T) {
	onePass(t)
	need(t)
	if testing.Short() {
		t.Skip("skipped with -short")
	}
	twoGatewaysKill(t, "two-on-ejabberd", "", multiAdmissionsSQLite)
}

// twoGatewaysKill runs the kill test with admissions invocations on the
// store at pgURL, or on SQLite if pgURL is "".
func twoGatewaysKill(t *testing.T, name, pgURL string, admissions int) {
	start := time.Now()
	config, ledger := multiEjabberdConfigOn(t, name, pgURL)
	engine, iqTimeout, budget := "SQLite", multiIQTimeout, multiBudget
	if pgURL != "" {
		// Every statement of a write is a round trip to the server under
		// the store's write lock; on a loaded machine an admission can
		// take longer than SQLite's, and a request sent again after 4 s
		// only adds to the queue.
		engine, iqTimeout, budget = "PostgreSQL", multiIQTimeoutPG, multiBudgetPG
	}
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	a, err := startGatewayWith(ctx, config)
	if err != nil {
		t.Fatalf("gateway A: %v", err)
	}
	t.Cleanup(a.stop)
	b, err := startGatewayWith(ctx, config)
	if err != nil {
		t.Fatalf("gateway B: %v", err)
	}
	t.Cleanup(b.stop)
	if dir := os.Getenv("AGENTGW_MULTI_LOGS"); dir != "" {
		// Both gateways' logs, for a look at where the time went.
		t.Cleanup(func() {
			os.WriteFile(filepath.Join(dir, "A.log"), []byte(a.logText()), 0o600)
			os.WriteFile(filepath.Join(dir, "B.log"), []byte(b.logText()), 0o600)
		})
	}

	_, hash := activeVersionIn(t, config, multiLedger)
	digest := mustDigest(t, hash)
	run := newRequestID(t)[4:16]
	reqs := make([]*multiRequest, admissions)
	for i := range reqs {
		r := &multiRequest{requestID: newRequestID(t), key: fmt.Sprintf("multi-%s-%04d", run, i)}
		r.payload = marshalTask(t, task.Invoke{
			RequestID: r.requestID, Tool: ledgerTool, APIVersion: ledgerVersion, ManifestHash: digest,
			Arguments: fmt.Sprintf(`{"delay_ms":%d,"key":%q}`, rand.IntN(multiMaxDelay+1), r.key),
		})
		reqs[i] = r
	}
	conns := make([]*c2s.Client, multiConns)
	for i := range conns {
		conns[i] = login(t, "bob", harness.RemoteDomain)
	}

	prober := login(t, "bob", harness.RemoteDomain)

	var accepted, lost, bounced atomic.Int64
	var failures sync.Map
	wg := multiStream(ctx, conns, multiWorkers, reqs, iqTimeout, &accepted, &lost, &bounced, &failures)
	defer func() {
		cancel()
		wg.Wait()
	}()

	// Progress, for the record: where the time goes, before and after
	// the kill.
	progress := make(chan struct{})
	go func() {
		tick := time.NewTicker(5 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-progress:
				return
			case <-tick.C:
				t.Logf("%v: %d accepted, %d answers lost, %d bounced", time.Since(start).Round(time.Second), accepted.Load(), lost.Load(), bounced.Load())
			}
		}
	}()
	defer close(progress)
	for accepted.Load() < int64(admissions/3) && ctx.Err() == nil {
		time.Sleep(time.Millisecond)
	}
	t.Logf("%v: killing A", time.Since(start).Round(time.Millisecond))
	killedAt := accepted.Load()
	bBeforeKill := len(b.logText())
	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatalf("kill: %v", err)
	}
	// Failover on ejabberd: how long after the kill -9 the next stanza,
	// a ping of the endpoint sent after the kill on a connection of its
	// own, is answered (by the survivor), in the middle of the load.
	failover := make(chan time.Duration, 1)
	go func() { failover <- firstAnswer(ctx, prober, multiLedger, time.Now()) }()
	<-a.done
	killed := time.Now()
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatalf("out of time: %d of %d accepted", accepted.Load(), len(reqs))
	}
	failures.Range(func(k, v any) bool {
		t.Errorf("request %s: %s", k, v)
		return true
	})
	if t.Failed() {
		t.FailNow()
	}
	admitted := time.Now()

	// Every accepted request replays to its task, at the survivor.
	for _, r := range reqs {
		for ctx.Err() == nil {
			id, err := multiInvoke(ctx, conns[0], multiLedger, r, &lost, &bounced)
			if errors.Is(err, errRetry) {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			if err != nil || id != r.taskID {
				t.Errorf("replay of %s: task %q, error %v; accepted as %s", r.requestID, id, err, r.taskID)
			}
			break
		}
	}

	// Every task settles: those A held are taken over by B.
	where := pgURL
	if where == "" {
		where = filepath.Join(filepath.Dir(config), "agentgw.db")
	}
	states, executed, settled := settleAll(ctx, t, where, reqs, ledger, "multi-"+run+"-", b.logText)
	takeovers := regexp.MustCompile(`taking over tasks of a gateway.*tasks=(\d+)`).FindAllStringSubmatch(b.logText(), -1)
	taken := 0
	for _, m := range takeovers {
		var n int
		fmt.Sscan(m[1], &n)
		taken += n
	}
	if taken == 0 && states[string(task.StateFailed)] > 0 {
		t.Errorf("no takeover logged by B, but %d tasks failed", states[string(task.StateFailed)])
	}
	// Only the dead gateway's tasks change hands: a live one renews its
	// leases whatever queue of writes it has (db.Store.RenewLeases).
	const takeover, lostTask = "taking over tasks of a gateway", "another gateway holds the task now"
	if strings.Contains(a.logText(), takeover) || strings.Contains(b.logText()[:bBeforeKill], takeover) {
		t.Errorf("a gateway took over tasks of a live one:\nA:\n%s\nB:\n%s", grepLines(a.logText(), takeover), grepLines(b.logText()[:bBeforeKill], takeover))
	}
	if strings.Contains(a.logText(), lostTask) || strings.Contains(b.logText(), lostTask) {
		t.Errorf("a live gateway lost tasks to the other:\nA:\n%s\nB:\n%s", grepLines(a.logText(), lostTask), grepLines(b.logText(), lostTask))
	}
	ejFailover := <-failover
	if ejFailover < 0 {
		t.Errorf("no answer to a ping after the kill")
	}
	t.Logf("%s: ejabberd failover: a ping sent after the kill -9 was answered %v after it", engine, ejFailover.Round(time.Millisecond))
	t.Logf("%s: A killed after %d acceptances; %d accepted in %v (%d answers lost to the kill, %d bounced); B took over %d tasks; all settled %v after the kill; states %v; %d side effects, none twice; total %v",
		engine, killedAt, accepted.Load(), admitted.Sub(start).Round(time.Millisecond), lost.Load(), bounced.Load(), taken,
		settled.Sub(killed).Round(time.Millisecond), states, executed, time.Since(start).Round(time.Millisecond))
}

// settleAll waits until every task of reqs in the store at where (a SQLite
// path or a PostgreSQL URL) has settled, then checks each one's events for
// gaps and its side effects in the ledger, whose keys begin with prefix:
// at most one, with the task's handle, and exactly one if it completed. It
// returns the tasks by state, the side effects and when all had settled;
// log is shown if they never do.
func settleAll(ctx context.Context, t *testing.T, where string, reqs []*multiRequest, ledger, prefix string, log func() string) (states map[string]int, executed int, settled time.Time) {
	t.Helper()
	store, err := db.Open(ctx, where)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	byID := map[string]*multiRequest{}
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
			t.Fatalf("%d tasks never settled\n%s", n, tail(log(), 40))
		}
		time.Sleep(100 * time.Millisecond)
	}
	settled = time.Now()
	states = map[string]int{}
	for id := range byID {
		rec, err := store.Task(ctx, id)
		if err != nil {
			t.Errorf("task %s: %v", id, err)
			continue
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
		}
	}
	raw, err := os.ReadFile(ledger)
	if err != nil {
		t.Fatal(err)
	}
	lines := map[string][]string{}
	for _, l := range strings.Split(string(raw), "\n") {
		f := strings.Fields(l)
		if len(f) == 2 && strings.HasPrefix(f[1], prefix) {
			lines[f[1]] = append(lines[f[1]], f[0])
		}
	}
	for _, r := range reqs {
		hs := lines[r.key]
		executed += len(hs)
		if len(hs) > 1 {
			t.Errorf("task %s (%s) executed %d times", r.taskID, r.key, len(hs))
		}
		for _, h := range hs {
			if h != task.Handle(r.taskID) {
				t.Errorf("ledger line of %s has handle %s, not %s", r.key, h, task.Handle(r.taskID))
			}
		}
		if rec, err := store.Task(ctx, r.taskID); err == nil && rec.State == string(task.StateCompleted) && len(hs) != 1 {
			t.Errorf("completed task %s has %d ledger lines", r.taskID, len(hs))
		}
	}
	return states, executed, settled
}

// activeVersionIn reads the active version and hash of an endpoint with
// `agentgw endpoint status -config config`.
func activeVersionIn(t *testing.T, config, ep string) (version, hash string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := agentgw(ctx, "endpoint", "status", "-config", config, ep)
	if err != nil {
		t.Fatalf("endpoint status %s: %v %s", ep, err, out)
	}
	m := regexp.MustCompile(`(?m)^ \* (\S+) sha-256 (\S+) `).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no active version in:\n%s", out)
	}
	return m[1], m[2]
}

// TestProsodyWaiterTakesOver: a second gateway on the suite's
// configuration and database gets <conflict/> from Prosody, says at info
// that it waits, and serves within about a second of the connected one
// being killed with SIGKILL; a task the dead one ran is taken over and
// settles. The failover time is measured from the kill to the waiter's
// stream, and to the first answer alice gets.
func TestProsodyWaiterTakesOver(t *testing.T) {
	onePass(t)
	need(t)
	withTaskEndpoints(t)
	version, hash := activeVersion(t, demoEndpoint)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	waiter := startGatewayNoWait(t, suite.config)
	t.Cleanup(func() {
		if suite.gateway != waiter {
			waiter.stop()
		}
	})
	waitingRe := regexp.MustCompile(`level=INFO .*waiting to take over`)
	for !waitingRe.MatchString(waiter.logText()) {
		select {
		case <-waiter.done:
			t.Fatalf("the waiter exited:\n%s", waiter.logText())
		case <-ctx.Done():
			t.Fatalf("the waiter never said it waits:\n%s", tail(waiter.logText(), 30))
		case <-time.After(20 * time.Millisecond):
		}
	}
	// Waiting is no fault: the only lines above info are none.
	for _, l := range strings.Split(waiter.logText(), "\n") {
		if strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR") {
			t.Errorf("the waiter logged a fault: %s", l)
		}
	}

	// The wire first: its check, a cleanup, runs after alice's session
	// has closed and its drain has ended.
	w := newTaskWire(t)
	alice := login(t, "alice", harness.HomeDomain)
	w.drain(alice)
	// A task running on the connected gateway when it dies.
	inv := marshalTask(t, task.Invoke{RequestID: newRequestID(t), Tool: "count", APIVersion: version, ManifestHash: mustDigest(t, hash),
		Arguments: `{"to":5,"interval_ms":500}`})
	el, raw := iq(t, alice, "set", demoEndpoint, inv)
	if typ, _ := el.AttrValue("type"); typ != "result" {
		t.Fatalf("invoke: %s", raw)
	}
	acc, err := task.ParseAccepted(el.Children()[0])
	if err != nil {
		t.Fatal(err)
	}

	old := suite.gateway
	if err := old.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-old.done
	killed := time.Now()
	suite.gateway = waiter
	if err := waiter.waitUp(ctx); err != nil {
		t.Fatalf("the waiter did not take over: %v\n%s", err, tail(waiter.logText(), 30))
	}
	up := time.Since(killed)
	var answered time.Duration
	for {
		ictx, icancel := context.WithTimeout(ctx, 2*time.Second)
		raw, err := alice.IQ(ictx, "get", demoEndpoint, `<ping xmlns='urn:xmpp:ping'/>`)
		icancel()
		if err == nil && (strings.Contains(raw, "type='result'") || strings.Contains(raw, `type="result"`)) {
			answered = time.Since(killed)
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("no answer after the takeover: %v %s", err, raw)
		}
		time.Sleep(20 * time.Millisecond)
	}
	st := w.awaitSettled(alice, demoEndpoint, acc.TaskID)
	if !st.State.Terminal() {
		t.Errorf("task %s: %s", acc.TaskID, st.State)
	}
	t.Logf("Prosody failover: waiter's stream up %v after the kill -9, first answer after %v; the dead gateway's task settled %s at revision %d %v after the kill",
		up.Round(time.Millisecond), answered.Round(time.Millisecond), st.State, st.Revision, time.Since(killed).Round(time.Millisecond))
}

// firstAnswer pings to over c, each ping waiting up to a second, until one
// is answered with a result, and returns how long after since that was;
// -1 if ctx ends first.
func firstAnswer(ctx context.Context, c *c2s.Client, to string, since time.Time) time.Duration {
	for ctx.Err() == nil {
		ictx, cancel := context.WithTimeout(ctx, time.Second)
		raw, err := c.IQ(ictx, "get", to, `<ping xmlns='urn:xmpp:ping'/>`)
		cancel()
		if err == nil && (strings.Contains(raw, "type='result'") || strings.Contains(raw, `type="result"`)) {
			return time.Since(since)
		}
		if err == nil {
			// An error (no route yet): ask again shortly.
			time.Sleep(5 * time.Millisecond)
		}
	}
	return -1
}

// floorLedger is the ledger endpoint of the gateways that share a
// PostgreSQL store as Prosody's second component, harness.FloorDomain
// (the suite's own gateway holds harness.ComponentDomain).
const floorLedger = "ledger@" + harness.FloorDomain

// floorConfig writes the configuration of gateways on the store at pgURL
// as Prosody's component harness.FloorDomain, hosting the ledger endpoint,
// which alice may invoke, and registers it. It returns the configuration's
// path and the ledger file.
func floorConfig(t *testing.T, name, pgURL string) (config, ledger string) {
	t.Helper()
	return ledgerGateways(t, name, ledgerSetup{
		domain: harness.FloorDomain, server: suite.env.ComponentAddr, gateway: `name = "Two gateways on Prosody"`,
		pgURL: pgURL, home: harness.HomeDomain, ledgerJID: floorLedger, invoker: "alice",
	})
}

// TestProsodyWaiterTakesOverPostgres is TestProsodyWaiterTakesOver with
// the store on PostgreSQL, on a component domain of its own: two gateways
// on one database, the second waiting on Prosody's <conflict/>. The
// connected one is killed with SIGKILL while it runs a task with a side
// effect; the waiter connects and answers, and the task settles through
// it with its side effect at most once (exactly once if it completed).
// The failover time is measured from the kill to the waiter's stream and
// to the first answer alice gets.
func TestProsodyWaiterTakesOverPostgres(t *testing.T) {
	onePass(t)
	need(t)
	pgURL := pgtest.URL(t)
	config, ledger := floorConfig(t, "two-on-prosody-pg", pgURL)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	first, err := startGatewayWith(ctx, config)
	if err != nil {
		t.Fatalf("first gateway: %v", err)
	}
	t.Cleanup(first.stop)
	waiter := startGatewayNoWait(t, config)
	t.Cleanup(waiter.stop)
	waitingRe := regexp.MustCompile(`level=INFO .*waiting to take over`)
	for !waitingRe.MatchString(waiter.logText()) {
		select {
		case <-waiter.done:
			t.Fatalf("the waiter exited:\n%s", waiter.logText())
		case <-ctx.Done():
			t.Fatalf("the waiter never said it waits:\n%s", tail(waiter.logText(), 30))
		case <-time.After(20 * time.Millisecond):
		}
	}
	for _, l := range strings.Split(waiter.logText(), "\n") {
		if strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR") {
			t.Errorf("the waiter logged a fault: %s", l)
		}
	}

	w := newTaskWire(t)
	alice := login(t, "alice", harness.HomeDomain)
	w.drain(alice)
	_, hash := activeVersionIn(t, config, floorLedger)
	key := "floor-" + newRequestID(t)[4:16]
	inv := marshalTask(t, task.Invoke{RequestID: newRequestID(t), Tool: ledgerTool, APIVersion: ledgerVersion, ManifestHash: mustDigest(t, hash),
		Arguments: fmt.Sprintf(`{"delay_ms":3000,"key":%q}`, key)})
	el, raw := iq(t, alice, "set", floorLedger, inv)
	if typ, _ := el.AttrValue("type"); typ != "result" {
		t.Fatalf("invoke: %s", raw)
	}
	acc, err := task.ParseAccepted(el.Children()[0])
	if err != nil {
		t.Fatal(err)
	}

	if err := first.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-first.done
	killed := time.Now()
	if err := waiter.waitUp(ctx); err != nil {
		t.Fatalf("the waiter did not take over: %v\n%s", err, tail(waiter.logText(), 30))
	}
	up := time.Since(killed)
	answered := firstAnswer(ctx, alice, floorLedger, killed)
	if answered < 0 {
		t.Fatalf("no answer after the takeover")
	}
	st := w.awaitSettled(alice, floorLedger, acc.TaskID)
	if !st.State.Terminal() {
		t.Errorf("task %s: %s", acc.TaskID, st.State)
	}
	settled := time.Since(killed)
	// The killed gateway's child may still be writing: give it the
	// task's delay before counting the side effects.
	time.Sleep(4 * time.Second)
	lines := ledgerLines(t, ledger, key)
	if len(lines) > 1 || (st.State == task.StateCompleted && len(lines) != 1) {
		t.Errorf("task %s %s with %d ledger lines: %q", acc.TaskID, st.State, len(lines), lines)
	}
	t.Logf("Prosody failover on PostgreSQL: waiter's stream up %v after the kill -9, first answer after %v; the dead gateway's task settled %s at revision %d %v after the kill, %d side effect(s)",
		up.Round(time.Millisecond), answered.Round(time.Millisecond), st.State, st.Revision, settled.Round(time.Millisecond), len(lines))
}

// grepLines returns the lines of log that contain s, at most 10.
func grepLines(log, s string) string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, s) && len(out) < 10 {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
