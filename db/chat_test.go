package db_test

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"agentgw/db"
)

// TestChatConsent: an endpoint may write to whoever wrote within the
// window or is subscribed, until a bounce blocks them; writing again
// lifts the block.
func TestChatConsent(t *testing.T) {
	s, clk := newStore(t)
	ctx := context.Background()
	const ep, alice, bob = "demo@agents.example", "alice@home.example", "bob@remote.example"
	week := 7 * 24 * time.Hour
	mustRegister(t, s, manifest(ep, "1.0", "demo", "Demo"))
	mustActivate(t, s, ep, "1.0")
	if err := s.ChatConsent(ctx, ep, alice, week); !errors.Is(err, db.ErrChatNoConsent) {
		t.Fatalf("consent before any message = %v", err)
	}
	h1, err := s.ChatInbound(ctx, ep, alice)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ChatConsent(ctx, ep, alice, week); err != nil {
		t.Fatalf("consent after a message = %v", err)
	}
	clk.Advance(week + time.Millisecond)
	if err := s.ChatConsent(ctx, ep, alice, week); !errors.Is(err, db.ErrChatNoConsent) {
		t.Fatalf("consent after the window = %v", err)
	}
	h2, err := s.ChatInbound(ctx, ep, alice)
	if err != nil || h2 != h1 || h1 == "" || strings.Contains(h1, "alice") {
		t.Fatalf("handles %q, %q, %v: want one opaque handle per conversation", h1, h2, err)
	}

	// Queued, then blocked: the queued message is dropped, and nothing
	// more is accepted until alice writes again.
	m, err := s.ChatSend(ctx, db.ChatOut{Endpoint: ep, Recipient: alice + "/phone", Peer: alice, OriginID: "o1", Type: "chat", Body: "hi"}, week)
	if err != nil || m.Seq == 0 {
		t.Fatalf("ChatSend = %+v, %v", m, err)
	}
	if out, err := s.ChatOutbox(ctx, 10); err != nil || len(out) != 1 || out[0].OriginID != "o1" || out[0].Body != "hi" {
		t.Fatalf("outbox = %+v, %v", out, err)
	}
	if n, err := s.ChatBounced(ctx, ep, alice); err != nil || n != 1 {
		t.Fatalf("ChatBounced = %d, %v", n, err)
	}
	if _, err := s.ChatSend(ctx, db.ChatOut{Endpoint: ep, Recipient: alice, Peer: alice, OriginID: "o2", Type: "chat", Body: "hi"}, week); !errors.Is(err, db.ErrChatBlocked) {
		t.Fatalf("ChatSend while blocked = %v", err)
	}
	if out, _ := s.ChatOutbox(ctx, 10); len(out) != 0 {
		t.Fatalf("outbox after the bounce = %+v", out)
	}
	if _, err := s.ChatInbound(ctx, ep, alice); err != nil {
		t.Fatal(err)
	}
	if err := s.ChatConsent(ctx, ep, alice, week); err != nil {
		t.Fatalf("consent after writing again = %v", err)
	}

	// A presence subscriber has consent without writing; a bounce blocks
	// it too.
	if _, err := s.Subscribe(ctx, ep, bob); err != nil {
		t.Fatal(err)
	}
	if err := s.ChatConsent(ctx, ep, bob, week); err != nil {
		t.Fatalf("subscriber consent = %v", err)
	}
	if _, err := s.ChatBounced(ctx, ep, bob); err != nil {
		t.Fatal(err)
	}
	if err := s.ChatConsent(ctx, ep, bob, week); !errors.Is(err, db.ErrChatBlocked) {
		t.Fatalf("blocked subscriber consent = %v", err)
	}
}

