// Package surface is what every protocol surface of the gateway shares:
// the Request a handler answers, and the one table of stanza error
// conditions (RFC 6120 section 8.3.3, with their types and XEP-0086
// legacy codes) it answers with and reads others' errors by.
//
// Handlers return a payload or one of these errors; the gateway turns it
// into an error IQ and the client decodes it back (Decode), so both sides
// compare conditions with errors.Is. An error IQ never carries a <text/>:
// hidden and nonexistent objects must fail with the same bytes (why:
// docs/gateway.md, "Stanza errors").
package surface

import (
	"errors"
	"slices"

	"agentgw/policy"
	"agentgw/wire"

	"mellium.im/xmpp/jid"
	"mellium.im/xmpp/stanza"
)

// Request is one inbound IQ get or set, as every surface's handler sees
// it.
type Request struct {
	// ID and Type are the IQ's.
	ID   string
	Type stanza.IQType
	// Policy is the policy in force when the request is routed: a reload
	// while it is handled does not change it.
	Policy *policy.Policy
	// From is the authenticated sender, the only identity there is; To is
	// the JID that was addressed, which answers.
	From, To jid.JID
	// Payload is the IQ's single child element.
	Payload wire.Element
}

// The stanza errors of every surface, one per condition, each with the
// error type it always has on the wire.
var (
	ErrBadRequest          = stanza.Error{Type: stanza.Modify, Condition: stanza.BadRequest}
	ErrConflict            = stanza.Error{Type: stanza.Cancel, Condition: stanza.Conflict}
	ErrForbidden           = stanza.Error{Type: stanza.Auth, Condition: stanza.Forbidden}
	ErrInternalServerError = stanza.Error{Type: stanza.Wait, Condition: stanza.InternalServerError}
	// ErrItemNotFound is the one answer for a hidden, ungranted or
	// nonexistent object, on every surface: the same bytes everywhere.
	ErrItemNotFound       = stanza.Error{Type: stanza.Cancel, Condition: stanza.ItemNotFound}
	ErrNotAcceptable      = stanza.Error{Type: stanza.Modify, Condition: stanza.NotAcceptable}
	ErrNotAllowed         = stanza.Error{Type: stanza.Cancel, Condition: stanza.NotAllowed}
	ErrResourceConstraint = stanza.Error{Type: stanza.Wait, Condition: stanza.ResourceConstraint}
	// ErrServiceUnavailable answers an IQ nothing routes, whether or not
	// the addressed endpoint exists.
	ErrServiceUnavailable = stanza.Error{Type: stanza.Cancel, Condition: stanza.ServiceUnavailable}
	ErrUnexpectedRequest  = stanza.Error{Type: stanza.Wait, Condition: stanza.UnexpectedRequest}
)

// PaymentRequired is the condition XEP-0086 keeps from RFC 3920; RFC
// 6120 dropped it, so mellium does not name it, but servers still send it.
const PaymentRequired stanza.Condition = "payment-required"

// Types are the error types of RFC 6120 section 8.3.2, in its order.
var Types = []stanza.ErrorType{stanza.Auth, stanza.Cancel, stanza.Continue, stanza.Modify, stanza.Wait}

// row is one condition of the table: the condition with the type it has
// on the wire, and its XEP-0086 legacy error code.
type row struct {
	err  stanza.Error
	code int
}

