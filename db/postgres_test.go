package db_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"agentgw/db"
	"agentgw/db/mcpstate"
)

// TestOpenUnreachablePostgres: a server that cannot be reached is an error
// that names the URL without its password.
func TestOpenUnreachablePostgres(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, u := range []string{
		"postgres://agentgw:s3cret-pw@127.0.0.1:1/agentgw?sslmode=disable&connect_timeout=5",
		"postgresql://127.0.0.1:1/agentgw?sslmode=disable&password=s3cret-pw&connect_timeout=5",
	} {
		s, err := db.Open(ctx, u)
		if err == nil {
			s.Close()
			t.Fatalf("Open(%s) succeeded", db.RedactURL(u))
		}
		msg := err.Error()
		if strings.Contains(msg, "s3cret-pw") {
			t.Errorf("the error holds the password: %s", msg)
		}
		if !strings.Contains(msg, "127.0.0.1:1/agentgw") {
			t.Errorf("the error does not name the server: %s", msg)
		}
	}
}

// TestPostgresCommitsDurably: every connection of a PostgreSQL store
// commits synchronously, whatever the server's default, and the readers
// cannot write.
func TestPostgresCommitsDurably(t *testing.T) {
	if !onPostgres() {
		t.Skip("PostgreSQL only")
	}
	ctx := context.Background()
	s, _ := newStore(t)
	var v string
	if err := db.WriterPool(s).QueryRowContext(ctx, "SHOW synchronous_commit").Scan(&v); err != nil || v != "on" {
		t.Errorf("writer: synchronous_commit = %q (%v), want on", v, err)
	}
	if err := db.ReaderPool(s).QueryRowContext(ctx, "SHOW default_transaction_read_only").Scan(&v); err != nil || v != "on" {
		t.Errorf("reader: default_transaction_read_only = %q (%v), want on", v, err)
	}
}

// TestPostgresWritesHoldTheLock: a write transaction holds the store's
// write lock from its start, before it touches a row, as an IMMEDIATE
// transaction holds SQLite's, so that no other process can write beside it.
func TestPostgresWritesHoldTheLock(t *testing.T) {
	if !onPostgres() {
		t.Skip("PostgreSQL only: TestWriterTransactionsAreImmediate is SQLite's")
	}
	ctx := context.Background()
	loc := newLocation(t)
	s, _ := openAt(t, loc)
	other, _ := openAt(t, loc)
	tx, err := db.BeginWrite(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := other.RegisterVersion(ctx, manifest("a@agents.example", "1", "a", ""), db.OriginAdmin)
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("another store wrote beside an open write transaction (%v)", err)
	case <-time.After(300 * time.Millisecond):
	}
	db.Rollback(tx)
	if err := <-done; err != nil {
		t.Fatalf("the waiting write, once the lock was free: %v", err)
	}
}

