package db_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"agentgw/db"
)

// usage reads caller's usage or fails the test.
func usage(t testing.TB, s *db.Store, caller string) db.CallerUsage {
	t.Helper()
	u, err := s.CallerUsage(context.Background(), caller)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// noDrift fails the test if the counters differ from their sums.
func noDrift(t testing.TB, s *db.Store) {
	t.Helper()
	if drift, err := s.CheckCounters(context.Background()); err != nil || len(drift) != 0 {
		t.Fatalf("CheckCounters = %q, %v", drift, err)
	}
}

// TestMigrationFillsCounters: the upgrade from version 8 fills the usage
// counters from the tasks, events and input records already stored.
func TestMigrationFillsCounters(t *testing.T) {
	sqliteOnly(t, "migrates a frozen SQLite schema")
	path := filepath.Join(t.TempDir(), "old.db")
	execRaw(t, path, readFile(t, "testdata/schema-v8.sql"))
	s, _ := openAt(t, path)
	// alice: documents 10 + 5, events 2 + 7, input 4; one terminal.
	if u := usage(t, s, "alice@example.com/a"); u != (db.CallerUsage{Finished: 1, Bytes: 28}) {
		t.Errorf("alice = %+v", u)
	}
	if u := usage(t, s, "carol@example.com/c"); u != (db.CallerUsage{Finished: 0, Bytes: 3}) {
		t.Errorf("carol = %+v", u)
	}
	noDrift(t, s)
	// Two versions and two subscriptions of weather: a third version is
	// over a quota of 2, a third subscriber over a total of 2.
	created, err := s.RegisterVersionWithin(context.Background(), manifest("weather@agents.example", "9", "weather", ""), db.OriginSelf, 2)
	if err == nil || created {
		t.Errorf("third version within 2: %v, %v", created, err)
	}
	created, err = s.SubscribeWithin(context.Background(), "weather@agents.example", "dave@example.com", 0, 2)
	if err == nil || created {
		t.Errorf("third subscription within 2: %v, %v", created, err)
	}
}

// TestCountersFollowEveryWrite: admissions, transitions, events, inputs
// and purges keep caller_usage equal to the sums; versions, subscriptions
// and a removed endpoint keep endpoint_count and the total.
func TestCountersFollowEveryWrite(t *testing.T) {
	ctx := context.Background()
	s, clk, gc := withWeather(t)
	noDrift(t, s)
	for i := range 5 {
		rec := taskRec(fmt.Sprintf("t%d", i), fmt.Sprintf("r%d", i))
		err := gc.Do(ctx, func(tx *db.TaskTx) error {
			if ok, err := tx.AdmitNew(rec); err != nil || !ok {
				return fmt.Errorf("admit: %v %v", ok, err)
			}
			rec.State, rec.Terminal, rec.Revision, rec.NextWake = "completed", i%2 == 0, 1, clk.Now().Add(time.Hour)
			rec.Doc = []byte(strings.Repeat("d", 100+i))
			if err := tx.UpdateTask(rec); err != nil {
				return err
			}
			if err := tx.InsertEvents([]db.TaskEvent{{TaskID: rec.ID, Revision: 1, ID: "e", Type: "completed", Payload: []byte(`{"n":1}`)}}); err != nil {
				return err
			}
			if err := tx.PutInputs([]db.TaskInput{{TaskID: rec.ID, RequestID: "in", Doc: []byte("ab")}}); err != nil {
				return err
			}
			// Replacing an input record counts its new size only.
			return tx.PutInputs([]db.TaskInput{{TaskID: rec.ID, RequestID: "in", Doc: []byte("abc")}})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	want := db.CallerUsage{Finished: 3, Bytes: 100 + 101 + 102 + 103 + 104 + 5*(7+3)}
	if u := usage(t, s, "alice@example.org"); u != want {
		t.Errorf("after 5 tasks: %+v, want %+v", u, want)
	}
	noDrift(t, s)

	clk.Advance(2 * time.Hour)
	err := gc.Do(ctx, func(tx *db.TaskTx) error {
		for _, id := range []string{"t0", "t2", "t4"} {
			if ok, err := tx.PurgeTask(id); err != nil || !ok {
				return fmt.Errorf("purge %s: %v %v", id, ok, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want = db.CallerUsage{Finished: 0, Bytes: 101 + 103 + 2*10}
	if u := usage(t, s, "alice@example.org"); u != want {
		t.Errorf("after the purge: %+v, want %+v", u, want)
	}
	noDrift(t, s)

	// Subscriptions and versions, through a removed endpoint's cascade.
	mustRegister(t, s, manifest("news@agents.example", "1", "news", ""))
	for _, sub := range []string{"a@example.com", "b@example.com"} {
		if _, err := s.SubscribeWithin(ctx, "news@agents.example", sub, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.SubscribeWithin(ctx, "weather@agents.example", "a@example.com", 0, 0); err != nil {
		t.Fatal(err)
	}
	noDrift(t, s)
	if _, err := s.SubscribeWithin(ctx, "weather@agents.example", "c@example.com", 0, 3); err == nil {
		t.Error("a fourth subscription within a total of 3 was stored")
	}
	if _, err := s.SubscribeWithin(ctx, "news@agents.example", "c@example.com", 2, 0); err == nil {
		t.Error("a third subscription to news within 2 was stored")
	}
	if _, err := s.Unsubscribe(ctx, "news@agents.example", "a@example.com"); err != nil {
		t.Fatal(err)
	}
	noDrift(t, s)
	if err := s.RemoveEndpoint(ctx, "news@agents.example"); err != nil {
		t.Fatal(err)
	}
	noDrift(t, s)
	if _, err := s.SubscribeWithin(ctx, "weather@agents.example", "c@example.com", 0, 2); err != nil {
		t.Errorf("a second subscription within a total of 2 after the removal: %v", err)
	}
	noDrift(t, s)
}

// TestCheckCountersRepairs: counters made wrong behind the triggers' back
// are reported and rebuilt from the sums.
func TestCheckCountersRepairs(t *testing.T) {
	ctx := context.Background()
	s, _, gc := withWeather(t)
	if err := gc.Do(ctx, func(tx *db.TaskTx) error { return insert(tx, taskRec("t1", "r1")) }); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SubscribeWithin(ctx, "weather@agents.example", "a@example.com", 0, 0); err != nil {
		t.Fatal(err)
	}
	w := db.WriterPool(s)
	for _, q := range []string{
		`UPDATE caller_usage SET bytes = bytes + 1000`,
		`INSERT INTO caller_usage VALUES ('ghost@example.org', 4, 4)`,
		`DELETE FROM endpoint_count`,
		`UPDATE stat SET value = 7 WHERE name = 'subscriptions'`,
	} {
		if _, err := w.Exec(q); err != nil {
			t.Fatal(q, err)
		}
	}
	drift, err := s.CheckCounters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(drift, "; ")
	for _, want := range []string{"caller_usage: alice@example.org", "caller_usage: ghost@example.org",
		"endpoint_count: weather@agents.example", "stat subscriptions: 7, not 1"} {
		if !strings.Contains(got, want) {
			t.Errorf("drift %q lacks %q", got, want)
		}
	}
	noDrift(t, s)
	if u := usage(t, s, "ghost@example.org"); u != (db.CallerUsage{}) {
		t.Errorf("ghost after repair: %+v", u)
	}
}
