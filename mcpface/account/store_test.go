package account_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"agentgw/db"
	"agentgw/internal/pgtest"
	"agentgw/mcpface/account"
)

// openStore opens the message queue at path, closed when the test ends
// or by close (to open it again).
func openStore(t testing.TB, path string) (s *account.Store, close func()) {
	t.Helper()
	d, err := db.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	close = func() { once.Do(func() { d.Close() }) }
	t.Cleanup(close)
	return account.NewStore(d), close
}

func TestStoreQueue(t *testing.T) {
	ctx := context.Background()
	path := pgtest.Location(t, filepath.Join(t.TempDir(), "mcp.db"))
	s, closeStore := openStore(t, path)
	const alice, bob = "alice@example.org", "bob@example.org"
	var ids []string
	for _, body := range []string{"one", "two", "three"} {
		st, dropped, err := s.Push(ctx, alice, account.MessageResponse{Body: body, From: "x@example.org/r"}, 2)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, st.ID)
		if body == "three" && (len(dropped) != 1 || dropped[0] != ids[0]) {
			t.Fatalf("dropped = %v, want the oldest %s", dropped, ids[0])
		}
	}
	if _, _, err := s.Push(ctx, bob, account.MessageResponse{Body: "bob's"}, 2); err != nil {
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
	if _, err := s.Get(ctx, alice, ids[0]); !errors.Is(err, account.ErrNotFound) {
		t.Errorf("dropped message still there: %v", err)
	}
	if _, err := s.Get(ctx, bob, ids[1]); !errors.Is(err, account.ErrNotFound) {
		t.Errorf("bob reads alice's message: %v", err)
	}
	// The queue survives a reopen.
	closeStore()
	s, _ = openStore(t, path)
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
	if _, err := s.Take(ctx, alice, ""); !errors.Is(err, account.ErrNotFound) {
		t.Fatalf("Take on empty: %v", err)
	}
}

// BenchmarkStorePush compares queueing messages one transaction each (as
// the session did before issue 22) with the writer's batches: the cost
// is the fsync of each commit (synchronous=FULL).
func BenchmarkStorePush(b *testing.B) {
	m := account.MessageResponse{Success: true, From: "dave@remote.example/phone", FromBareJid: "dave@remote.example", Body: "hello there"}
	for _, size := range []int{1, 16, 256} {
		b.Run(fmt.Sprintf("batch=%d", size), func(b *testing.B) {
			s, closeStore := openStore(b, filepath.Join(b.TempDir(), "mcp.db"))
			defer closeStore()
			batch := make([]account.MessageResponse, size)
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