// TestChatQueue: the queue is per endpoint, oldest first, bounded by
// dropping the oldest, and a take removes only when asked.
func TestChatQueue(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	const ep = "q@agents.example"
	for _, j := range []string{ep, "o@agents.example"} {
		mustRegister(t, s, manifest(j, "1", "q", "Q"))
		mustActivate(t, s, j, "1")
	}
	var dropped []string
	for i, id := range []string{"m1", "m2", "m3"} {
		_, d, err := s.ChatEnqueue(ctx, db.ChatIn{ID: id, Endpoint: ep, Sender: "alice@home.example/x", Type: "chat", Body: "b" + id}, "alice@home.example", 2)
		if err != nil {
			t.Fatalf("enqueue %d: %v", i, err)
		}
		dropped = append(dropped, d...)
	}
	if len(dropped) != 1 || dropped[0] != "m1" {
		t.Fatalf("dropped = %q", dropped)
	}
	if _, _, err := s.ChatEnqueue(ctx, db.ChatIn{ID: "other", Endpoint: "o@agents.example", Sender: "a@b/c"}, "a@b", 2); err != nil {
		t.Fatal(err)
	}
	q, err := s.ChatQueue(ctx, ep, 10)
	if err != nil || len(q) != 2 || q[0].ID != "m2" || q[1].Body != "bm3" {
		t.Fatalf("queue = %+v, %v", q, err)
	}
	if err := s.ChatConsent(ctx, ep, "alice@home.example", time.Hour); err != nil {
		t.Errorf("a queued message gives no consent: %v", err)
	}
	if m, err := s.ChatTake(ctx, ep, "m3", false); err != nil || m.Body != "bm3" {
		t.Fatalf("get m3 = %+v, %v", m, err)
	}
	if m, err := s.ChatTake(ctx, ep, "", true); err != nil || m.ID != "m2" {
		t.Fatalf("pop = %+v, %v", m, err)
	}
	if _, err := s.ChatTake(ctx, ep, "m2", true); !errors.Is(err, db.ErrNotFound) {
		t.Fatalf("popped message still there: %v", err)
	}
	if _, err := s.ChatTake(ctx, ep, "other", false); !errors.Is(err, db.ErrNotFound) {
		t.Fatal("another endpoint's message was found")
	}
}

// chatRows counts the chat state the store keeps for endpoint, by table.
func chatRows(t *testing.T, s *db.Store, endpoint string) map[string]int {
	t.Helper()
	n := map[string]int{}
	for _, table := range []string{"chat_contact", "chat_outbox", "chat_queue"} {
		var c int
		if err := db.ReaderPool(s).QueryRow(db.Q(s, "SELECT count(*) FROM "+table+" WHERE endpoint_jid = ?"), endpoint).Scan(&c); err != nil {
			t.Fatal(err)
		}
		n[table] = c
	}
	return n
}

