package integration

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"agentgw/c2s"
	"agentgw/internal/harness"
	"agentgw/internal/pgtest"
	"agentgw/task"
)

// PostgreSQL restarted under load: a gateway on a PostgreSQL store takes a
// stream of bob's invocations; the server is stopped as a crash would stop
// it, stays down 8 s, and comes back. Meanwhile the gateway answers wait
// errors, once an admission has retried the store for its 5 s
// (taskd.callerRetryWindow; the invocations are sent again), and it
// recovers without a restart of its own: the stream goes on, every
// accepted request replays to its task, every task settles, and no task's
// side effect happens twice.
func TestPostgresRestartUnderLoad(t *testing.T) {
	storeOutageUnderLoad(t, "restarting", true, func() { pgtest.Restart(t, 8*time.Second) })
}

// PostgreSQL hung under load: the same stream, while every process of the
// server is stopped (SIGSTOP) for 8 s, its connections open and silent,
// then let go on. A write waits for a hung server (docs/limits.md): the
// invocations meanwhile are answered late rather than refused, and the
// gateway goes on as after a restart, nothing lost and nothing run twice.
func TestPostgresHangUnderLoad(t *testing.T) {
	storeOutageUnderLoad(t, "hanging", false, func() { pgtest.Hang(t, 8*time.Second) })
}

// storeOutageUnderLoad runs bob's stream of invocations against a gateway
// on PostgreSQL, and outage (named by what) once 30 are accepted; with
// wantWait, some invocation must be refused with a wait error meanwhile.
func storeOutageUnderLoad(t *testing.T, what string, wantWait bool, outage func()) {
	onePass(t)
	need(t)
	if testing.Short() {
		t.Skip("skipped with -short")
	}
	const requests, restartAt, workers = 120, 30, 8
	pgURL := pgtest.URL(t)
	config, ledger := multiEjabberdConfig(t, "pg-restart-"+fmt.Sprint(time.Now().UnixNano()))
	raw, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(config)
	pgConfig := filepath.Join(dir, "agentgw-pg.toml")
	if err := os.WriteFile(pgConfig, []byte(strings.Replace(string(raw), `path = "agentgw.db"`, fmt.Sprintf("url = %q", pgURL), 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if out, err := agentgw(ctx, "endpoint", "register", "-config", pgConfig, "-activate", filepath.Join(dir, "ledger.manifest.json")); err != nil {
		t.Fatalf("register on PostgreSQL: %v %s", err, out)
	}
	g, err := startGatewayWith(ctx, pgConfig)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.stop)

	_, hash := activeVersionIn(t, pgConfig, multiLedger)
	digest := mustDigest(t, hash)
	run := newRequestID(t)[4:16]
	reqs := make([]*multiRequest, requests)
	for i := range reqs {
		r := &multiRequest{requestID: newRequestID(t), key: fmt.Sprintf("pgr-%s-%04d", run, i)}
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
	var accepted, lost, bounced atomic.Int64
	var failures sync.Map
	// An answer may take the admission's store retries (5 s) and a lock
	// or connect timeout (10 s).
	wg := multiStream(ctx, conns, workers, reqs, 30*time.Second, &accepted, &lost, &bounced, &failures)
	defer func() {
		cancel()
		wg.Wait()
	}()
	for accepted.Load() < restartAt && ctx.Err() == nil {
		time.Sleep(time.Millisecond)
	}
	before, waitsBefore := accepted.Load(), bounced.Load()
	t.Logf("%s PostgreSQL after %d acceptances", what, before)
	began := time.Now()
	outage()
	up, during := time.Now(), accepted.Load()-before
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatalf("out of time: %d of %d accepted", accepted.Load(), requests)
	}
	t.Logf("%d accepted in all, %d after the outage began (%d in its %v); %d wait errors (%d before), %d answers lost; the stream ended %v after the server was back",
		accepted.Load(), accepted.Load()-before, during, up.Sub(began).Round(time.Millisecond), bounced.Load(), waitsBefore, lost.Load(), time.Since(up).Round(time.Millisecond))
	failures.Range(func(k, v any) bool {
		t.Errorf("request %s: %s", k, v)
		return true
	})
	select {
	case <-g.done:
		t.Fatalf("the gateway exited:\n%s", tail(g.logText(), 30))
	default:
	}
	if wantWait && bounced.Load() == waitsBefore {
		t.Errorf("no wait error while the store was down (%d answers lost)", lost.Load())
	}
	// Every accepted request replays to its task.
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
	// Every task settles, its side effect at most once (once if it
	// completed).
	states, executed, settled := settleAll(ctx, t, pgURL, reqs, ledger, "pgr-"+run+"-", g.logText)
	t.Logf("all settled %v after the server was back; states %v; %d side effects, none twice", settled.Sub(up).Round(time.Millisecond), states, executed)
}