// TestPostgresRefusesNewerSchema: a database written by a newer binary is
// refused, with both versions in the error, and left as it is.
func TestPostgresRefusesNewerSchema(t *testing.T) {
	if !onPostgres() {
		t.Skip("PostgreSQL only: TestOpenRefusesNewerSchema is SQLite's")
	}
	ctx := context.Background()
	loc := newLocation(t)
	s, err := db.Open(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	current := s.Migrated().To
	if _, err := db.WriterPool(s).ExecContext(ctx, "UPDATE agentgw_schema SET version = version + 1 WHERE name = 'db'"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	want := fmt.Sprintf("database schema version %d is newer than this binary supports (%d)", current+1, current)
	if s, err := db.Open(ctx, loc); err == nil {
		s.Close()
		t.Fatal("Open succeeded on a newer schema")
	} else if !strings.Contains(err.Error(), want) {
		t.Errorf("Open: %v", err)
	}
}

// TestPostgresMigratesMCPState: a database of version 1, before the
// state of `agentgw mcp` moved into the store, gets its tables (migration
// 1 → 2).
func TestPostgresMigratesMCPState(t *testing.T) {
	if !onPostgres() {
		t.Skip("PostgreSQL only: SQLite's migrations have frozen schemas")
	}
	ctx := context.Background()
	loc := newLocation(t)
	s, err := db.Open(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	// Version 1 as it shipped: without the three tables.
	if _, err := db.WriterPool(s).ExecContext(ctx, `DROP TABLE mcp_message, mcp_dropped, mcp_task;
		UPDATE agentgw_schema SET version = 1 WHERE name = 'db'`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = db.Open(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if m := s.Migrated(); m.From != 1 || m.To < 2 {
		t.Errorf("Migrated() = %+v", m)
	}
	if _, err := mcpstate.Of(s).PushMessages(ctx, "a@example.org", []mcpstate.Message{{ID: "m1", Message: []byte(`{}`)}}, 10, 0); err != nil {
		t.Fatal(err)
	}
}

// TestPostgresConnectionsLost: when the server drops the store's
// connections (a restart, an administrator), the next calls fail with a
// Transient error or succeed, and the store recovers without reopening.
func TestPostgresConnectionsLost(t *testing.T) {
	if !onPostgres() {
		t.Skip("PostgreSQL only")
	}
	ctx := context.Background()
	loc := newLocation(t)
	s, _ := openAt(t, loc)
	mustRegister(t, s, manifest("a@agents.example", "1", "a", ""))
	mustActivate(t, s, "a@agents.example", "1")
	// A store of its own kills the others' backends.
	killer, _ := openAt(t, loc)
	if _, err := db.ReaderPool(killer).ExecContext(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid()`); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		v := manifest("b@agents.example", "1", "b", "")
		_, err := s.RegisterVersion(ctx, v, db.OriginAdmin)
		t.Logf("write %d: %v", i, err)
		if err != nil && !db.Transient(err) {
			t.Fatalf("write %d after the connections were lost: %v, not Transient", i, err)
		}
		_, err = s.Status(ctx, "a@agents.example")
		t.Logf("read %d: %v", i, err)
		if err != nil && !db.Transient(err) {
			t.Fatalf("read %d after the connections were lost: %v, not Transient", i, err)
		}
	}
	if _, err := s.RegisterVersion(ctx, manifest("c@agents.example", "1", "c", ""), db.OriginAdmin); err != nil {
		t.Fatalf("write after recovery: %v", err)
	}
	if n := activeCount(t, s); n != 1 {
		t.Errorf("active count %d, want 1", n)
	}
}

// TestSwallowedStatementFailure: a closure that gets a statement's error
// and returns nil. On SQLite the failed statement is undone alone and the
// rest commits; on PostgreSQL, which aborts the transaction, the closure
// gets an error of its own (not Transient: running it again would do the
// same), nothing it wrote is committed, and the committer goes on.
func TestSwallowedStatementFailure(t *testing.T) {
	ctx := context.Background()
	s, _, gc := withWeather(t)
	admit := func(id string) {
		t.Helper()
		if err := gc.Do(ctx, func(tx *db.TaskTx) error { return insert(tx, taskRec(id, "req-"+id)) }); err != nil {
			t.Fatal(err)
		}
	}
	admit("task-1")
	err := gc.Do(ctx, func(tx *db.TaskTx) error {
		if err := tx.InsertEvents([]db.TaskEvent{{TaskID: "task-1", Revision: 1, ID: "evt-1", Type: "status", Payload: []byte(`{}`)}}); err != nil {
			return err
		}
		_ = tx.InsertEvents([]db.TaskEvent{{TaskID: "task-1", Revision: 1, ID: "evt-dup", Type: "status", Payload: []byte(`{}`)}})
		return nil
	})
	evs, _ := s.TaskEvents(ctx, "task-1")
	if onPostgres() {
		if err == nil || db.Transient(err) {
			t.Fatalf("swallowed failure on PostgreSQL: %v, want an error that is not Transient", err)
		}
		if len(evs) != 0 {
			t.Errorf("events after the failed closure: %d, want 0", len(evs))
		}
	} else {
		if err != nil {
			t.Fatalf("swallowed failure on SQLite: %v", err)
		}
		if len(evs) != 1 {
			t.Errorf("events after the closure: %d, want 1", len(evs))
		}
	}
	admit("task-2")
}

// TestSwallowedStatementFailureInABatch: in a batch of several closures,
// one that swallows a failed statement gets its own error on PostgreSQL
// and the others commit.
func TestSwallowedStatementFailureInABatch(t *testing.T) {
	ctx := context.Background()
	s, _, gc := withWeather(t)
	if err := gc.Do(ctx, func(tx *db.TaskTx) error { return insert(tx, taskRec("task-1", "req-1")) }); err != nil {
		t.Fatal(err)
	}
	// Hold the committer in a first batch so that the next three form
	// the second batch together.
	release, entered := make(chan struct{}), make(chan struct{})
	go gc.Do(ctx, func(*db.TaskTx) error {
		close(entered)
		<-release
		return nil
	})
	<-entered
	errs := make([]error, 3)
	var wg sync.WaitGroup
	queue := func(i int, fn func(*db.TaskTx) error) {
		wg.Go(func() { errs[i] = gc.Do(ctx, fn) })
		for db.QueueLen(gc) <= i {
			runtime.Gosched()
		}
	}
	event := func(rev int64, id string) []db.TaskEvent {
		return []db.TaskEvent{{TaskID: "task-1", Revision: rev, ID: id, Type: "status", Payload: []byte(`{}`)}}
	}
	queue(0, func(tx *db.TaskTx) error { return tx.InsertEvents(event(1, "evt-1")) })
	queue(1, func(tx *db.TaskTx) error {
		_ = tx.InsertEvents(event(1, "evt-dup"))
		return nil
	})
	queue(2, func(tx *db.TaskTx) error { return tx.InsertEvents(event(2, "evt-2")) })
	close(release)
	wg.Wait()
	if errs[0] != nil || errs[2] != nil {
		t.Fatalf("the other closures: %v, %v", errs[0], errs[2])
	}
	if onPostgres() && (errs[1] == nil || db.Transient(errs[1])) {
		t.Fatalf("the swallowing closure on PostgreSQL: %v, want an error that is not Transient", errs[1])
	}
	if !onPostgres() && errs[1] != nil {
		t.Fatalf("the swallowing closure on SQLite: %v", errs[1])
	}
	if evs, err := s.TaskEvents(ctx, "task-1"); err != nil || len(evs) != 2 {
		t.Errorf("events: %d (%v), want 2", len(evs), err)
	}
}
