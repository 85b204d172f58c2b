package gateway_test

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"agentgw/app"
	"agentgw/chat"
	"agentgw/db"
	"agentgw/wire"

	"mellium.im/xmpp/jid"
)

const chatExtra = `
[[endpoint]]
jid = "a001@agents.example"
runtime = "builtin"
chat = "builtin"
[[endpoint]]
jid = "a002@agents.example"
runtime = "builtin"
[[policy.chat]]
principals = ["alice@home.example"]
endpoints = ["a001@agents.example", "a002@agents.example"]
`

// startChat starts a gateway whose a001 chats with the builtin answerer
// and lets alice (only) chat with it; a002 has chat off.
func startChat(t *testing.T) (*env, *chat.Service) {
	t.Helper()
	e := start(t, chatExtra)
	register(t, e.store, "a001", "Agent 1", true)
	register(t, e.store, "a002", "Agent 2", true)
	svc, err := app.StartChat(context.Background(), e.cfg, e.store, e.gw, nil, nil, nil, "")
	if err != nil || svc == nil {
		t.Fatalf("no chat service: %v", err)
	}
	t.Cleanup(svc.Close)
	return e, svc
}

var stanzaAddrs = regexp.MustCompile(` (from|to|id)='[^']*'`)

// bounceOf sends a chat to to and returns the bounce without its
// addressing, which differs only in being from the addressed JID.
func bounceOf(t *testing.T, e *env, from, to string) string {
	t.Helper()
	e.srv.write(`<message xmlns='jabber:component:accept' type='chat' id='b1' from='` + from + `' to='` + to + `'><body>hi</body><request xmlns='urn:xmpp:receipts'/></message>`)
	el := e.srv.next()
	if typ, _ := el.AttrValue("type"); typ != "error" {
		t.Fatalf("message from %s to %s: want a bounce, got %s", from, to, marshal(t, el))
	}
	if f, _ := el.AttrValue("from"); f != to {
		t.Fatalf("bounce from %s, want %s", f, to)
	}
	return stanzaAddrs.ReplaceAllString(marshal(t, el), "")
}

// TestChatBounceUnchanged: a sender without a chat grant, an endpoint with
// chat off and a nonexistent endpoint all get the bounce of today, byte
// for byte but for the addressing.
func TestChatBounceUnchanged(t *testing.T) {
	e, _ := startChat(t)
	nonexistent := bounceOf(t, e, alice, "nobody@"+domain)
	if !strings.Contains(nonexistent, "service-unavailable") || strings.Contains(nonexistent, "hi") {
		t.Fatalf("bounce = %s", nonexistent)
	}
	for _, c := range []struct{ from, to string }{{carol, "a001@" + domain}, {alice, "a002@" + domain}} {
		if got := bounceOf(t, e, c.from, c.to); got != nonexistent {
			t.Errorf("%s to %s:\n%s\nnonexistent endpoint:\n%s", c.from, c.to, got, nonexistent)
		}
	}
	// Groupchat is not part of the profile: it bounces too.
	e.srv.write(`<message xmlns='jabber:component:accept' type='groupchat' id='g1' from='` + alice + `' to='a001@` + domain + `'><body>hi</body></message>`)
	if el := e.srv.next(); !strings.Contains(marshal(t, el), "service-unavailable") {
		t.Errorf("groupchat: %s", marshal(t, el))
	}
}

