package db_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"agentgw/db"
)

// newCommitter opens a group committer closed at the end of the test,
// before the store (Cleanup runs last-registered first).
func newCommitter(t testing.TB, s *db.Store) *db.GroupCommitter {
	t.Helper()
	c, err := s.NewGroupCommitter(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// taskRec is a running task of the weather fixture, version 1.0.
func taskRec(id, requestID string) db.TaskRecord {
	return db.TaskRecord{
		ID: id, Caller: "alice@example.org", Target: "weather@agents.example", RequestID: requestID,
		APIVersion: "1.0", State: "accepted", NextWake: epoch.Add(time.Hour + 123*time.Nanosecond),
		Doc: []byte(`{"id":"` + id + `"}`),
	}
}

// withWeather has the weather endpoint active at version 2.0; tasks pin
// the inactive 1.0, so that retention is what keeps it from removal.
func withWeather(t testing.TB) (*db.Store, *clock, *db.GroupCommitter) {
	t.Helper()
	s, c := newStore(t)
	mustRegister(t, s, manifest("weather@agents.example", "1.0", "weather", "Weather"))
	mustRegister(t, s, manifest("weather@agents.example", "2.0", "weather", "Weather"))
	mustActivate(t, s, "weather@agents.example", "2.0")
	return s, c, newCommitter(t, s)
}

func insert(tx *db.TaskTx, rec db.TaskRecord) error {
	if err := tx.Pinnable(rec.Target, rec.APIVersion); err != nil {
		return err
	}
	return tx.InsertTask(rec)
}

func TestTaskInsertReadUpdate(t *testing.T) {
	ctx := context.Background()
	s, _, gc := withWeather(t)
	rec := taskRec("task-1", "req-1")
	if err := gc.Do(ctx, func(tx *db.TaskTx) error { return insert(tx, rec) }); err != nil {
		t.Fatal(err)
	}
	got, err := s.Task(ctx, "task-1")
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != rec.ID || got.Caller != rec.Caller || got.RequestID != "req-1" || got.Terminal ||
		!got.NextWake.Equal(rec.NextWake) || string(got.Doc) != string(rec.Doc) {
		t.Errorf("read back %+v", got)
	}
	// The version is held from admission, in the same transaction.
	if held, err := s.VersionRetained(ctx, "weather@agents.example", "1.0"); err != nil || !held {
		t.Errorf("VersionRetained = %v, %v", held, err)
	}

	// The replay record: the same (caller, target, request ID) is found,
	// and a second task under it is refused.
	err = gc.Do(ctx, func(tx *db.TaskTx) error {
		prior, err := tx.TaskByRequest(rec.Caller, rec.Target, "req-1")
		if err != nil || prior.ID != "task-1" {
			return fmt.Errorf("TaskByRequest = %+v, %v", prior, err)
		}
		if _, err := tx.TaskByRequest(rec.Caller, rec.Target, "req-2"); !errors.Is(err, db.ErrNotFound) {
			return fmt.Errorf("unknown request: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := gc.Do(ctx, func(tx *db.TaskTx) error { return insert(tx, taskRec("task-2", "req-1")) }); err == nil {
		t.Error("a second task under the same request ID was inserted")
	}

	// A step: the row, its events and its input records together.
	rec.State, rec.Revision, rec.Doc = "input_required", 2, []byte(`{"v":2}`)
	err = gc.Do(ctx, func(tx *db.TaskTx) error {
		if err := tx.UpdateTask(rec); err != nil {
			return err
		}
		if err := tx.InsertEvents([]db.TaskEvent{
			{TaskID: "task-1", Revision: 1, ID: "evt-1", Type: "status", Payload: []byte(`{}`)},
			{TaskID: "task-1", Revision: 2, ID: "evt-2", Type: "input_required", Payload: []byte(`{}`)},
		}); err != nil {
			return err
		}
		return tx.PutInputs([]db.TaskInput{{TaskID: "task-1", RequestID: "input-1", Doc: []byte(`pending`)}})
	})
	if err != nil {
		t.Fatal(err)
	}
	err = gc.Do(ctx, func(tx *db.TaskTx) error {
		if err := tx.PutInputs([]db.TaskInput{{TaskID: "task-1", RequestID: "input-1", Doc: []byte(`answered`)}}); err != nil {
			return err
		}
		in, err := tx.Input("task-1", "input-1")
		if err != nil || string(in.Doc) != "answered" {
			return fmt.Errorf("Input = %q, %v", in.Doc, err)
		}
		if _, err := tx.Input("task-1", "input-2"); !errors.Is(err, db.ErrNotFound) {
			return fmt.Errorf("unknown input: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Events are never rewritten. (A closure gets the error of the failed
	// statement and returns it: on PostgreSQL a failed statement ends its
	// transaction.)
	err = gc.Do(ctx, func(tx *db.TaskTx) error {
		return tx.InsertEvents([]db.TaskEvent{{TaskID: "task-1", Revision: 2, ID: "evt-x", Type: "status", Payload: []byte(`{}`)}})
	})
	if err == nil {
		t.Fatal("a revision was stored twice")
	}
	evs, err := s.TaskEvents(ctx, "task-1")
	if err != nil || len(evs) != 2 || evs[0].ID != "evt-1" || evs[1].Type != "input_required" {
		t.Errorf("TaskEvents = %+v, %v", evs, err)
	}
	if err := gc.Do(ctx, func(tx *db.TaskTx) error { return tx.UpdateTask(taskRec("task-9", "x")) }); !errors.Is(err, db.ErrNotFound) {
		t.Errorf("update of an unknown task: %v", err)
	}
	if _, err := s.Task(ctx, "task-9"); !errors.Is(err, db.ErrNotFound) {
		t.Errorf("unknown task: %v", err)
	}
}

func TestTaskInsertNeedsVersion(t *testing.T) {
	ctx := context.Background()
	s, _, gc := withWeather(t)
	rec := taskRec("task-1", "req-1")
	rec.APIVersion = "9.9"
	if err := gc.Do(ctx, func(tx *db.TaskTx) error { return insert(tx, rec) }); !errors.Is(err, db.ErrNotFound) {
		t.Errorf("insert pinning an unknown version: %v", err)
	}
	// Without Pinnable, the hold's foreign key still refuses it.
	if err := gc.Do(ctx, func(tx *db.TaskTx) error { return tx.InsertTask(rec) }); err == nil {
		t.Error("a task pinning an unknown version was inserted")
	}
	// An inactive endpoint cannot be pinned.
	if err := s.Deactivate(ctx, "weather@agents.example"); err != nil {
		t.Fatal(err)
	}
	if err := gc.Do(ctx, func(tx *db.TaskTx) error { return insert(tx, taskRec("task-2", "req-2")) }); !errors.Is(err, db.ErrNotFound) {
		t.Errorf("insert at an inactive endpoint: %v", err)
	}
}

// TestGroupCommitIsolatesClosures: in one batch, a failing closure (error
// or panic) loses its own writes and hooks only; the others commit, and
// their hooks run in order after the commit.
func TestGroupCommitIsolatesClosures(t *testing.T) {
	ctx := context.Background()
	s, _, gc := withWeather(t)

	// Hold the committer inside a first batch so that the next closures
	// queue up and form the second batch together.
	release := make(chan struct{})
	entered := make(chan struct{})
	go gc.Do(ctx, func(*db.TaskTx) error {
		close(entered)
		<-release
		return nil
	})
	<-entered
	before, _ := gc.Stats()

	var mu sync.Mutex
	var hooks []string
	hook := func(name string) func() {
		return func() {
			mu.Lock()
			hooks = append(hooks, name)
			mu.Unlock()
		}
	}
	errs := make([]error, 4)
	var wg sync.WaitGroup
	queue := func(i int, fn func(*db.TaskTx) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = gc.Do(ctx, fn)
		}()
		// Let it queue before the next one, so the batch order is known.
		for db.QueueLen(gc) <= i {
			runtime.Gosched()
		}
	}
	boom := errors.New("boom")
	queue(0, func(tx *db.TaskTx) error {
		tx.OnCommit(hook("a"))
		return insert(tx, taskRec("task-a", "req-a"))
	})
	queue(1, func(tx *db.TaskTx) error {
		tx.OnCommit(hook("b"))
		if err := insert(tx, taskRec("task-b", "req-b")); err != nil {
			return err
		}
		return boom
	})
	queue(2, func(tx *db.TaskTx) error {
		tx.OnCommit(hook("c"))
		if err := insert(tx, taskRec("task-c", "req-c")); err != nil {
			return err
		}
		panic("closure bug")
	})
	queue(3, func(tx *db.TaskTx) error {
		// It sees the writes of the closures before it that succeeded.
		if _, err := tx.Task("task-a"); err != nil {
			return err
		}
		if _, err := tx.Task("task-b"); !errors.Is(err, db.ErrNotFound) {
			return fmt.Errorf("task-b visible after its rollback: %v", err)
		}
		tx.OnCommit(hook("d"))
		return insert(tx, taskRec("task-d", "req-d"))
	})
	close(release)
	wg.Wait()

	// The held batch was counted when it began.
	if batches, _ := gc.Stats(); batches-before != 1 {
		t.Errorf("%d batches after the held one, want 1", batches-before)
	}
	if errs[0] != nil || !errors.Is(errs[1], boom) || errs[2] == nil || errs[3] != nil {
		t.Fatalf("outcomes: %v", errs)
	}
	for id, want := range map[string]bool{"task-a": true, "task-b": false, "task-c": false, "task-d": true} {
		_, err := s.Task(ctx, id)
		if got := err == nil; got != want {
			t.Errorf("%s stored = %v, want %v (%v)", id, got, want, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(hooks) != "[a d]" {
		t.Errorf("hooks ran: %v", hooks)
	}
}

// TestGroupCommitSurvivesAPanickingHook: with no HookPanic handler, a
// hook that panics takes down only the goroutine leading its batch, after
// the lead has passed on; its closure committed, and later closures
// commit.
func TestGroupCommitSurvivesAPanickingHook(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	mustRegister(t, s, manifest("weather@agents.example", "1.0", "weather", "Weather"))
	mustActivate(t, s, "weather@agents.example", "1.0")
	// Not newCommitter: if the committer wedged, a cleanup's Close would
	// wait for it for ever, so this test closes it only on success.
	gc, err := s.NewGroupCommitter(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	panicked := make(chan any, 1)
	go func() {
		defer func() { panicked <- recover() }()
		gc.Do(ctx, func(tx *db.TaskTx) error {
			tx.OnCommit(func() { panic("hook bug") })
			return insert(tx, taskRec("task-p", "req-p"))
		})
	}()
	if r := <-panicked; r != "hook bug" {
		t.Fatalf("recovered %v", r)
	}
	done := make(chan error, 1)
	go func() {
		done <- gc.Do(ctx, func(tx *db.TaskTx) error { return insert(tx, taskRec("task-q", "req-q")) })
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the committer is wedged after a panicking hook")
	}
	gc.Close()
	for _, id := range []string{"task-p", "task-q"} {
		if _, err := s.Task(ctx, id); err != nil {
			t.Errorf("%s: %v", id, err)
		}
	}
}

// TestGroupCommitFollowerHookPanics: when the hook of one closure in a
// batch panics, every caller of the batch still gets its own outcome, the
// other hooks run, and the panic goes to HookPanic, not to the caller
// that happened to lead.
func TestGroupCommitFollowerHookPanics(t *testing.T) {
	ctx := context.Background()
	s, _, gc := withWeather(t)
	reported := make(chan any, 4)
	gc.HookPanic = func(v any) { reported <- v }

	// Hold a first batch so that x, p and q queue up and form the next
	// batch, led by x.
	release := make(chan struct{})
	entered := make(chan struct{})
	go gc.Do(ctx, func(*db.TaskTx) error {
		close(entered)
		<-release
		return nil
	})
	<-entered
	var mu sync.Mutex
	ran := map[string]bool{}
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for i, name := range []string{"x", "p", "q"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if r := recover(); r != nil {
					errs[i] = fmt.Errorf("Do of %s panicked: %v", name, r)
				}
			}()
			errs[i] = gc.Do(ctx, func(tx *db.TaskTx) error {
				tx.OnCommit(func() {
					if name == "p" {
						panic("hook bug")
					}
					mu.Lock()
					ran[name] = true
					mu.Unlock()
				})
				return insert(tx, taskRec("task-"+name, "req-"+name))
			})
		}()
		for db.QueueLen(gc) <= i {
			runtime.Gosched()
		}
	}
	close(release)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("caller %d: %v", i, err)
		}
	}
	for _, name := range []string{"x", "p", "q"} {
		if _, err := s.Task(ctx, "task-"+name); err != nil {
			t.Errorf("task-%s: %v", name, err)
		}
	}
	mu.Lock()
	if !ran["x"] || !ran["q"] {
		t.Errorf("hooks that ran: %v", ran)
	}
	mu.Unlock()
	select {
	case v := <-reported:
		if v != "hook bug" {
			t.Errorf("HookPanic got %v", v)
		}
	default:
		t.Error("HookPanic was not called")
	}
}

// TestGroupCommitConcurrent: many callers at once all commit exactly their
// own task, in fewer transactions than callers. Run with -race.
func TestGroupCommitConcurrent(t *testing.T) {
	ctx := context.Background()
	s, _, gc := withWeather(t)
	const callers, each = 32, 20
	before, _ := gc.Stats()
	var wg sync.WaitGroup
	errc := make(chan error, callers*each)
	for c := 0; c < callers; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				id := fmt.Sprintf("task-%02d-%02d", c, i)
				committed := false
				err := gc.Do(ctx, func(tx *db.TaskTx) error {
					tx.OnCommit(func() { committed = true })
					if i%5 == 4 {
						return errors.New("refused")
					}
					return insert(tx, taskRec(id, "req-"+id))
				})
				if (err == nil) != (i%5 != 4) || committed != (err == nil) {
					errc <- fmt.Errorf("%s: err %v, hook ran %v", id, err, committed)
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	batches, closures := gc.Stats()
	if closures-before != callers*each {
		t.Errorf("%d closures committed, want %d", closures-before, callers*each)
	}
	t.Logf("%d closures in %d batches", callers*each, batches-before)
	live, err := s.LiveTasks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := callers * each * 4 / 5; len(live) != want {
		t.Errorf("%d tasks stored, want %d", len(live), want)
	}
}

// TestGroupCommitDurableAndClosed: Close commits what is queued; what Do
// acknowledged is in the file after a reopen; Do after Close fails.
func TestGroupCommitDurableAndClosed(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "agentgw.db")
	s, err := db.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	mustRegister(t, s, manifest("weather@agents.example", "1.0", "weather", "Weather"))
	mustActivate(t, s, "weather@agents.example", "1.0")
	gc, err := s.NewGroupCommitter(ctx, 4)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("task-%02d", i)
			if err := gc.Do(ctx, func(tx *db.TaskTx) error { return insert(tx, taskRec(id, "req-"+id)) }); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if err := gc.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gc.Do(ctx, func(*db.TaskTx) error { return nil }); !errors.Is(err, db.ErrCommitterClosed) {
		t.Errorf("Do after Close: %v", err)
	}
	if batches, closures := gc.Stats(); closures != 20 || batches < 5 {
		t.Errorf("%d closures in %d batches: the batch bound is 4", closures, batches)
	}
	s.Close()

	s2, _ := openAt(t, path)
	live, err := s2.LiveTasks(ctx)
	if err != nil || len(live) != 20 {
		t.Fatalf("after reopen: %d tasks, %v", len(live), err)
	}
}

// TestTaskPurge: only terminal tasks whose purge time has come are listed
// and purged, with their events and inputs; a task holds its version until
// it is purged.
func TestTaskPurge(t *testing.T) {
	ctx := context.Background()
	s, clk, gc := withWeather(t)
	done := taskRec("task-done", "req-1")
	done.State, done.Terminal, done.Revision, done.NextWake = "completed", true, 1, epoch.Add(48*time.Hour)
	running := taskRec("task-running", "req-2")
	running.NextWake = epoch.Add(time.Minute)
	err := gc.Do(ctx, func(tx *db.TaskTx) error {
		if err := tx.InsertTask(done); err != nil {
			return err
		}
		if err := tx.InsertTask(running); err != nil {
			return err
		}
		if err := tx.InsertEvents([]db.TaskEvent{{TaskID: "task-done", Revision: 1, ID: "evt-1", Type: "completed", Payload: []byte(`{}`)}}); err != nil {
			return err
		}
		return tx.PutInputs([]db.TaskInput{{TaskID: "task-done", RequestID: "input-1", Doc: []byte(`x`)}})
	})
	if err != nil {
		t.Fatal(err)
	}
	if ids, err := s.DueForPurge(ctx, 10); err != nil || len(ids) != 0 {
		t.Fatalf("due before the purge time: %v, %v", ids, err)
	}
	if err := s.RemoveVersion(ctx, "weather@agents.example", "1.0"); !errors.Is(err, db.ErrRetained) {
		t.Fatalf("RemoveVersion while held: %v", err)
	}

	clk.Advance(48 * time.Hour)
	ids, err := s.DueForPurge(ctx, 10)
	if err != nil || fmt.Sprint(ids) != "[task-done]" {
		t.Fatalf("due: %v, %v", ids, err)
	}
	var purged [2]bool
	err = gc.Do(ctx, func(tx *db.TaskTx) error {
		var err error
		if purged[0], err = tx.PurgeTask("task-done"); err != nil {
			return err
		}
		purged[1], err = tx.PurgeTask("task-running")
		return err
	})
	if err != nil || purged != [2]bool{true, false} {
		t.Fatalf("purged %v, %v", purged, err)
	}
	if _, err := s.Task(ctx, "task-done"); !errors.Is(err, db.ErrNotFound) {
		t.Errorf("purged task still readable: %v", err)
	}
	if evs, err := s.TaskEvents(ctx, "task-done"); err != nil || len(evs) != 0 {
		t.Errorf("events after purge: %v, %v", evs, err)
	}
	// The running task still holds the version: its row is the hold.
	if held, err := s.VersionRetained(ctx, "weather@agents.example", "1.0"); err != nil || !held {
		t.Errorf("VersionRetained = %v, %v", held, err)
	}
	// Once it has settled and been purged, the version may be removed.
	running.State, running.Terminal, running.NextWake = "completed", true, clk.Now()
	err = gc.Do(ctx, func(tx *db.TaskTx) error {
		if err := tx.UpdateTask(running); err != nil {
			return err
		}
		_, err := tx.PurgeTask("task-running")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RemoveVersion(ctx, "weather@agents.example", "1.0"); err != nil {
		t.Errorf("RemoveVersion after the last task was purged: %v", err)
	}
	err = gc.Do(ctx, func(tx *db.TaskTx) error {
		if _, err := tx.Input("task-done", "input-1"); !errors.Is(err, db.ErrNotFound) {
			return fmt.Errorf("input after purge: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
}

// TestTaskAdmissionLookup: one statement answers whether the endpoint is
// active with the version, and the replay record.
func TestTaskAdmissionLookup(t *testing.T) {
	ctx := context.Background()
	s, _, gc := withWeather(t)
	rec := taskRec("task-1", "req-1")
	if err := gc.Do(ctx, func(tx *db.TaskTx) error { return insert(tx, rec) }); err != nil {
		t.Fatal(err)
	}
	lookup := func(version, requestID string) (db.TaskRecord, bool, error) {
		var (
			got   db.TaskRecord
			found bool
		)
		err := gc.Do(ctx, func(tx *db.TaskTx) error {
			var err error
			got, found, err = tx.Admission("weather@agents.example", version, rec.Caller, requestID)
			return err
		})
		return got, found, err
	}
	if got, found, err := lookup("1.0", "req-1"); err != nil || !found || got.ID != "task-1" || string(got.Doc) != string(rec.Doc) ||
		!got.NextWake.Equal(rec.NextWake) || got.APIVersion != "1.0" {
		t.Errorf("replay record: %+v %v %v", got, found, err)
	}
	if _, found, err := lookup("2.0", "req-2"); err != nil || found {
		t.Errorf("new request: %v %v", found, err)
	}
	if _, _, err := lookup("9.9", "req-2"); !errors.Is(err, db.ErrNotFound) {
		t.Errorf("unknown version: %v", err)
	}
	if err := s.Deactivate(ctx, "weather@agents.example"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := lookup("1.0", "req-1"); !errors.Is(err, db.ErrNotFound) {
		t.Errorf("inactive endpoint: %v", err)
	}
}

// TestTaskAdmitNew: the one-statement admission inserts a task only if its
// endpoint is active with the pinned version and its replay record is
// free; otherwise it inserts nothing and changes nothing.
func TestTaskAdmitNew(t *testing.T) {
	ctx := context.Background()
	s, _, gc := withWeather(t)
	admit := func(rec db.TaskRecord) (bool, error) {
		var ok bool
		err := gc.Do(ctx, func(tx *db.TaskTx) error {
			var err error
			ok, err = tx.AdmitNew(rec)
			return err
		})
		return ok, err
	}
	first := taskRec("task-1", "req-1")
	if ok, err := admit(first); !ok || err != nil {
		t.Fatalf("fresh admission: %v %v", ok, err)
	}
	if got, err := s.Task(ctx, "task-1"); err != nil || string(got.Doc) != string(first.Doc) || !got.NextWake.Equal(first.NextWake) {
		t.Fatalf("stored %+v %v", got, err)
	}
	// The same replay record under another task ID: nothing.
	if ok, err := admit(taskRec("task-2", "req-1")); ok || err != nil {
		t.Errorf("replay admitted again: %v %v", ok, err)
	}
	unknown := taskRec("task-3", "req-3")
	unknown.APIVersion = "9.9"
	if ok, err := admit(unknown); ok || err != nil {
		t.Errorf("unknown version: %v %v", ok, err)
	}
	if err := s.Deactivate(ctx, "weather@agents.example"); err != nil {
		t.Fatal(err)
	}
	if ok, err := admit(taskRec("task-4", "req-4")); ok || err != nil {
		t.Errorf("inactive endpoint: %v %v", ok, err)
	}
	for _, id := range []string{"task-2", "task-3", "task-4"} {
		if _, err := s.Task(ctx, id); !errors.Is(err, db.ErrNotFound) {
			t.Errorf("%s stored: %v", id, err)
		}
	}
}
