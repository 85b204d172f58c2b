package gateway_test

import (
	"fmt"
	"strings"
	"testing"
)

// startEarly is start with early written by the server in the same write
// as its handshake answer.
func startEarly(t *testing.T, early string) *env {
	t.Helper()
	srv := newFakeServer(t)
	srv.early = early
	return launch(t, srv, testConfig(t, srv.ln.Addr().String(), ""))
}

// TestStanzaWithHandshakeAnswer: stanzas that arrive in the same segment as
// the handshake's answer are read after it, not lost in mellium's decoder.
func TestStanzaWithHandshakeAnswer(t *testing.T) {
	early := `<iq xmlns='jabber:component:accept' type='get' id='early1' from='` + alice + `' to='` + domain + `'><query xmlns='http://jabber.org/protocol/disco#info'/></iq>` +
		` <iq type='get' id='early2' from='` + alice + `' to='` + domain + `'><query xmlns='http://jabber.org/protocol/disco#info'/></iq>`
	e := startEarly(t, early)
	for _, id := range []string{"early1", "early2"} {
		el := e.srv.next()
		if v, _ := el.AttrValue("id"); v != id {
			t.Fatalf("first answer is %s, want the answer to %s", marshal(t, el), id)
		}
		if v, _ := el.AttrValue("type"); v != "result" {
			t.Errorf("answer to %s: %s", id, marshal(t, el))
		}
	}
}

// TestMalformedInputEndsStream: input that is not well-formed XML (here a
// comment, which the stream forbids) gets a stream error and the stream's
// end, and the gateway reconnects.
func TestMalformedInputEndsStream(t *testing.T) {
	for _, bad := range []string{
		`<!-- no comments -->`,
		`<iq type='get' id='x' from='` + alice + `' to='` + domain + `'><a></b></iq>`,
		`<message>&bogus;</message>`,
	} {
		t.Run(bad, func(t *testing.T) {
			streamErrorThenReconnect(t, bad, "not-well-formed")
		})
	}
}

// TestForeignNamespaceIgnored: a top-level element named like a stanza but
// in another namespace is not a stanza: it gets no answer, and the stream
// goes on.
func TestForeignNamespaceIgnored(t *testing.T) {
	e := start(t, "")
	e.srv.write(`<iq xmlns='urn:example:other' type='get' id='foreign' from='` + alice + `' to='` + domain + `'><query xmlns='http://jabber.org/protocol/disco#info'/></iq>` +
		`<o:iq xmlns:o='jabber:client' type='get' id='foreign2' from='` + alice + `' to='` + domain + `'><query xmlns='http://jabber.org/protocol/disco#info'/></o:iq>`)
	// Answers come in order: had a foreign element been answered, its
	// answer would come before the last IQ's.
	e.srv.write(`<iq xmlns='jabber:component:accept' type='get' id='last' from='` + alice + `' to='` + domain + `'><query xmlns='http://jabber.org/protocol/disco#info'/></iq>`)
	for {
		el := e.srv.next()
		id, _ := el.AttrValue("id")
		if strings.HasPrefix(id, "foreign") {
			t.Fatalf("a foreign element was answered: %s", marshal(t, el))
		}
		if id == "last" {
			break
		}
	}
}

// TestBoundsEndStream: past the reader's caps on namespace declarations and
// attributes the stream ends with <policy-violation/>, and the gateway
// reconnects.
func TestBoundsEndStream(t *testing.T) {
	decls, attrs := "", ""
	for i := 0; i < 65; i++ {
		decls += fmt.Sprintf(" xmlns:p%d=''", i)
	}
	for i := 0; i < 257; i++ {
		attrs += fmt.Sprintf(" a%d=''", i)
	}
	for name, bad := range map[string]string{
		"namespaces": `<iq type='get' id='x' from='` + alice + `' to='` + domain + `'><query` + decls + `/></iq>`,
		"attributes": `<iq type='get' id='x' from='` + alice + `' to='` + domain + `'><query` + attrs + `/></iq>`,
	} {
		t.Run(name, func(t *testing.T) {
			streamErrorThenReconnect(t, bad, "policy-violation")
		})
	}
}

// streamErrorThenReconnect writes bad on a fresh gateway's stream and
// checks that the gateway answers with the stream error condition, ends
// the stream, and answers again once it has reconnected.
func streamErrorThenReconnect(t *testing.T, bad, condition string) {
	t.Helper()
	e := start(t, "")
	e.srv.write(bad)
	el := e.srv.next()
	if el.Start.Name.Local != "error" || len(el.Children()) == 0 || el.Children()[0].Start.Name.Local != condition {
		t.Fatalf("answer to %.60q: %s, want the stream error %s", bad, marshal(t, el), condition)
	}
	e.srv.accept()
	got := marshal(t, e.srv.iq(alice, domain, "get", `<query xmlns='http://jabber.org/protocol/disco#info'/>`))
	if !strings.Contains(got, "type='result'") {
		t.Errorf("after reconnecting: %s", got)
	}
}