// TestChatBuiltin: alice's message is received (XEP-0184), answered
// while composing (XEP-0085), and the answer echoes her text and carries
// origin-id, reply and store.
func TestChatBuiltin(t *testing.T) {
	e, _ := startChat(t)
	e.srv.write(`<message xmlns='jabber:component:accept' type='chat' id='m1' from='` + alice + `' to='a001@` + domain + `'><body>hello there</body><request xmlns='urn:xmpp:receipts'/></message>`)
	var got []wire.Element
	for len(got) < 3 {
		got = append(got, e.srv.next())
	}
	receipt, composing, answer := marshal(t, got[0]), marshal(t, got[1]), marshal(t, got[2])
	if !strings.Contains(receipt, `<received id='m1' xmlns='urn:xmpp:receipts'/>`) || !strings.Contains(receipt, `from='a001@agents.example'`) {
		t.Errorf("receipt: %s", receipt)
	}
	if !strings.Contains(composing, "<composing") {
		t.Errorf("composing: %s", composing)
	}
	for _, want := range []string{`type='chat'`, `to='` + alice + `'`, `from='a001@agents.example'`, "You said: hello there", "I have no tools.",
		`<active xmlns='http://jabber.org/protocol/chatstates'/>`, `<reply id='m1' to='` + alice + `' xmlns='urn:xmpp:reply:0'/>`, `<store xmlns='urn:xmpp:hints'/>`} {
		if !strings.Contains(answer, want) {
			t.Errorf("answer lacks %s: %s", want, answer)
		}
	}
	origin := regexp.MustCompile(`<origin-id id='([0-9a-f]{32})' xmlns='urn:xmpp:sid:0'/>`).FindStringSubmatch(answer)
	if origin == nil {
		t.Fatalf("answer without an origin-id: %s", answer)
	}
	if id, _ := got[2].AttrValue("id"); id != origin[1] {
		t.Errorf("stanza id %s, origin-id %s", id, origin[1])
	}
	// No task was made of it.
	if live, err := e.store.LiveTasks(context.Background()); err != nil || len(live) != 0 {
		t.Errorf("tasks after a chat = %d, %v", len(live), err)
	}
}

// TestChatFeatures: the profile's features are shown only to a requester
// who may chat with the endpoint.
func TestChatFeatures(t *testing.T) {
	e, _ := startChat(t)
	info := `<query xmlns='http://jabber.org/protocol/disco#info'/>`
	mine := marshal(t, e.srv.iq(alice, "a001@"+domain, "get", info))
	for _, f := range chat.Features {
		if !strings.Contains(mine, `var='`+f+`'`) {
			t.Errorf("alice's disco#info lacks %s: %s", f, mine)
		}
	}
	for _, c := range []struct{ from, to string }{{alice, "a002@" + domain}, {"bob@home.example/x", "a001@" + domain}} {
		other := marshal(t, e.srv.iq(c.from, c.to, "get", info))
		if strings.Contains(other, chat.NSReceipts) || strings.Contains(other, chat.NSChatStates) {
			t.Errorf("%s sees chat features of %s: %s", c.from, c.to, other)
		}
	}
}

// TestChatBlockBounce: a bounce of a message the endpoint sent stops it
// writing until the peer writes again; consent is needed at all.
func TestChatBlockBounce(t *testing.T) {
	e, svc := startChat(t)
	ctx := context.Background()
	pol := e.gw.Policy()
	aliceJID := jid.MustParse(alice)
	if _, err := svc.Send(ctx, pol, "a001@"+domain, aliceJID, "unsolicited", ""); !errors.Is(err, db.ErrChatNoConsent) {
		t.Fatalf("send without consent: %v", err)
	}
	if _, err := svc.Send(ctx, pol, "a001@"+domain, jid.MustParse(carol), "x", ""); !errors.Is(err, chat.ErrNotGranted) {
		t.Fatalf("send to an ungranted JID: %v", err)
	}
	e.srv.write(`<message xmlns='jabber:component:accept' type='chat' id='m1' from='` + alice + `' to='a001@` + domain + `'><body>hi</body></message>`)
	for i := 0; i < 2; i++ { // composing, answer
		e.srv.next()
	}
	if _, err := svc.Send(ctx, pol, "a001@"+domain, aliceJID, "second", ""); err != nil {
		t.Fatalf("send with consent: %v", err)
	}
	if el := e.srv.next(); !strings.Contains(marshal(t, el), "second") {
		t.Fatalf("want the message, got %s", marshal(t, el))
	}
	e.srv.write(`<message xmlns='jabber:component:accept' type='error' id='x' from='alice@home.example' to='a001@` + domain + `'><error type='cancel'><service-unavailable xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/></error></message>`)
	// The bounce is recorded by a worker; wait for it through the store.
	waitFor(t, func() bool {
		return errors.Is(e.store.ChatConsent(ctx, "a001@"+domain, "alice@home.example", e.cfg.Chat.Consent), db.ErrChatBlocked)
	})
	if _, err := svc.Send(ctx, pol, "a001@"+domain, aliceJID, "third", ""); !errors.Is(err, db.ErrChatBlocked) {
		t.Fatalf("send after a bounce: %v", err)
	}
}

