package surface_test

import (
	"errors"
	"fmt"
	"testing"

	"agentgw/surface"
	"agentgw/wire"

	"mellium.im/xmpp/stanza"
)

// TestTableBothSides checks that every error of the table survives the
// wire: what the gateway sends (surface.Wire, no text) decodes on the
// client into the same value, which errors.Is matches.
func TestTableBothSides(t *testing.T) {
	for _, want := range []stanza.Error{
		surface.ErrBadRequest, surface.ErrConflict, surface.ErrForbidden, surface.ErrInternalServerError,
		surface.ErrItemNotFound, surface.ErrNotAcceptable, surface.ErrNotAllowed,
		surface.ErrResourceConstraint, surface.ErrServiceUnavailable, surface.ErrUnexpectedRequest,
	} {
		if got := surface.Of(want.Condition); got.Type != want.Type || got.Condition != want.Condition {
			t.Errorf("Of(%s) = %+v, want %+v", want.Condition, got, want)
		}
		// A handler's error, wrapped and with a diagnostic text.
		err := fmt.Errorf("some layer: %w", stanza.Error{Type: want.Type, Condition: want.Condition, Text: map[string]string{"": "secret detail"}})
		se, ok := surface.Wire(err)
		if !ok || se.Text != nil {
			t.Fatalf("Wire(%v) = %+v, %v; want no text", err, se, ok)
		}
		iq := stanza.IQ{ID: "1", Type: stanza.ErrorIQ}
		s, err := wire.Marshal(iq.Wrap(se.TokenReader()))
		if err != nil {
			t.Fatal(err)
		}
		el, err := wire.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		got := surface.Decode(el)
		if got.Type != want.Type || got.Condition != want.Condition || got.Text != nil || !errors.Is(got, want) {
			t.Errorf("%s: decoded %+v from %s", want.Condition, got, s)
		}
	}
	if _, ok := surface.Wire(errors.New("disk on fire")); ok {
		t.Error("Wire accepted an error that is no stanza error")
	}
}

// TestDecodeText checks that a text from the wire reaches the client.
func TestDecodeText(t *testing.T) {
	el, err := wire.Parse(`<iq type='error' id='1'><error type='modify'><bad-request xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/><text xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'>why</text></error></iq>`)
	if err != nil {
		t.Fatal(err)
	}
	if got := surface.Decode(el); got.Condition != stanza.BadRequest || got.Type != stanza.Modify || got.Text[""] != "why" {
		t.Errorf("Decode = %+v", got)
	}
	el, _ = wire.Parse(`<iq type='error' id='1'/>`)
	if got := surface.Decode(el); got.Condition != stanza.UndefinedCondition || got.Type != stanza.Cancel {
		t.Errorf("Decode(no error) = %+v", got)
	}
}
