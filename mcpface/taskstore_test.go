package mcpface_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"agentgw/internal/pgtest"
	"agentgw/mcpface"
	"agentgw/wire"
)

// TestTaskStore: tasks are bound to their owner, survive a reopen, settle
// once, and are forgotten past their retention.
func TestTaskStore(t *testing.T) {
	ctx := context.Background()
	path := pgtest.Location(t, filepath.Join(t.TempDir(), "mcp.db"))
	s := openStore(t, path)
	now := time.UnixMilli(1_800_000_000_000)
	s.Now = func() time.Time { return now }
	rec := mcpface.TaskRecord{
		ID: "mcptask-a", Owner: "account:bob@remote.example", Account: "bob@remote.example",
		Endpoint: "demo@agents.example", XMPPTaskID: "task-0123456789012345678901", RequestID: "req-0123456789012345678901",
		Version: "demo-1", Hash: wire.Hash{0xa1, 31: 0x1f}, Tool: "count", Status: "working", XMPPState: "accepted",
		Created: now, Updated: now, RetainUntil: now.Add(time.Hour), TTL: time.Hour,
	}
	if err := s.CreateTask(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Task(ctx, rec.Account, "token:someone-else", rec.ID); !errors.Is(err, mcpface.ErrNoTask) {
		t.Fatalf("a foreign task: %v", err)
	}
	if _, err := s.Task(ctx, "carol@remote.example", rec.Owner, rec.ID); !errors.Is(err, mcpface.ErrNoTask) {
		t.Fatalf("a task of another account: %v", err)
	}
	if l, _ := s.Tasks(ctx, "carol@remote.example", rec.Owner, 10); len(l) != 0 {
		t.Fatalf("listed for another account: %+v", l)
	}
	if err := s.UpdateTask(ctx, rec.ID, "working", "running", 3, nil); err != nil {
		t.Fatal(err)
	}
	if u, _ := s.UnsettledTasks(ctx, rec.Account); len(u) != 1 || u[0].XMPPState != "running" || u[0].Revision != 3 {
		t.Fatalf("unsettled: %+v", u)
	}
	result := json.RawMessage(`{"content":[],"structuredContent":{"counted":3}}`)
	if err := s.UpdateTask(ctx, rec.ID, "completed", "completed", 5, result); err != nil {
		t.Fatal(err)
	}
	// A settled task keeps its result: a late update changes nothing.
	if err := s.UpdateTask(ctx, rec.ID, "working", "running", 6, nil); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = openStore(t, path)
	s.Now = func() time.Time { return now }
	got, err := s.Task(ctx, rec.Account, rec.Owner, rec.ID)
	if err != nil || got.Status != "completed" || string(got.Result) != string(result) || got.TTL != time.Hour || !got.RetainUntil.Equal(rec.RetainUntil) || got.Hash != rec.Hash {
		t.Fatalf("after reopen: %+v %v", got, err)
	}
	if u, _ := s.UnsettledTasks(ctx, rec.Account); len(u) != 0 {
		t.Fatalf("a settled task is unsettled: %+v", u)
	}
	if l, _ := s.Tasks(ctx, rec.Account, rec.Owner, 10); len(l) != 1 {
		t.Fatalf("list: %+v", l)
	}
	s.Now = func() time.Time { return now.Add(2 * time.Hour) }
	if _, err := s.Task(ctx, rec.Account, rec.Owner, rec.ID); !errors.Is(err, mcpface.ErrNoTask) {
		t.Fatalf("past retention: %v", err)
	}
	// The next task created deletes it: it is gone even as of before.
	next := rec
	next.ID, next.RetainUntil = rec.ID+"-next", now.Add(3*time.Hour)
	if err := s.CreateTask(ctx, next); err != nil {
		t.Fatal(err)
	}
	s.Now = func() time.Time { return now }
	if _, err := s.Task(ctx, rec.Account, rec.Owner, rec.ID); !errors.Is(err, mcpface.ErrNoTask) {
		t.Fatalf("an expired task outlived the next creation: %v", err)
	}
	if _, err := s.Task(ctx, next.Account, next.Owner, next.ID); err != nil {
		t.Fatalf("the new task: %v", err)
	}
}
