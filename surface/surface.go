// Package surface is what every protocol surface of the gateway shares:
// the Request a handler answers, and the one table of stanza errors
// (RFC 6120 section 8.3.3) it answers with.
//
// The protocol packages (directory, search, legacy, api, task, adhoc,
// ping) take a Request and return a result payload or one of the errors
// below, possibly wrapped; the gateway turns any error into an error IQ
// (gateway/dispatch.go, replyError), and the client decodes an error IQ
// back into the same stanza.Error (Decode), so that both sides compare
// conditions with errors.Is.
//
// # Text
//
// An error IQ carries the type and the condition, never a <text/>. Hidden
// and nonexistent objects must fail with the same bytes, and a diagnostic
// is where a detail of the request or of the store would leak; so a
// package may keep a fixed text for its logs and tests (task.Error.Text),
// but nothing sends it. This is what the gateway has always sent: the
// golden stanzas under testdata/golden have no <text/>.
package surface

import (
	"errors"

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

// conditions is the table above, by condition.
var conditions = func() map[stanza.Condition]stanza.Error {
	m := map[stanza.Condition]stanza.Error{}
	for _, e := range []stanza.Error{
		ErrBadRequest, ErrConflict, ErrForbidden, ErrInternalServerError, ErrItemNotFound,
		ErrNotAcceptable, ErrNotAllowed, ErrResourceConstraint, ErrServiceUnavailable, ErrUnexpectedRequest,
	} {
		m[e.Condition] = e
	}
	return m
}()

// Of returns the error of the table for condition c; a condition outside
// the table has type cancel.
func Of(c stanza.Condition) stanza.Error {
	if e, ok := conditions[c]; ok {
		return e
	}
	return stanza.Error{Type: stanza.Cancel, Condition: c}
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
