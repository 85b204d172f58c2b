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
