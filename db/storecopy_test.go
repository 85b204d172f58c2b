package db_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"agentgw/db"
	"agentgw/db/mcpstate"
	"agentgw/db/storecopy"
	"agentgw/internal/pgtest"
)

// otherEngine opens an empty store on the engine this pass does not use:
// PostgreSQL in the SQLite pass, a SQLite file in the PostgreSQL pass.
func otherEngine(t *testing.T) *db.Store {
	t.Helper()
	loc := filepath.Join(t.TempDir(), "target.db")
	if !onPostgres() {
		loc = pgtest.URL(t)
	}
	s, err := db.Open(context.Background(), loc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestCopy: a store with every kind of row, copied to the other engine,
// reads the same there: directory, search, manifests, tombstones, tasks
// with their events, chat consent, queue and outbox, the state of
// `agentgw mcp`; its counters agree;
// and a second copy into the same target is refused.
func TestCopy(t *testing.T) {
	ctx := context.Background()
	src, _, gc := withWeather(t)
	mustRegister(t, src, manifest("calendar@agents.example", "1", "calendar", "Calendar"))
	mustRegister(t, src, manifest("calendar@agents.example", "2", "calendar", "Calendar"))
	mustActivate(t, src, "calendar@agents.example", "2")
	if err := src.RemoveVersion(ctx, "calendar@agents.example", "1"); err != nil {
		t.Fatal(err)
	}
	if _, err := src.Subscribe(ctx, "calendar@agents.example", "alice@example.org"); err != nil {
		t.Fatal(err)
	}
	rec := taskRec("task-1", "req-1")
	err := gc.Do(ctx, func(tx *db.TaskTx) error {
		if err := insert(tx, rec); err != nil {
			return err
		}
		return tx.InsertEvents([]db.TaskEvent{{TaskID: "task-1", Revision: 1, ID: "evt-1", Type: "progress", Payload: []byte(`{"p":1}`)}})
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.ChatInbound(ctx, "calendar@agents.example", "alice@example.org"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := src.ChatEnqueue(ctx, db.ChatIn{ID: "m1", Endpoint: "calendar@agents.example",
		Sender: "alice@example.org/phone", Recipient: "calendar@agents.example", Type: "chat", Body: "hello"},
		"alice@example.org", 100); err != nil {
		t.Fatal(err)
	}
	if _, err := src.ChatSend(ctx, db.ChatOut{Endpoint: "calendar@agents.example", Recipient: "alice@example.org/phone",
		Peer: "alice@example.org", OriginID: "o1", Type: "chat", Body: "hi"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	// The state of `agentgw mcp`.
	now := time.UnixMilli(1_800_000_000_000)
	if _, err := mcpstate.Of(src).PushMessages(ctx, "bob@example.org", []mcpstate.Message{{ID: "mq1", ReceivedAt: now, Message: []byte(`{"Body":"one"}`)},
		{ID: "mq2", ReceivedAt: now, Message: []byte(`{"Body":"two"}`)}}, 1, 0); err != nil {
		t.Fatal(err)
	}
	mtask := mcpstate.Task{ID: "mcptask-1", Owner: "account:bob@example.org", Account: "bob@example.org", Endpoint: "calendar@agents.example",
		XMPPTaskID: "task-1", RequestID: "req-1", Version: "2", Tool: "t", Hash: [32]byte{1, 31: 2}, Status: "working", XMPPState: "running",
		Created: now, Updated: now, RetainUntil: now.Add(time.Hour), TTL: time.Hour}
	if err := mcpstate.Of(src).CreateTask(ctx, mtask, now); err != nil {
		t.Fatal(err)
	}

	dst := otherEngine(t)
	rep, err := storecopy.Copy(ctx, src, dst)
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]int64{}
	for _, tc := range rep.Tables {
		rows[tc.Table] = tc.Rows
	}
	for table, want := range map[string]int64{"endpoint": 2, "manifest_version": 3, "version_tombstone": 1,
		"presence_subscription": 1, "task": 1, "task_event": 1, "chat_contact": 1, "chat_queue": 1, "chat_outbox": 1,
		"mcp_message": 1, "mcp_dropped": 1, "mcp_task": 1} {
		if rows[table] != want {
			t.Errorf("%s: %d rows copied, want %d", table, rows[table], want)
		}
	}

	// What the gateway reads, read from the target.
	if a, b := dirJIDs(t, src), dirJIDs(t, dst); !slices.Equal(a, b) || len(a) != 2 {
		t.Errorf("directory: source %v, target %v", a, b)
	}
	for _, jv := range [][2]string{{"weather@agents.example", "1.0"}, {"weather@agents.example", "2.0"}, {"calendar@agents.example", "2"}} {
		a, errA := src.Version(ctx, jv[0], jv[1])
		b, errB := dst.Version(ctx, jv[0], jv[1])
		if errA != nil || errB != nil || a.Hash != b.Hash || string(a.Canonical) != string(b.Canonical) {
			t.Errorf("%s %s: %v %v, hashes %x %x", jv[0], jv[1], errA, errB, a.Hash, b.Hash)
		}
	}
	if ts, err := dst.Tombstones(ctx, "calendar@agents.example"); err != nil || len(ts) != 1 {
		t.Errorf("tombstones on the target: %v, %v", ts, err)
	}
	got, err := dst.Task(ctx, "task-1")
	if err != nil || got.Caller != rec.Caller || string(got.Doc) != string(rec.Doc) || got.RequestID != "req-1" {
		t.Errorf("task on the target: %+v, %v", got, err)
	}
	if evs, err := dst.TaskEvents(ctx, "task-1"); err != nil || len(evs) != 1 || string(evs[0].Payload) != `{"p":1}` {
		t.Errorf("events on the target: %+v, %v", evs, err)
	}
	if q, err := dst.ChatQueue(ctx, "calendar@agents.example", 10); err != nil || len(q) != 1 || q[0].Body != "hello" {
		t.Errorf("chat queue on the target: %+v, %v", q, err)
	}
	if out, err := dst.ChatOutbox(ctx, 10); err != nil || len(out) != 1 || out[0].Body != "hi" {
		t.Errorf("chat outbox on the target: %+v, %v", out, err)
	}
	if err := dst.ChatConsent(ctx, "calendar@agents.example", "alice@example.org", time.Hour); err != nil {
		t.Errorf("consent on the target: %v", err)
	}
	if ms, err := mcpstate.Of(dst).Messages(ctx, "bob@example.org"); err != nil || len(ms) != 1 || ms[0].ID != "mq2" || string(ms[0].Message) != `{"Body":"two"}` {
		t.Errorf("mcp messages on the target: %+v, %v", ms, err)
	}
	if n, err := mcpstate.Of(dst).Dropped(ctx, "bob@example.org"); err != nil || n != 1 {
		t.Errorf("mcp drops on the target: %d, %v", n, err)
	}
	if got, err := mcpstate.Of(dst).Task(ctx, "bob@example.org", mtask.Owner, mtask.ID, now); err != nil || got.Hash != mtask.Hash || got.XMPPState != "running" {
		t.Errorf("mcp task on the target: %+v, %v", got, err)
	}
	if _, err := mcpstate.Of(dst).PushMessages(ctx, "bob@example.org", []mcpstate.Message{{ID: "mq3", ReceivedAt: now, Message: []byte(`{}`)}}, 10, 0); err != nil {
		t.Errorf("an mcp message on the target after the copy: %v", err)
	}
	if ms, _ := mcpstate.Of(dst).Messages(ctx, "bob@example.org"); len(ms) != 2 || ms[1].ID != "mq3" {
		t.Errorf("mcp messages after a new one: %+v", ms)
	}
	// The target goes on: new rows after the copied ones.
	next, err := dst.ChatSend(ctx, db.ChatOut{Endpoint: "calendar@agents.example", Recipient: "alice@example.org/phone",
		Peer: "alice@example.org", OriginID: "o2", Type: "chat", Body: "again"}, time.Hour)
	if err != nil {
		t.Fatalf("a send on the target after the copy: %v", err)
	}
	if out, _ := dst.ChatOutbox(ctx, 10); len(out) != 2 || next.Seq <= out[0].Seq {
		t.Errorf("outbox after a new send: %+v (new seq %d)", out, next.Seq)
	}
	if drift, err := dst.CheckCounters(ctx); err != nil || len(drift) > 0 {
		t.Errorf("counters on the target: %v, %v", drift, err)
	}

	if _, err := storecopy.Copy(ctx, src, dst); !errors.Is(err, storecopy.ErrNotEmpty) {
		t.Errorf("a second copy into the same target: %v, want ErrNotEmpty", err)
	}
}

// dirJIDs lists the directory of s.
func dirJIDs(t *testing.T, s *db.Store) []string {
	t.Helper()
	page, err := s.Directory(context.Background(), db.Scope{All: true}, db.Page{Max: 100})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, it := range page.Items {
		out = append(out, it.JID)
	}
	return out
}

// TestCopyMCP: the state of `agentgw mcp` alone is copied into a store
// that already holds a gateway's rows (the database [mcp] database and
// [database] url share), and a second copy is refused.
func TestCopyMCP(t *testing.T) {
	ctx := context.Background()
	src, _ := newStore(t)
	now := time.UnixMilli(1_800_000_000_000)
	if _, err := mcpstate.Of(src).PushMessages(ctx, "bob@example.org", []mcpstate.Message{{ID: "mq1", ReceivedAt: now, Message: []byte(`{"Body":"one"}`)}}, 10, 0); err != nil {
		t.Fatal(err)
	}
	task := mcpstate.Task{ID: "mcptask-1", Owner: "account:bob@example.org", Account: "bob@example.org", Hash: [32]byte{7},
		Status: "working", XMPPState: "running", Created: now, Updated: now, RetainUntil: now.Add(time.Hour), TTL: time.Hour}
	if err := mcpstate.Of(src).CreateTask(ctx, task, now); err != nil {
		t.Fatal(err)
	}
	dst := otherEngine(t)
	mustRegister(t, dst, manifest("calendar@agents.example", "1", "calendar", "Calendar"))
	if _, err := storecopy.Copy(ctx, src, dst); !errors.Is(err, storecopy.ErrNotEmpty) {
		t.Fatalf("a whole copy into a gateway's store: %v, want ErrNotEmpty", err)
	}
	rep, err := storecopy.CopyMCP(ctx, src, dst)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Tables) != 3 || rep.Tables[0] != (storecopy.TableCount{Table: "mcp_message", Rows: 1}) || rep.Tables[2] != (storecopy.TableCount{Table: "mcp_task", Rows: 1}) {
		t.Errorf("report %+v", rep)
	}
	if ms, err := mcpstate.Of(dst).Messages(ctx, "bob@example.org"); err != nil || len(ms) != 1 || string(ms[0].Message) != `{"Body":"one"}` {
		t.Errorf("messages on the target: %+v, %v", ms, err)
	}
	if got, err := mcpstate.Of(dst).Task(ctx, "bob@example.org", task.Owner, task.ID, now); err != nil || got.Hash != task.Hash {
		t.Errorf("task on the target: %+v, %v", got, err)
	}
	if v, err := dst.Version(ctx, "calendar@agents.example", "1"); err != nil || v.Name != "calendar" {
		t.Errorf("the gateway's rows on the target: %+v, %v", v, err)
	}
	if _, err := storecopy.CopyMCP(ctx, src, dst); !errors.Is(err, storecopy.ErrNotEmpty) {
		t.Errorf("a second copy: %v, want ErrNotEmpty", err)
	}
}
