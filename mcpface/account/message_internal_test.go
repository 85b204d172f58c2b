package account

import (
	"slices"
	"testing"

	"agentgw/wire"
)

// TestErrorTypeValues holds the ErrorType values, derived from the
// surface table, to the tool contract (xmpp-mcp-server-tools.txt).
func TestErrorTypeValues(t *testing.T) {
	want := []string{"None", "Auth", "Cancel", "Continue", "Modify", "Wait", "Undefined"}
	if !slices.Equal(errorTypeValues, want) {
		t.Errorf("errorTypeValues = %q, want %q", errorTypeValues, want)
	}
}

// TestErrorMessageFields checks the type, code and text a received error
// message reports: a code attribute wins, else the condition's XEP-0086
// code from the surface table; no condition has no code.
func TestErrorMessageFields(t *testing.T) {
	for _, c := range []struct {
		errorXML string
		typ      string
		code     int32 // -1: none
		text     string
	}{
		{`<error type='cancel'><item-not-found xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/></error>`, "Cancel", 404, "item-not-found"},
		{`<error type='auth'><payment-required xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/></error>`, "Auth", 402, "payment-required"},
		{`<error type='modify'><policy-violation xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/></error>`, "Modify", 406, "policy-violation"},
		{`<error type='wait'><remote-server-timeout xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/></error>`, "Wait", 504, "remote-server-timeout"},
		{`<error type='continue'><undefined-condition xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/></error>`, "Continue", 500, "undefined-condition"},
		{`<error type='cancel' code='418'><gone xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/></error>`, "Cancel", 418, "gone"},
		{`<error type='odd'><no-such-condition xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/></error>`, "Undefined", -1, "no-such-condition"},
		{`<error><text xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'>why</text></error>`, "Undefined", -1, "why"},
	} {
		el, err := wire.Parse(`<message xmlns='jabber:client' type='error' from='a@example.org'>` + c.errorXML + `</message>`)
		if err != nil {
			t.Fatal(err)
		}
		m, ok := parseMessage(el)
		if !ok || m.ErrorMessageType == nil || *m.ErrorMessageType != c.typ || m.ErrorMessageText != c.text {
			t.Errorf("%s: ok %v type %v text %q, want %s %q", c.errorXML, ok, deref(m.ErrorMessageType), m.ErrorMessageText, c.typ, c.text)
		}
		switch {
		case c.code < 0 && m.ErrorMessageCode != nil:
			t.Errorf("%s: code %d, want none", c.errorXML, *m.ErrorMessageCode)
		case c.code >= 0 && (m.ErrorMessageCode == nil || *m.ErrorMessageCode != c.code):
			t.Errorf("%s: code %v, want %d", c.errorXML, deref(m.ErrorMessageCode), c.code)
		}
	}
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