// table is the one table of stanza error conditions: every defined
// condition of RFC 6120 section 8.3.3, and payment-required, with the
// type it is sent with (XEP-0086's) and its XEP-0086 legacy code. The
// surfaces answer only with the exported errors above; the other rows
// are there to read what others send.
var table = []row{
	{ErrBadRequest, 400},
	{ErrConflict, 409},
	{stanza.Error{Type: stanza.Cancel, Condition: stanza.FeatureNotImplemented}, 501},
	{ErrForbidden, 403},
	{stanza.Error{Type: stanza.Modify, Condition: stanza.Gone}, 302},
	{ErrInternalServerError, 500},
	{ErrItemNotFound, 404},
	{stanza.Error{Type: stanza.Modify, Condition: stanza.JIDMalformed}, 400},
	{ErrNotAcceptable, 406},
	{ErrNotAllowed, 405},
	{stanza.Error{Type: stanza.Auth, Condition: stanza.NotAuthorized}, 401},
	{stanza.Error{Type: stanza.Auth, Condition: PaymentRequired}, 402},
	// policy-violation came with RFC 6120, after XEP-0086; it is read
	// as not-acceptable's code.
	{stanza.Error{Type: stanza.Modify, Condition: stanza.PolicyViolation}, 406},
	{stanza.Error{Type: stanza.Wait, Condition: stanza.RecipientUnavailable}, 404},
	{stanza.Error{Type: stanza.Modify, Condition: stanza.Redirect}, 302},
	{stanza.Error{Type: stanza.Auth, Condition: stanza.RegistrationRequired}, 407},
	{stanza.Error{Type: stanza.Cancel, Condition: stanza.RemoteServerNotFound}, 404},
	{stanza.Error{Type: stanza.Wait, Condition: stanza.RemoteServerTimeout}, 504},
	{ErrResourceConstraint, 500},
	{ErrServiceUnavailable, 503},
	{stanza.Error{Type: stanza.Auth, Condition: stanza.SubscriptionRequired}, 407},
	// undefined-condition takes any type; cancel is Of's default.
	{stanza.Error{Type: stanza.Cancel, Condition: stanza.UndefinedCondition}, 500},
	{ErrUnexpectedRequest, 400},
}

// conditions is the table by condition. A condition in two rows, or a
// type that is not one of Types, panics at start.
var conditions = func() map[stanza.Condition]row {
	m := make(map[stanza.Condition]row, len(table))
	for _, r := range table {
		if _, dup := m[r.err.Condition]; dup {
			panic("surface: condition " + string(r.err.Condition) + " is in two rows")
		}
		if !slices.Contains(Types, r.err.Type) {
			panic("surface: condition " + string(r.err.Condition) + " has an unknown type")
		}
		m[r.err.Condition] = r
	}
	return m
}()

// Of returns the error of the table for condition c; a condition outside
// the table has type cancel.
func Of(c stanza.Condition) stanza.Error {
	if r, ok := conditions[c]; ok {
		return r.err
	}
	return stanza.Error{Type: stanza.Cancel, Condition: c}
}

// LegacyCode returns the XEP-0086 error code of condition c; ok is false
// for a condition outside the table.
func LegacyCode(c stanza.Condition) (code int, ok bool) {
	r, ok := conditions[c]
	return r.code, ok
}

// Wire returns what an error IQ carries for err: the type and the
// condition of the stanza.Error in err's chain, and never its text. ok is
// false when err holds no stanza error: the caller answers
// ErrInternalServerError and logs err.
func Wire(err error) (se stanza.Error, ok bool) {
	if !errors.As(err, &se) {
		return stanza.Error{}, false
	}
	return stanza.Error{Type: se.Type, Condition: se.Condition}, true
}

// Decode reads the <error/> of an error IQ (or of any stanza) into the
// stanza.Error a handler returned, for the client: errors.Is(err,
// surface.ErrItemNotFound) then holds on both sides. A missing type is
// cancel and a missing condition undefined-condition. Text from the wire
// is kept but untrusted: show it only escaped and shortened.
func Decode(stanzaEl wire.Element) stanza.Error {
	se := stanza.Error{Type: stanza.Cancel, Condition: stanza.UndefinedCondition}
	for _, c := range stanzaEl.Children() {
		if c.Start.Name.Local != "error" {
			continue
		}
		if t, ok := c.AttrValue("type"); ok {
			se.Type = stanza.ErrorType(t)
		}
		for _, cond := range c.Children() {
			switch {
			case cond.Start.Name.Space != stanza.NSError:
			case cond.Start.Name.Local == "text":
				if se.Text == nil {
					se.Text = map[string]string{}
				}
				lang, _ := cond.AttrValue("lang")
				se.Text[lang] = cond.Text()
			default:
				se.Condition = stanza.Condition(cond.Start.Name.Local)
			}
		}
	}
	return se
}
