package account

import (
	"fmt"
	"testing"

	"agentgw/wire"

	"mellium.im/xmpp/jid"
)

func feedPresence(t *testing.T, a *Account, xml string) {
	t.Helper()
	el, err := wire.Parse(xml)
	if err != nil {
		t.Fatal(err)
	}
	a.presence(el)
}

// TestPresenceBounded: subscription requests of strangers are capped (the
// oldest forgotten), a resource that goes unavailable is forgotten, and
// the resources of one contact are capped.
func TestPresenceBounded(t *testing.T) {
	a := New(Options{JID: jid.MustParse("alice@example.org")})
	a.contacts["friend@example.org"] = &Contact{BareJid: "friend@example.org", InRoster: true, Subscription: "both", Groups: []string{}}
	for i := range maxPendingStrangers + 10 {
		feedPresence(t, a, fmt.Sprintf(`<presence xmlns="jabber:client" from="s%d@spam.example" type="subscribe"/>`, i))
	}
	// A contact in the roster asking is never dropped.
	feedPresence(t, a, `<presence xmlns="jabber:client" from="friend@example.org" type="subscribe"/>`)
	feedPresence(t, a, `<presence xmlns="jabber:client" from="s1@spam.example" type="subscribe"/>`)
	strangers := 0
	for _, c := range a.Contacts() {
		if c.PendingIn && !c.InRoster {
			strangers++
		}
	}
	if strangers != maxPendingStrangers {
		t.Errorf("%d pending strangers kept, want %d", strangers, maxPendingStrangers)
	}
	if _, ok := a.Contact("s0@spam.example"); ok {
		t.Error("the oldest request was kept")
	}
	if _, ok := a.Contact(fmt.Sprintf("s%d@spam.example", maxPendingStrangers+9)); !ok {
		t.Error("the newest request was dropped")
	}
	if c, ok := a.Contact("friend@example.org"); !ok || !c.PendingIn {
		t.Errorf("the roster contact: %+v %v", c, ok)
	}

	for i := range maxResourcesPerContact + 20 {
		feedPresence(t, a, fmt.Sprintf(`<presence xmlns="jabber:client" from="friend@example.org/r%d"/>`, i))
	}
	c, _ := a.Contact("friend@example.org")
	if len(c.Presence) != maxResourcesPerContact || c.Presence[len(c.Presence)-1].Resource != fmt.Sprintf("r%d", maxResourcesPerContact+19) {
		t.Fatalf("%d resources kept, last %+v", len(c.Presence), c.Presence[len(c.Presence)-1])
	}
	last := fmt.Sprintf("r%d", maxResourcesPerContact+19)
	feedPresence(t, a, `<presence xmlns="jabber:client" from="friend@example.org/`+last+`" type="unavailable"/>`)
	feedPresence(t, a, `<presence xmlns="jabber:client" from="friend@example.org/never-seen" type="unavailable"/>`)
	c, _ = a.Contact("friend@example.org")
	for _, p := range c.Presence {
		if p.Resource == last || p.Resource == "never-seen" || !p.Available {
			t.Errorf("kept %+v after unavailable", p)
		}
	}
	if len(c.Presence) != maxResourcesPerContact-1 {
		t.Errorf("%d resources", len(c.Presence))
	}
}
