package surface_test

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
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

// TestTableComplete checks that the table has a row for every condition
// mellium defines (read from its source, so a condition it adds fails
// here) and for payment-required, each with one of the RFC 6120 types and
// an XEP-0086 code.
func TestTableComplete(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "mellium.im/xmpp").Output()
	if err != nil {
		t.Fatalf("go list mellium.im/xmpp: %v", err)
	}
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(strings.TrimSpace(string(out)), "stanza", "error.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []stanza.Condition{surface.PaymentRequired}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			v := s.(*ast.ValueSpec)
			if id, ok := v.Type.(*ast.Ident); !ok || id.Name != "Condition" {
				continue
			}
			for _, val := range v.Values {
				lit, ok := val.(*ast.BasicLit)
				if !ok {
					t.Fatalf("a Condition constant of mellium is not a literal: %#v", val)
				}
				c, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				want = append(want, stanza.Condition(c))
			}
		}
	}
	if len(want) != 23 {
		t.Errorf("read %d conditions from mellium and XEP-0086, want the 23 known: %v", len(want), want)
	}
	for _, c := range want {
		code, ok := surface.LegacyCode(c)
		if !ok || code < 300 || code > 599 {
			t.Errorf("LegacyCode(%s) = %d, %v", c, code, ok)
		}
		if typ := surface.Of(c).Type; !slices.Contains(surface.Types, typ) {
			t.Errorf("Of(%s) has type %q", c, typ)
		}
	}
	if code, ok := surface.LegacyCode("no-such-condition"); ok {
		t.Errorf("LegacyCode of an unknown condition = %d", code)
	}
}

// TestLegacyCodes checks codes and types against XEP-0086's table.
func TestLegacyCodes(t *testing.T) {
	for _, c := range []struct {
		cond stanza.Condition
		typ  stanza.ErrorType
		code int
	}{
		{stanza.BadRequest, stanza.Modify, 400},
		{stanza.FeatureNotImplemented, stanza.Cancel, 501},
		{stanza.Forbidden, stanza.Auth, 403},
		{stanza.Gone, stanza.Modify, 302},
		{stanza.ItemNotFound, stanza.Cancel, 404},
		{surface.PaymentRequired, stanza.Auth, 402},
		{stanza.RecipientUnavailable, stanza.Wait, 404},
		{stanza.RemoteServerTimeout, stanza.Wait, 504},
		{stanza.ResourceConstraint, stanza.Wait, 500},
		{stanza.ServiceUnavailable, stanza.Cancel, 503},
		{stanza.SubscriptionRequired, stanza.Auth, 407},
		{stanza.UnexpectedRequest, stanza.Wait, 400},
	} {
		code, _ := surface.LegacyCode(c.cond)
		if typ := surface.Of(c.cond).Type; code != c.code || typ != c.typ {
			t.Errorf("%s: code %d type %s, want %d %s", c.cond, code, typ, c.code, c.typ)
		}
	}
}
