package gateway_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"testing"

	"agentgw/db"
	"agentgw/task"
	"agentgw/wire"

	"mellium.im/xmpp/jid"
)

// TestReplyOverWireLimit: a reply whose payload escapes past
// wire.MaxStanzaBytes is never written; the requester gets
// <resource-constraint/>, the stream stays up, and a reply that fits is
// sent whole.
func TestReplyOverWireLimit(t *testing.T) {
	e := start(t, "")
	ctx := context.Background()
	reg := func(local, filler string) {
		j := local + "@" + domain
		canon := fmt.Sprintf(`{"agent":{"jid":%q,"name":%q,"title":"T","version":"1.0"},"filler":"%s","manifestSpecVersion":"0","tools":[]}`, j, local, filler)
		v := db.Version{JID: j, Version: "1.0", Hash: sha256.Sum256([]byte(canon)), Canonical: []byte(canon), Name: local, Title: "T"}
		if _, err := e.store.RegisterVersion(ctx, v, "admin"); err != nil {
			t.Fatal(err)
		}
		if err := e.store.Activate(ctx, j, "1.0", nil); err != nil {
			t.Fatal(err)
		}
	}
	// 200 KB of JSON that is 700 KB once escaped (\" is \&#34;).
	reg("quotes", strings.Repeat(`\"`, 100_000))
	// 200 KB of JSON that escapes to itself.
	reg("plain", strings.Repeat("x", 200_000))

	req := `<manifest-request xmlns='urn:xmpp:agent-api:0'/>`
	if c := condition(e.srv.iq(alice, "quotes@"+domain, "get", req)); c != "resource-constraint" {
		t.Fatalf("oversized reply: condition %q, want resource-constraint", c)
	}
	el := e.srv.iq(alice, "plain@"+domain, "get", req)
	if c := condition(el); c != "" {
		t.Fatalf("reply under the limit: %s", c)
	}
	s, err := wire.Marshal(el.Reader())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(s, strings.Repeat("x", 200_000)) {
		t.Error("reply under the limit was not sent whole")
	}
	if n := wire.EscapedLen(s); n > wire.MaxStanzaBytes {
		t.Errorf("sent a %d-byte stanza, over %d", n, wire.MaxStanzaBytes)
	}
	if c := condition(e.srv.iq(alice, domain, "get", `<query xmlns='http://jabber.org/protocol/disco#info'/>`)); c != "" {
		t.Errorf("stream unusable after a refused reply: %s", c)
	}
}

// TestEventOverWireLimit: an event message over wire.MaxStanzaBytes is not
// written (the task layer settles such results failed first; this is the
// last guard), and the stream carries the next one.
func TestEventOverWireLimit(t *testing.T) {
	e := start(t, "")
	from, to := jid.MustParse("a001@"+domain), jid.MustParse(alice)
	big := task.Event{TaskID: "t1", ID: "evt-big", Revision: 2, Type: task.EventCompleted,
		Payload: []byte(`{"result":"` + strings.Repeat(`\"`, 100_000) + `"}`)}
	if err := e.gw.SendEvent(from, to, big); !errors.Is(err, wire.ErrStanzaTooLarge) {
		t.Fatalf("oversized event: %v, want ErrStanzaTooLarge", err)
	}
	small := task.Event{TaskID: "t1", ID: "evt-small", Revision: 2, Type: task.EventCompleted, Payload: []byte(`{}`)}
	if err := e.gw.SendEvent(from, to, small); err != nil {
		t.Fatal(err)
	}
	if id, _ := e.srv.next().AttrValue("id"); id != "evt-small" {
		t.Errorf("first stanza written is %q, want evt-small", id)
	}
}
