package task

import (
	"agentgw/surface"

	"mellium.im/xmpp/stanza"
)

// Error is a protocol error of this package: a stanza error condition and
// fixed, safe text written by this package. It never carries any part of
// the request (JSON, identifiers, reasons), and the text is for logs and
// tests only: no error IQ carries one (package surface).
//
// errors.As(err, &stanzaErr) converts it to a stanza.Error, so the
// gateway's single error-to-IQ function handles it like any other stanza
// error. errors.Is matches on the condition alone, across packages:
// errors.Is(err, ErrConflict) is true for every conflict of this package,
// and errors.Is(err, surface.ErrConflict) too, as for any conflict of
// api, adhoc or the client's decoded replies. (The converse,
// errors.Is(surface.ErrConflict, ErrConflict), is false, since a
// stanza.Error matches only stanza errors: compare with the surface
// table's entries.)
type Error struct {
	// Condition is the RFC 6120 defined condition.
	Condition stanza.Condition
	// Text is a fixed diagnostic of this package, or empty. ErrNotFound
	// has none, so that every not-found answer is byte-identical.
	Text string
}

// Error returns "task: CONDITION: TEXT".
func (e *Error) Error() string {
	if e.Text == "" {
		return "task: " + string(e.Condition)
	}
	return "task: " + string(e.Condition) + ": " + e.Text
}

// Is reports whether target is an *Error with the same condition, or a
// stanza.Error that the stanza error e sends matches.
func (e *Error) Is(target error) bool {
	switch t := target.(type) {
	case *Error:
		return t.Condition == e.Condition
	case stanza.Error:
		// What e sends, compared as mellium compares stanza errors:
		// errors.Is(task.ErrNotFound, surface.ErrItemNotFound) holds.
		return e.StanzaError().Is(t)
	}
	return false
}

// As converts e to a stanza.Error for errors.As.
func (e *Error) As(target any) bool {
	if p, ok := target.(*stanza.Error); ok {
		*p = e.StanzaError()
		return true
	}
	return false
}

// StanzaError returns the stanza error to send: the condition with the
// type the surface table gives it (surface.Of), and no text.
func (e *Error) StanzaError() stanza.Error { return surface.Of(e.Condition) }

// Sentinel errors, one per condition, for errors.Is. ErrNotFound is also
// the value returned for every nonexistent, expired, unauthorized or
// cross-caller task and input request ("Task Recovery").
var (
	ErrNotFound           = &Error{Condition: stanza.ItemNotFound}
	ErrBadRequest         = &Error{Condition: stanza.BadRequest}
	ErrConflict           = &Error{Condition: stanza.Conflict}
	ErrNotAcceptable      = &Error{Condition: stanza.NotAcceptable}
	ErrUnexpectedRequest  = &Error{Condition: stanza.UnexpectedRequest}
	ErrResourceConstraint = &Error{Condition: stanza.ResourceConstraint}
	ErrServiceUnavailable = &Error{Condition: stanza.ServiceUnavailable}
	ErrForbidden          = &Error{Condition: stanza.Forbidden}
)

func badRequest(text string) error    { return &Error{Condition: stanza.BadRequest, Text: text} }
func conflict(text string) error      { return &Error{Condition: stanza.Conflict, Text: text} }
func notAcceptable(text string) error { return &Error{Condition: stanza.NotAcceptable, Text: text} }
func tooLarge(text string) error      { return &Error{Condition: stanza.ResourceConstraint, Text: text} }