// TestChatFollowsTheStore: an endpoint that is not active takes no chat
// and sends none (ErrChatInactive, an ErrNotFound); removing an endpoint
// removes its consent, blocks, outbox and queue in the same transaction,
// so one made again under the same JID inherits none of them, and other
// endpoints keep theirs.
func TestChatFollowsTheStore(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	const ep, other, alice, bob = "helper@agents.example", "other@agents.example", "alice@home.example", "bob@home.example"
	week := 7 * 24 * time.Hour
	inactive := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, db.ErrChatInactive) || !errors.Is(err, db.ErrNotFound) {
			t.Errorf("%s: %v, want ErrChatInactive", what, err)
		}
	}
	// Never registered: nothing is recorded.
	_, err := s.ChatInbound(ctx, ep, alice)
	inactive("inbound to a nonexistent endpoint", err)
	_, _, err = s.ChatEnqueue(ctx, db.ChatIn{ID: "q0", Endpoint: ep, Sender: alice + "/x", Type: "chat", Body: "hi"}, alice, 10)
	inactive("enqueue to a nonexistent endpoint", err)
	_, err = s.ChatBounced(ctx, ep, alice)
	inactive("bounce to a nonexistent endpoint", err)
	if n := chatRows(t, s, ep); n["chat_contact"]+n["chat_outbox"]+n["chat_queue"] != 0 {
		t.Fatalf("rows for a nonexistent endpoint: %v", n)
	}

	for _, j := range []string{ep, other} {
		mustRegister(t, s, manifest(j, "1", "h", "Helper"))
		mustActivate(t, s, j, "1")
	}
	fill := func() {
		t.Helper()
		for _, j := range []string{ep, other} {
			if _, err := s.ChatInbound(ctx, j, alice); err != nil {
				t.Fatal(err)
			}
			if _, err := s.ChatBounced(ctx, j, bob); err != nil {
				t.Fatal(err)
			}
			if _, err := s.ChatSend(ctx, db.ChatOut{Endpoint: j, Recipient: alice, Peer: alice, OriginID: "o-" + j, Type: "chat", Body: "hi"}, week); err != nil {
				t.Fatal(err)
			}
			if _, _, err := s.ChatEnqueue(ctx, db.ChatIn{ID: "q-" + j, Endpoint: j, Sender: alice + "/x", Type: "chat", Body: "hi"}, alice, 10); err != nil {
				t.Fatal(err)
			}
		}
	}
	fill()
	want := map[string]int{"chat_contact": 2, "chat_outbox": 1, "chat_queue": 1}
	if n := chatRows(t, s, ep); !maps.Equal(n, want) {
		t.Fatalf("rows = %v, want %v", n, want)
	}

	// Deactivated: the state stays (it may come back), but the endpoint
	// neither takes nor sends.
	if err := s.Deactivate(ctx, ep); err != nil {
		t.Fatal(err)
	}
	_, err = s.ChatInbound(ctx, ep, alice)
	inactive("inbound to a deactivated endpoint", err)
	_, _, err = s.ChatEnqueue(ctx, db.ChatIn{ID: "q1", Endpoint: ep, Sender: alice + "/x", Type: "chat", Body: "hi"}, alice, 10)
	inactive("enqueue to a deactivated endpoint", err)
	_, err = s.ChatSend(ctx, db.ChatOut{Endpoint: ep, Recipient: alice, Peer: alice, OriginID: "o2", Type: "chat", Body: "hi"}, week)
	inactive("send from a deactivated endpoint", err)
	inactive("consent of a deactivated endpoint", s.ChatConsent(ctx, ep, alice, week))
	if n := chatRows(t, s, ep); !maps.Equal(n, want) {
		t.Fatalf("rows after deactivation = %v, want %v", n, want)
	}
	mustActivate(t, s, ep, "1")
	if err := s.ChatConsent(ctx, ep, alice, week); err != nil {
		t.Fatalf("consent after reactivation = %v", err)
	}

	// Removed: every row goes, the other endpoint's stay.
	if err := s.RemoveEndpoint(ctx, ep); err != nil {
		t.Fatal(err)
	}
	if n := chatRows(t, s, ep); n["chat_contact"]+n["chat_outbox"]+n["chat_queue"] != 0 {
		t.Fatalf("rows after removal = %v", n)
	}
	if n := chatRows(t, s, other); !maps.Equal(n, want) {
		t.Fatalf("the other endpoint's rows after removal = %v, want %v", n, want)
	}
	_, err = s.ChatInbound(ctx, ep, alice)
	inactive("inbound to a removed endpoint", err)

	// Made again under the same JID: no consent, no block, nothing queued.
	mustRegister(t, s, manifest(ep, "2", "h", "Helper again"))
	mustActivate(t, s, ep, "2")
	if err := s.ChatConsent(ctx, ep, alice, week); !errors.Is(err, db.ErrChatNoConsent) {
		t.Errorf("alice's consent inherited by the new endpoint: %v", err)
	}
	if err := s.ChatConsent(ctx, ep, bob, week); !errors.Is(err, db.ErrChatNoConsent) {
		t.Errorf("bob's block inherited by the new endpoint: %v", err)
	}
	if q, err := s.ChatQueue(ctx, ep, 10); err != nil || len(q) != 0 {
		t.Errorf("queue inherited by the new endpoint: %+v, %v", q, err)
	}
	if out, err := s.ChatOutbox(ctx, 10); err != nil || len(out) != 1 || out[0].Endpoint != other {
		t.Errorf("outbox after re-creation: %+v, %v", out, err)
	}
}
