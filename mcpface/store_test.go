package mcpface_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"agentgw/internal/pgtest"
	"agentgw/mcpface"
)

func openStore(t *testing.T, path string) *mcpface.Store {
	t.Helper()
	s, err := mcpface.OpenStore(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestStoreQueue(t *testing.T) {
	ctx := context.Background()
	path := pgtest.Location(t, filepath.Join(t.TempDir(), "mcp.db"))
	s := openStore(t, path)
	const alice, bob = "alice@example.org", "bob@example.org"
	var ids []string
	for _, body := range []string{"one", "two", "three"} {
		st, dropped, err := s.Push(ctx, alice, mcpface.MessageResponse{Body: body, From: "x@example.org/r"}, 2)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, st.ID)
		if body == "three" && (len(dropped) != 1 || dropped[0] != ids[0]) {
			t.Fatalf("dropped = %v, want the oldest %s", dropped, ids[0])
		}
	}
	if _, _, err := s.Push(ctx, bob, mcpface.MessageResponse{Body: "bob's"}, 2); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.Dropped(ctx, alice); n != 1 {
		t.Errorf("Dropped = %d, want 1", n)
	}
	if ids[1] == ids[2] || len(ids[1]) != 32 {
		t.Errorf("ids %v", ids)
	}
	old, err := s.Oldest(ctx, alice)
	if err != nil || old.Message.Body != "two" {
		t.Fatalf("Oldest = %+v, %v", old, err)
	}
	if _, err := s.Get(ctx, alice, ids[0]); !errors.Is(err, mcpface.ErrNotFound) {
		t.Errorf("dropped message still there: %v", err)
	}
	if _, err := s.Get(ctx, bob, ids[1]); !errors.Is(err, mcpface.ErrNotFound) {
		t.Errorf("bob reads alice's message: %v", err)
	}
	// The queue survives a reopen.
	s.Close()
	s = openStore(t, path)
	list, err := s.List(ctx, alice)
	if err != nil || len(list) != 2 || list[0].ID != ids[1] || list[1].ID != ids[2] {
		t.Fatalf("after reopen: %+v %v", list, err)
	}
	st, err := s.Take(ctx, alice, ids[2])
	if err != nil || st.Message.Body != "three" {
		t.Fatalf("Take id: %+v %v", st, err)
	}
	st, err = s.Take(ctx, alice, "")
	if err != nil || st.Message.Body != "two" {
		t.Fatalf("Take oldest: %+v %v", st, err)
	}
	if _, err := s.Take(ctx, alice, ""); !errors.Is(err, mcpface.ErrNotFound) {
		t.Fatalf("Take on empty: %v", err)
	}
}

// TestStoreIsPrivate: the message store, its -wal and -shm are 0600 with
// umask 022, and an exposed existing store is refused, naming the file.
func TestStoreIsPrivate(t *testing.T) {
	pgtest.SQLiteOnly(t, "file modes")
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	path := filepath.Join(t.TempDir(), "mcp.db")
	s := openStore(t, path)
	if _, _, err := s.Push(context.Background(), "a@example.org", mcpface.MessageResponse{Success: true, Body: "hi"}, 10); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		info, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if m := info.Mode().Perm(); m != 0o600 {
			t.Errorf("%s: mode %04o, want 0600", filepath.Base(p), m)
		}
	}
	s.Close()
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := mcpface.OpenStore(context.Background(), path); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("exposed store: %v", err)
	}
}

// BenchmarkStorePush compares queueing messages one transaction each (as
// the session did before issue 22) with the writer's batches: the cost
// is the fsync of each commit (synchronous=FULL).
func BenchmarkStorePush(b *testing.B) {
	m := mcpface.MessageResponse{Success: true, From: "dave@remote.example/phone", FromBareJid: "dave@remote.example", Body: "hello there"}
	for _, size := range []int{1, 16, 256} {
		b.Run(fmt.Sprintf("batch=%d", size), func(b *testing.B) {
			s, err := mcpface.OpenStore(context.Background(), filepath.Join(b.TempDir(), "mcp.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			batch := make([]mcpface.MessageResponse, size)
			for i := range batch {
				batch[i] = m
			}
			b.ResetTimer()
			for done := 0; done < b.N; done += size {
				if _, _, err := s.PushBatch(context.Background(), "carol@home.example", batch, 1000, 16<<20); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
