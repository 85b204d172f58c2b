package c2s

import (
	"strings"
	"testing"
	"time"
)

// Prosody pushes a roster set to every resource that fetched the roster;
// with WithRosterPushes the push is answered and delivered.
func TestRosterPushes(t *testing.T) {
	e := startEnv(t, "alice")
	ctx := testCtx(t, 20*time.Second)
	alice := login(ctx, t, e, "alice", WithRosterPushes())
	if _, err := alice.IQ(ctx, "get", "", `<query xmlns="jabber:iq:roster"/>`); err != nil {
		t.Fatal(err)
	}
	resp, err := alice.IQ(ctx, "set", "", `<query xmlns="jabber:iq:roster"><item jid="zed@home.example" name="Zed"/></query>`)
	if err != nil || !strings.Contains(resp, `type='result'`) {
		t.Fatalf("roster set: %s %v", resp, err)
	}
	select {
	case el := <-alice.Incoming():
		if s := text(t, el); !strings.HasPrefix(s, "<iq") || !strings.Contains(s, `jid='zed@home.example'`) || !strings.Contains(s, `type='set'`) {
			t.Fatalf("push: %s", s)
		}
	case <-ctx.Done():
		t.Fatal("no roster push delivered")
	}
	// The session is still healthy: the push got its answer.
	if _, err := alice.IQ(ctx, "get", e.HomeDomain, `<ping xmlns="urn:xmpp:ping"/>`); err != nil {
		t.Fatal(err)
	}
}
