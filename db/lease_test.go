package db_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"agentgw/db"
)

// TestChatClaimOutbox: two gateways on one file share the outbox; each
// message is claimed by one, a conversation another gateway is sending is
// left to it (its order kept), and a claim lapses after 30 s or goes when
// released.
func TestChatClaimOutbox(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentgw.db")
	a, clk := openAt(t, path)
	b, _ := openAt(t, path)
	b.Now = clk.Now
	ctx := context.Background()
	const ep, alice, bob = "demo@agents.example", "alice@home.example", "bob@remote.example"
	week := 7 * 24 * time.Hour
	mustRegister(t, a, manifest(ep, "1.0", "demo", "Demo"))
	mustActivate(t, a, ep, "1.0")
	for _, peer := range []string{alice, bob} {
		if _, err := a.ChatInbound(ctx, ep, peer); err != nil {
			t.Fatal(err)
		}
	}
	send := func(peer string, i int) {
		if _, err := a.ChatSend(ctx, db.ChatOut{Endpoint: ep, Recipient: peer, Peer: peer, OriginID: fmt.Sprintf("o-%s-%d", peer, i), Type: "chat", Body: "hi"}, week); err != nil {
			t.Fatal(err)
		}
	}
	send(alice, 1)
	send(bob, 1)
	send(alice, 2)

	// A claims two: alice's first, then bob's.
	got, err := a.ChatClaimOutbox(ctx, "A", 2)
	if err != nil || len(got) != 2 || got[0].OriginID != "o-"+alice+"-1" || got[1].OriginID != "o-"+bob+"-1" {
		t.Fatalf("A claimed %+v, %v", got, err)
	}
	// B gets nothing: alice's second waits behind her first, which A has.
	if got, err := b.ChatClaimOutbox(ctx, "B", 10); err != nil || len(got) != 0 {
		t.Fatalf("B claimed %+v, %v", got, err)
	}
	// A again: its own claims and alice's second.
	if got, err := a.ChatClaimOutbox(ctx, "A", 10); err != nil || len(got) != 3 {
		t.Fatalf("A claimed again %+v, %v", got, err)
	}
	if err := a.ChatSent(ctx, got[0].Seq); err != nil {
		t.Fatal(err)
	}
	// A dies; its claims lapse after 30 s, and B takes what is left.
	clk.Advance(29 * time.Second)
	if got, err := b.ChatClaimOutbox(ctx, "B", 10); err != nil || len(got) != 0 {
		t.Fatalf("B claimed before the lapse %+v, %v", got, err)
	}
	clk.Advance(2 * time.Second)
	got, err = b.ChatClaimOutbox(ctx, "B", 10)
	if err != nil || len(got) != 2 || got[0].OriginID != "o-"+bob+"-1" || got[1].OriginID != "o-"+alice+"-2" {
		t.Fatalf("B claimed after the lapse %+v, %v", got, err)
	}
	if got, err := a.ChatClaimOutbox(ctx, "A", 10); err != nil || len(got) != 0 {
		t.Fatalf("A claimed B's %+v, %v", got, err)
	}
	// B stops and releases: A may send at once.
	if h, err := a.ChatClaimHolders(ctx); err != nil || len(h) != 1 || h[0] != "B" {
		t.Fatalf("holders %v, %v", h, err)
	}
	if err := b.ChatReleaseClaims(ctx, "B"); err != nil {
		t.Fatal(err)
	}
	if got, err := a.ChatClaimOutbox(ctx, "A", 10); err != nil || len(got) != 2 {
		t.Fatalf("A claimed after the release %+v, %v", got, err)
	}
}

// TestRenewLeasesApartFromWrites: a renewal extends the holder's leases
// and lists its tasks, and on PostgreSQL it waits neither for the write
// lock another store holds nor for a lease row another transaction has
// locked (that lease is listed, renewed next time). Both are held until
// the renewal has returned, so a renewal that waited would fail.
func TestRenewLeasesApartFromWrites(t *testing.T) {
	ctx := context.Background()
	loc := newLocation(t)
	s, clk := openAt(t, loc)
	mustRegister(t, s, manifest("weather@agents.example", "1.0", "weather", "Weather"))
	mustActivate(t, s, "weather@agents.example", "1.0")
	gc := newCommitter(t, s)
	for _, id := range []string{"t1", "t2"} {
		if err := gc.Do(ctx, func(tx *db.TaskTx) error {
			if err := insert(tx, taskRec(id, "req-"+id)); err != nil {
				return err
			}
			return tx.Hold(id, "A", clk.Now().Add(15*time.Second))
		}); err != nil {
			t.Fatal(err)
		}
	}
	lapsed := func() map[string]bool {
		t.Helper()
		out := map[string]bool{}
		if err := gc.Do(ctx, func(tx *db.TaskTx) error {
			cs, err := tx.ClaimLapsed("B", 15*time.Second, 10)
			for _, c := range cs {
				out[c.Task.ID] = true
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	clk.Advance(10 * time.Second)
	held, err := s.RenewLeases(ctx, "A", 15*time.Second)
	if err != nil || len(held) != 2 {
		t.Fatalf("renewal: %v %v", held, err)
	}
	clk.Advance(10 * time.Second) // 20 s after the holds, 10 after the renewal
	if got := lapsed(); len(got) != 0 {
		t.Fatalf("renewed leases claimed: %v", got)
	}
	if !onPostgres() {
		return
	}

	// Another gateway's batch holds the write lock, and a transaction
	// of this one has t1's lease row locked.
	other, _ := openAt(t, loc)
	lock, err := db.BeginWrite(ctx, other)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Rollback(lock)
	row, err := db.WriterPool(s).BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer row.Rollback()
	if _, err := row.ExecContext(ctx, `SELECT 1 FROM task_lease WHERE task_id = 't1' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	clk.Advance(10 * time.Second)
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	held, err = s.RenewLeases(rctx, "A", 15*time.Second)
	if err != nil || len(held) != 2 {
		t.Fatalf("renewal beside the write lock and a locked row: %v %v", held, err)
	}
	row.Rollback()
	db.Rollback(lock)
	// t2 was renewed; t1, skipped, lapses if no renewal follows.
	clk.Advance(10 * time.Second)
	if got := lapsed(); !got["t1"] || got["t2"] {
		t.Fatalf("lapsed after a renewal that skipped t1: %v, want t1 only", got)
	}
}