// waitFor polls cond for up to five seconds.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in time")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestChatNormalMessage: a message of type normal is answered in kind,
// without chat states, which belong to chat sessions.
func TestChatNormalMessage(t *testing.T) {
	e, _ := startChat(t)
	e.srv.write(`<message xmlns='jabber:component:accept' id='n1' from='` + alice + `' to='a001@` + domain + `'><body>plain</body></message>`)
	answer := marshal(t, e.srv.next())
	if !strings.Contains(answer, "You said: plain") || !strings.Contains(answer, `type='normal'`) || strings.Contains(answer, chat.NSChatStates) {
		t.Errorf("answer to a normal message: %s", answer)
	}
}

// TestChatInactiveBounces: an endpoint the configuration names for chat,
// once deactivated or removed, takes no chats: a message with a body and
// a bare chat state get the bounce of a nonexistent JID, byte for byte but
// for the addressing, and nothing is recorded for it. Made again under the
// same JID it answers, and has inherited no consent.
func TestChatInactiveBounces(t *testing.T) {
	e, _ := startChat(t)
	ctx := context.Background()
	ep := "a001@" + domain
	nonexistent := bounceOf(t, e, alice, "nobody@"+domain)
	// alice wrote once: consent.
	e.srv.write(`<message xmlns='jabber:component:accept' type='normal' id='n0' from='` + alice + `' to='` + ep + `'><body>first</body></message>`)
	if a := marshal(t, e.srv.next()); !strings.Contains(a, "You said: first") {
		t.Fatalf("answer: %s", a)
	}
	chatState := func() string {
		t.Helper()
		e.srv.write(`<message xmlns='jabber:component:accept' type='chat' id='s1' from='` + alice + `' to='` + ep + `'><composing xmlns='http://jabber.org/protocol/chatstates'/></message>`)
		el := e.srv.next()
		if typ, _ := el.AttrValue("type"); typ != "error" {
			t.Fatalf("chat state to an inactive endpoint: want a bounce, got %s", marshal(t, el))
		}
		return stanzaAddrs.ReplaceAllString(marshal(t, el), "")
	}
	stateBounce := stanzaAddrs.ReplaceAllString(func() string {
		e.srv.write(`<message xmlns='jabber:component:accept' type='chat' id='s0' from='` + alice + `' to='nobody@` + domain + `'><composing xmlns='http://jabber.org/protocol/chatstates'/></message>`)
		return marshal(t, e.srv.next())
	}(), "")

	if err := e.store.Deactivate(ctx, ep); err != nil {
		t.Fatal(err)
	}
	if got := bounceOf(t, e, alice, ep); got != nonexistent {
		t.Errorf("deactivated endpoint:\n%s\nnonexistent endpoint:\n%s", got, nonexistent)
	}
	if got := chatState(); got != stateBounce {
		t.Errorf("chat state to a deactivated endpoint:\n%s\nnonexistent endpoint:\n%s", got, stateBounce)
	}
	if err := e.store.RemoveEndpoint(ctx, ep); err != nil {
		t.Fatal(err)
	}
	if got := bounceOf(t, e, alice, ep); got != nonexistent {
		t.Errorf("removed endpoint:\n%s\nnonexistent endpoint:\n%s", got, nonexistent)
	}
	if err := e.store.ChatConsent(ctx, ep, "alice@home.example", time.Hour); !errors.Is(err, db.ErrChatInactive) {
		t.Errorf("consent of a removed endpoint: %v", err)
	}

	register(t, e.store, "a001", "Agent 1", true) // a tombstone allows only the same content
	if err := e.store.ChatConsent(ctx, ep, "alice@home.example", time.Hour); !errors.Is(err, db.ErrChatNoConsent) {
		t.Errorf("re-created endpoint inherited consent: %v", err)
	}
	e.srv.write(`<message xmlns='jabber:component:accept' type='normal' id='n1' from='` + alice + `' to='` + ep + `'><body>again</body></message>`)
	if a := marshal(t, e.srv.next()); !strings.Contains(a, "You said: again") {
		t.Fatalf("answer of the re-created endpoint: %s", a)
	}
}
