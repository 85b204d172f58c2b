package chat_test

import (
	"context"
	"crypto/sha256"
	"encoding/xml"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"agentgw/chat"
	"agentgw/db"
	"agentgw/wire"
)

// TestOutboxResendsAfterCrash: what a previous run put in the outbox and
// did not see sent is sent at start, with the origin-id it was given, so
// a client can drop the duplicate; once sent it is gone.
func TestOutboxResendsAfterCrash(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "gw.db")
	store, err := db.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	const ep, peer = "demo@agents.example", "alice@home.example"
	canon := []byte(`{"agent":{"jid":"demo@agents.example","name":"demo","version":"1"},"manifestSpecVersion":"0","tools":[]}`)
	if _, err := store.RegisterVersion(ctx, db.Version{JID: ep, Version: "1", Hash: sha256.Sum256(canon), Canonical: canon, Name: "demo"}, db.OriginAdmin); err != nil {
		t.Fatal(err)
	}
	if err := store.Activate(ctx, ep, "1", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := store.ChatInbound(ctx, ep, peer); err != nil {
		t.Fatal(err)
	}
	queued, err := store.ChatSend(ctx, db.ChatOut{Endpoint: ep, Recipient: peer + "/phone", Peer: peer, OriginID: "0123456789abcdef0123456789abcdef",
		Type: "chat", Body: "left behind", ReplyTo: peer + "/phone", ReplyID: "m1"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}

	sent := make(chan string, 4)
	svc := chat.New(chat.Options{
		Store: store,
		Send: func(r xml.TokenReader) error {
			s, err := wire.Marshal(r)
			sent <- s
			return err
		},
		Ready:     func(context.Context) error { return nil },
		Endpoints: map[string]chat.Endpoint{ep: {Answerer: chat.Builtin{Store: store}}},
		Consent:   time.Hour,
	})
	svc.Start(ctx)
	defer svc.Close()
	select {
	case s := <-sent:
		for _, want := range []string{"left behind", `id='` + queued.OriginID + `'`, `<origin-id id='` + queued.OriginID + `'`, `<reply id='m1'`} {
			if !strings.Contains(s, want) {
				t.Errorf("resent message lacks %s: %s", want, s)
			}
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the outbox was not sent at start")
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		out, err := store.ChatOutbox(ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(out) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("outbox still holds %+v", out)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestIsBlockBounce: the two bounces of XEP-0191 count, other errors not.
func TestIsBlockBounce(t *testing.T) {
	for _, c := range []struct {
		xml  string
		want bool
	}{
		{`<message type='error'><error type='cancel'><service-unavailable xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/></error></message>`, true},
		{`<message type='error'><error type='cancel'><not-acceptable xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/><blocked xmlns='urn:xmpp:blocking:errors'/></error></message>`, true},
		{`<message type='error'><error type='modify'><not-acceptable xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/></error></message>`, false},
		{`<message type='error'><error type='wait'><resource-constraint xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/></error></message>`, false},
	} {
		el, err := wire.Parse(c.xml)
		if err != nil {
			t.Fatal(err)
		}
		if got := chat.IsBlockBounce(el); got != c.want {
			t.Errorf("IsBlockBounce(%s) = %v", c.xml, got)
		}
	}
}
