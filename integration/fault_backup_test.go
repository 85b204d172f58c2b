package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"agentgw/c2s"
	"agentgw/db"
	"agentgw/internal/harness"
	"agentgw/internal/pgtest"
	"agentgw/task"
	"agentgw/wire"
)

// TestBackupDuringLoad: `agentgw backup` while tasks are admitted and run
// gives a database that opens, passes integrity_check and holds every task
// acknowledged before the backup began; a second backup to the same file
// is refused. On PostgreSQL, `agentgw backup` refuses, naming pg_dump,
// and writes nothing.
func TestBackupDuringLoad(t *testing.T) {
	need(t)
	if pgtest.OnPostgres() {
		dest := filepath.Join(t.TempDir(), "backup.db")
		out, err := agentgw(context.Background(), "backup", "-config", suite.config, dest)
		if err == nil || !strings.Contains(out, "pg_dump") {
			t.Errorf("backup of a PostgreSQL store: %v %s", err, out)
		}
		if _, err := os.Stat(dest); err == nil {
			t.Errorf("the refused backup wrote %s", dest)
		}
		return
	}
	withTaskEndpoints(t)
	_, hash := activeVersion(t, ledgerEndpoint)
	digest := mustDigest(t, hash)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	var (
		mu       sync.Mutex
		accepted []string
		stop     = make(chan struct{})
		wg       sync.WaitGroup
	)
	conns := []*c2s.Client{login(t, "alice", harness.HomeDomain), login(t, "alice", harness.HomeDomain)}
	run := newRequestID(t)[4:16]
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(c *c2s.Client, worker int) {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				id, _ := task.NewID(nil, "req-")
				inv, err := wire.Marshal(task.Invoke{
					RequestID: id, Tool: ledgerTool, APIVersion: ledgerVersion, ManifestHash: digest,
					Arguments: fmt.Sprintf(`{"key":"backup-%s-%d-%d","delay_ms":%d}`, run, worker, n, n%50),
				}.TokenReader())
				if err != nil {
					t.Error(err)
					return
				}
				ictx, icancel := context.WithTimeout(ctx, 90*time.Second)
				raw, err := c.IQ(ictx, "set", ledgerEndpoint, inv)
				icancel()
				if err != nil {
					t.Errorf("invoke: %v", err)
					return
				}
				el, err := wire.Parse(raw)
				if err != nil || len(el.Children()) != 1 {
					t.Errorf("invoke answer: %v %s", err, raw)
					return
				}
				acc, err := task.ParseAccepted(el.Children()[0])
				if err != nil {
					t.Errorf("invoke answer: %v %s", err, raw)
					return
				}
				mu.Lock()
				accepted = append(accepted, acc.TaskID)
				mu.Unlock()
			}
		}(conns[i%len(conns)], i)
	}
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(accepted)
	}
	halt := sync.OnceFunc(func() { close(stop) })
	defer func() {
		halt()
		wg.Wait()
	}()
	waitCount := func(n int) {
		for count() < n {
			if ctx.Err() != nil || t.Failed() {
				t.Fatalf("only %d tasks accepted", count())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitCount(200)

	mu.Lock()
	before := append([]string(nil), accepted...)
	mu.Unlock()
	dest := filepath.Join(t.TempDir(), "backup.db")
	out, err := agentgw(ctx, "backup", "-config", suite.config, dest)
	if err != nil || !strings.Contains(out, "backed up") {
		t.Fatalf("backup: %v %s", err, out)
	}
	during := count() - len(before)
	waitCount(count() + 100) // the load went on after the backup
	halt()
	wg.Wait()

	if out, err := agentgw(ctx, "backup", "-config", suite.config, dest); err == nil || !strings.Contains(out, "already exists") {
		t.Errorf("a second backup to %s: %v %s", dest, err, out)
	}
	if got := integrityCheck(t, dest); got != "ok" {
		t.Fatalf("integrity_check of the backup: %s", got)
	}
	store, err := db.Open(ctx, dest)
	if err != nil {
		t.Fatalf("open the backup: %v", err)
	}
	defer store.Close()
	if err := store.Check(ctx); err != nil {
		t.Fatal(err)
	}
	for _, id := range before {
		rec, err := store.Task(ctx, id)
		if err != nil || rec.ID != id {
			t.Errorf("task %s, acknowledged before the backup began, is not in it: %v", id, err)
		}
	}
	t.Logf("backup taken with %d tasks acknowledged before it began (all in it) and %d more during it; %d in all", len(before), during, count())
}
