package gateway

import (
	"context"
	"errors"
	"testing"
	"time"

	"agentgw/wire"

	"mellium.im/xmpp/jid"
	"mellium.im/xmpp/stanza"
)

// TestPendingFailOnClose: closing the table fails every waiter at once, and
// answers are accepted only from the JID that was asked.
func TestPendingFailOnClose(t *testing.T) {
	p := newPendingIQs(2)
	w := &waiter{to: jid.MustParse("agents.example"), ch: make(chan wire.Element, 1)}
	p.waiting["a"] = w
	if p.deliver("a", jid.MustParse("mallory@evil.example"), wire.Element{}) {
		t.Fatal("answer from the wrong JID accepted")
	}
	if p.deliver("nope", jid.MustParse("agents.example"), wire.Element{}) {
		t.Fatal("answer to an unknown id accepted")
	}
	p.close(ErrStreamLost)
	select {
	case _, ok := <-w.ch:
		if ok {
			t.Fatal("waiter got a value instead of the close")
		}
	case <-time.After(time.Second):
		t.Fatal("waiter still pending after close")
	}
	if p.Len() != 0 {
		t.Fatalf("%d still pending", p.Len())
	}
	// With no session, sending fails at once instead of hanging.
	_, err := p.send(context.Background(), nil, stanzaIQ(), nil)
	if !errors.Is(err, ErrStreamLost) {
		t.Fatalf("send without a stream: %v", err)
	}
}

func stanzaIQ() stanza.IQ { return stanza.IQ{Type: stanza.GetIQ, To: jid.MustParse("agents.example")} }
