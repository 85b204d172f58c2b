package integration

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"agentgw/c2s"
	"agentgw/internal/harness"
	"agentgw/internal/pgtest"
	"agentgw/task"
)

// Store faults (issue 12): a write lock held by another process past the
// busy timeout, and a full disk.

// lockHold is how long the test holds the write lock: longer than twice
// the store's busy timeout (10 s, db.busyTimeoutMillis), so that the
// result's commit meets the lock's end even if another write of the
// gateway (the tool's process record, say) was queued first on the single
// writer connection.
const lockHold = 25 * time.Second

// ledgerInvoke sends one invocation of the ledger tool and returns the
// task ID accepted, or the raw answer of a refusal (with an empty ID).
func ledgerInvoke(t *testing.T, w *taskWire, c *c2s.Client, key string, delayMS int) (taskID, raw string) {
	t.Helper()
	_, hash := activeVersion(t, ledgerEndpoint)
	return ledgerInvokeHash(t, w, c, hash, key, delayMS)
}

func ledgerInvokeHash(t *testing.T, w *taskWire, c *c2s.Client, hash, key string, delayMS int) (taskID, raw string) {
	t.Helper()
	inv := marshalTask(t, task.Invoke{
		RequestID: newRequestID(t), Tool: ledgerTool, APIVersion: ledgerVersion, ManifestHash: mustDigest(t, hash),
		Arguments: fmt.Sprintf(`{"key":%q,"delay_ms":%d}`, key, delayMS),
	})
	el, raw := w.taskIQ(c, "set", ledgerEndpoint, inv)
	if typ, _ := el.AttrValue("type"); typ == "error" {
		return "", raw
	}
	kids := el.Children()
	if len(kids) != 1 {
		t.Fatalf("invoke: %s", raw)
	}
	acc, err := task.ParseAccepted(kids[0])
	if err != nil {
		t.Fatalf("invoke: %v: %s", err, raw)
	}
	return acc.TaskID, raw
}

// taskResult fetches a settled task's result payload.
func taskResult(t *testing.T, w *taskWire, c *c2s.Client, taskID string) string {
	t.Helper()
	_, raw := w.taskIQ(c, "get", ledgerEndpoint, marshalTask(t, task.TaskResultRequest{TaskID: taskID}))
	return raw
}

// TestStoreLockHeld: another process holds BEGIN IMMEDIATE on the
// gateway's database for longer than the busy timeout while a running
// task completes. The result's commit waits and is retried: the task still
// ends completed, with its result, and its side effect happened once.
func TestStoreLockHeld(t *testing.T) {
	pgtest.SQLiteOnly(t, "a fault of the SQLite file; TestPostgresRestartUnderLoad is PostgreSQL's")
	need(t)
	ledger := withTaskEndpoints(t)
	w := newTaskWire(t)
	alice := login(t, "alice", harness.HomeDomain)
	w.drain(alice)
	key := "lock-" + newRequestID(t)[4:20]
	taskID, raw := ledgerInvoke(t, w, alice, key, 2000)
	if taskID == "" {
		t.Fatalf("refused: %s", raw)
	}
	// Wait until it runs, so that the lock is held when it completes: the
	// tool takes 2s, and the lock is taken within a few round trips.
	var running time.Time
	for deadline := time.Now().Add(20 * time.Second); ; {
		el, raw := w.taskIQ(alice, "get", ledgerEndpoint, marshalTask(t, task.TaskStateRequest{TaskID: taskID}))
		st, err := task.ParseTaskState(el.Children()[0])
		if err != nil {
			t.Fatalf("task state: %v %s", err, raw)
		}
		if st.State == task.StateRunning {
			running = time.Now()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s never ran: %s", taskID, st.State)
		}
		time.Sleep(20 * time.Millisecond)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	other, err := sql.Open("sqlite", suite.db+"?_pragma=busy_timeout(30000)")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	conn, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	locked := time.Now()
	t.Logf("write lock taken %v after the task was seen running", locked.Sub(running).Round(time.Millisecond))
	time.Sleep(lockHold)
	// Still running: the tool finished long ago, but its result cannot
	// have been committed while the lock was held.
	el, raw := w.taskIQ(alice, "get", ledgerEndpoint, marshalTask(t, task.TaskStateRequest{TaskID: taskID}))
	if st, err := task.ParseTaskState(el.Children()[0]); err != nil || st.State.Terminal() {
		t.Fatalf("task %s settled (%v) while the write lock was held: %s\n%s", taskID, err, raw, tail(suite.gateway.logText(), 30))
	}
	if lines := ledgerLines(t, ledger, key); len(lines) != 1 {
		t.Fatalf("the tool did not run under the lock: ledger lines %q", lines)
	}
	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	t.Logf("write lock held for %v", time.Since(locked).Round(time.Millisecond))

	st := w.awaitSettled(alice, ledgerEndpoint, taskID)
	if st.State != task.StateCompleted {
		t.Fatalf("task %s settled %s after the lock was released\n%s", taskID, st.State, tail(suite.gateway.logText(), 30))
	}
	if res := taskResult(t, w, alice, taskID); !strings.Contains(res, `appended `+key) {
		t.Fatalf("result of %s: %s", taskID, res)
	}
	if lines := ledgerLines(t, ledger, key); len(lines) != 1 {
		t.Fatalf("ledger lines %q", lines)
	}
	// The commit did meet the lock, and was retried past it. The success
	// is logged after the commit, so the test can see the task completed
	// before the line reaches the log: wait for it.
	waitLog(t, "store fault, retrying")
	waitLog(t, "commit succeeded after retries")
}

// TestStoreDiskFull: the database lives on a small tmpfs that fills up.
// Admissions are then refused with <resource-constraint/> (the log says
// so once), every task acknowledged before is intact and settles once
// space is back, and admissions work again.
func TestStoreDiskFull(t *testing.T) {
	pgtest.SQLiteOnly(t, "a fault of the SQLite file; TestPostgresRestartUnderLoad is PostgreSQL's")
	need(t)
	if os.Geteuid() != 0 {
		if requireServers() {
			t.Fatal("the full-disk test mounts a tmpfs and must run as root (AGENTGW_REQUIRE_SERVERS is set)")
		}
		t.Skip("the full-disk test mounts a tmpfs and must run as root")
	}
	ledger := withTaskEndpoints(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	mnt := filepath.Join(t.TempDir(), "small")
	if err := os.Mkdir(mnt, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=8m,mode=0700", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount: %v %s", err, out)
		}
	})
	// The suite's configuration with the database on the tmpfs.
	raw, err := os.ReadFile(suite.config)
	if err != nil {
		t.Fatal(err)
	}
	cfgText := strings.Replace(string(raw), `path = "agentgw.db"`, fmt.Sprintf("path = %q", filepath.Join(mnt, "agentgw.db")), 1)
	cfg := filepath.Join(suite.dir, "agentgw-tmpfs.toml")
	if err := os.WriteFile(cfg, []byte(cfgText), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := agentgw(ctx, "endpoint", "register", "-config", cfg, "-activate", ledgerManifest); err != nil {
		t.Fatalf("register ledger: %v %s", err, out)
	}
	_, hash := activeVersion(t, ledgerEndpoint)

	suite.gateway.stop()
	g, err := startGatewayWith(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	suite.gateway = g
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		suite.gateway.stop()
		ng, err := startGateway(ctx)
		if err != nil {
			t.Fatalf("restart the suite's gateway: %v", err)
		}
		suite.gateway = ng
	})

	w := newTaskWire(t)
	alice := login(t, "alice", harness.HomeDomain)
	w.drain(alice)
	run := newRequestID(t)[4:16]
	accepted := map[string]string{} // task ID → key
	admit := func(i int, delay int) (string, string) {
		key := fmt.Sprintf("full-%s-%04d", run, i)
		id, raw := ledgerInvokeHash(t, w, alice, hash, key, delay)
		if id != "" {
			accepted[id] = key
		}
		return id, raw
	}
	for i := 0; i < 5; i++ {
		if id, raw := admit(i, 0); id == "" {
			t.Fatalf("before the disk filled: %s", raw)
		}
	}

	// Fill the tmpfs.
	filler := filepath.Join(mnt, "filler")
	fillDisk(t, filler)

	// Admit until refused: the write-ahead log may absorb a few.
	refused := ""
	n := 5
	for ; n < 1000 && refused == ""; n++ {
		id, raw := admit(n, 500)
		if id == "" {
			if !strings.Contains(raw, "<resource-constraint") || !strings.Contains(raw, `type="wait"`) && !strings.Contains(raw, `type='wait'`) {
				t.Fatalf("refusal on a full disk: %s", raw)
			}
			refused = raw
		}
	}
	if refused == "" {
		t.Fatalf("%d admissions on a full disk, none refused", n)
	}
	// Refused again: the state holds while the disk is full.
	if id, raw := admit(n, 0); id != "" || !strings.Contains(raw, "<resource-constraint") {
		t.Fatalf("second admission on a full disk: %q %s", id, raw)
	}
	t.Logf("refused after %d admissions: %s", n, refused)

	// Space is back: admissions work again, and every acknowledged task
	// settles completed, its side effect done once.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	var again, last string
	for deadline := time.Now().Add(30 * time.Second); again == ""; {
		again, last = admit(n+1, 0)
		if again == "" {
			if time.Now().After(deadline) {
				t.Fatalf("admissions still refused after space was freed: %s", last)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	for id, key := range accepted {
		st := w.awaitSettled(alice, ledgerEndpoint, id)
		if st.State != task.StateCompleted {
			t.Errorf("task %s (%s) settled %s", id, key, st.State)
		}
		if lines := ledgerLines(t, ledger, key); len(lines) != 1 {
			t.Errorf("task %s (%s): ledger lines %q", id, key, lines)
		}
	}
	logText := g.logText()
	for _, l := range strings.Split(logText, "\n") {
		if strings.Contains(l, "taskd:") {
			t.Log(l)
		}
	}
	if c := strings.Count(logText, "the database's disk is full"); c != 1 {
		t.Errorf("the log says the disk is full %d times, want once:\n%s", c, tail(logText, 40))
	}
	if !strings.Contains(logText, "accepts writes again") {
		t.Errorf("the log never says the database accepts writes again:\n%s", tail(logText, 40))
	}
	// Nothing committed is damaged.
	if got := integrityCheck(t, filepath.Join(mnt, "agentgw.db")); got != "ok" {
		t.Errorf("integrity_check of the database that filled its disk: %s", got)
	}
}

// integrityCheck runs PRAGMA integrity_check on a database file.
func integrityCheck(t *testing.T, file string) string {
	t.Helper()
	d, err := sql.Open("sqlite", file+"?_pragma=busy_timeout(10000)&_pragma=query_only(1)")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var res []string
	rows, err := d.Query("PRAGMA integrity_check")
	if err != nil {
		t.Fatalf("integrity_check %s: %v", file, err)
	}
	defer rows.Close()
	for rows.Next() {
		var r string
		if err := rows.Scan(&r); err != nil {
			t.Fatal(err)
		}
		res = append(res, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(res, "; ")
}

// fillDisk writes file until its file system has no space left.
func fillDisk(t *testing.T, file string) {
	t.Helper()
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("fill: %v", err)
			}
			break
		}
	}
	// Whatever is left is smaller than a chunk: fill it byte by byte.
	for {
		if _, err := f.Write(buf[:512]); err != nil {
			break
		}
	}
}
