// Package agentclient is the typed client of the XMPP Agent Gateway
// protocol (ProtoXEP "XMPP Agent Gateway", client guide): discovery
// (XEP-0030 with XEP-0059 paging), XEP-0055 search, the endpoint's
// information, manifest and schema retrieval verified against their
// XEP-0300 hashes, pinning, invocation, lifecycle event tracking, task
// state and result recovery, cancellation and input.
//
// It sends and parses the wire values the gateway itself uses (packages
// api, task, wire, directory and search): no stanza is written by hand.
// An error answer is an *IQError, which unwraps to the stanza.Error.
// `agentgw client` and `agentgw mcp` both speak the protocol through it.
package agentclient

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"agentgw/internal/pause"
	"agentgw/surface"
	"agentgw/wire"

	"mellium.im/xmpp/stanza"
)

// Timeouts and retry bounds.
const (
	// IQTimeout bounds the wait for the answer to one IQ.
	IQTimeout = 30 * time.Second
	// InvokeAttemptTimeout bounds one <invoke/> attempt; a lost
	// acceptance is retried with the same request ID after it.
	InvokeAttemptTimeout = 15 * time.Second
	// MaxInvokeAttempts bounds the identical retries of one request.
	MaxInvokeAttempts = 8
	// RetryBackoff is the first pause between retries (of a request, or
	// of a login in `agentgw client`); it doubles up to MaxRetryBackoff.
	RetryBackoff    = 500 * time.Millisecond
	MaxRetryBackoff = 8 * time.Second
	// RequestIDPrefix starts generated request IDs; 128 random bits follow.
	RequestIDPrefix = "req-"
	// MaxRevisionRetries and RevisionRetryWindow bound how often cancel
	// and input retry after a stale expected-revision: at least
	// MaxRevisionRetries times, and for as long as RevisionRetryWindow.
	// A task that reports progress more often than a state read and the
	// request take (a loaded machine, a slow link) moves its revision on
	// between the two, again and again.
	MaxRevisionRetries  = 5
	RevisionRetryWindow = 30 * time.Second
)

// Conn is what the client needs of an XMPP session: an IQ get or set
// whose whole answer comes back as XML text (an error IQ is not a Go
// error; any Go error means the answer is unknown). *client.Client
// implements it.
type Conn interface {
	IQ(ctx context.Context, typ, to, payload string) (string, error)
}

// ElementConn is a Conn that also takes and returns token streams, so an
// IQ is not written out as text and parsed back on the way (*client.Client
// implements it). The client uses it when its Conn has it.
type ElementConn interface {
	Conn
	IQElement(ctx context.Context, typ, to string, payload xml.TokenReader) (wire.Element, error)
}

// Client speaks the protocol over a Conn. Its methods are safe for
// concurrent use when the Conn is.
type Client struct {
	Conn Conn
	// Notice, when set, hears about retries and recoveries; taskID is
	// empty when no task is concerned.
	Notice func(taskID, format string, args ...any)
}

// New returns a client over c.
func New(c Conn) *Client { return &Client{Conn: c} }

func (c *Client) notice(taskID, format string, args ...any) {
	if c.Notice != nil {
		c.Notice(taskID, format, args...)
	}
}

// IQError is an XMPP stanza error answered to an IQ: the target (or a
// server on the way) refused the request. Before acceptance it means no
// task was created. errors.As finds the stanza.Error inside.
type IQError struct {
	// From is the JID that was asked.
	From string
	// Err is the error as answered.
	Err stanza.Error
}

// TextValue is the error's human-readable text, untrusted.
func (e *IQError) TextValue() string {
	for _, t := range e.Err.Text {
		return t
	}
	return ""
}

func (e *IQError) Error() string {
	msg := e.From + " answered " + string(e.Err.Condition)
	if e.Err.Condition == stanza.ItemNotFound {
		// Nonexistent and unauthorized are the same answer on purpose;
		// say nothing that would distinguish them.
		return msg + " (it does not exist, or you are not allowed to use it)"
	}
	if t := e.TextValue(); t != "" {
		msg += ": " + SafeText(t, 200)
	}
	return msg
}

// Unwrap returns the stanza error.
func (e *IQError) Unwrap() error { return e.Err }

// Temporary reports whether the same request may simply be sent again:
// an error of type wait, such as remote-server-timeout when the gateway
// is not connected.
func (e *IQError) Temporary() bool { return e.Err.Type == stanza.Wait }

// Condition returns the condition of a stanza error answered, or "" if
// err is not one.
func Condition(err error) stanza.Condition {
	var ie *IQError
	if errors.As(err, &ie) {
		return ie.Err.Condition
	}
	return ""
}

// IsRefusal reports whether err is an error answer (as opposed to an
// unknown answer: a timeout or a lost session).
func IsRefusal(err error) bool {
	var ie *IQError
	return errors.As(err, &ie)
}

// parseIQError reads the <error/> of an error IQ into the gateway's own
// type (surface.Decode), so that errors.Is(err, surface.ErrItemNotFound)
// holds on the client as on the gateway.
func parseIQError(from string, el wire.Element) *IQError {
	return &IQError{From: from, Err: surface.Decode(el)}
}

// IQ sends the typed payload in an IQ bounded by timeout and returns the
// payload of a result (the zero Element if it has none). An error IQ is an
// *IQError; any other error means the answer is unknown.
func (c *Client) IQ(ctx context.Context, timeout time.Duration, typ, to string, payload xml.TokenReader) (wire.Element, error) {
	toks, err := collect(payload)
	if err != nil {
		return wire.Element{}, err
	}
	return c.rawIQ(ctx, timeout, typ, to, toks)
}

// collect reads a payload once so that it can be sent again unchanged.
func collect(r xml.TokenReader) (wire.Tokens, error) {
	var toks wire.Tokens
	for {
		tok, err := r.Token()
		if tok != nil {
			toks = append(toks, xml.CopyToken(tok))
		}
		if errors.Is(err, io.EOF) {
			return toks, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

func (c *Client) rawIQ(ctx context.Context, timeout time.Duration, typ, to string, payload wire.Tokens) (wire.Element, error) {
	ictx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var el wire.Element
	if ec, ok := c.Conn.(ElementConn); ok {
		var err error
		if el, err = ec.IQElement(ictx, typ, to, payload.Reader()); err != nil {
			return wire.Element{}, err
		}
	} else {
		text, err := wire.Marshal(payload.Reader())
		if err != nil {
			return wire.Element{}, err
		}
		raw, err := c.Conn.IQ(ictx, typ, to, text)
		if err != nil {
			return wire.Element{}, err
		}
		if el, err = wire.Parse(raw); err != nil {
			return wire.Element{}, fmt.Errorf("answer from %s: %w", to, err)
		}
	}
	if t, _ := el.AttrValue("type"); t == "error" {
		return wire.Element{}, parseIQError(to, el)
	}
	kids := el.Children()
	if len(kids) == 0 {
		return wire.Element{}, nil
	}
	return kids[0], nil
}

// get is an IQ get with the default timeout.
func (c *Client) get(ctx context.Context, to string, payload xml.TokenReader) (wire.Element, error) {
	return c.IQ(ctx, IQTimeout, "get", to, payload)
}

// SetRetrying sends an IQ set and retries the IDENTICAL payload while the
// answer is unknown (timeout, lost session: the target may have acted on
// it) or the error is temporary (type wait). Requests whose replay the
// target recognizes (<invoke/> by request ID, <cancel/> and
// <provide-input/> by their replay tuples) are safe to retry this way.
// Any other error answer is final. retried reports whether the request
// was sent more than once.
func (c *Client) SetRetrying(ctx context.Context, to string, payload xml.TokenReader, timeout time.Duration, what string) (el wire.Element, retried bool, err error) {
	toks, err := collect(payload)
	if err != nil {
		return wire.Element{}, false, err
	}
	backoff := RetryBackoff
	for attempt := 1; attempt <= MaxInvokeAttempts; attempt++ {
		el, err = c.rawIQ(ctx, timeout, "set", to, toks)
		if err == nil {
			return el, attempt > 1, nil
		}
		var ie *IQError
		if errors.As(err, &ie) && !ie.Temporary() {
			return wire.Element{}, attempt > 1, err
		}
		if ctx.Err() != nil {
			return wire.Element{}, attempt > 1, ctx.Err()
		}
		if attempt < MaxInvokeAttempts {
			c.notice("", "no answer for %s (%v); sending the identical request again", what, err)
			if !Sleep(ctx, backoff) {
				return wire.Element{}, true, ctx.Err()
			}
			backoff = min(2*backoff, MaxRetryBackoff)
		}
	}
	return wire.Element{}, true, err
}

// Sleep waits for d or until ctx ends; it reports whether d elapsed.
func Sleep(ctx context.Context, d time.Duration) bool { return pause.For(ctx, d) }

// SafeText makes untrusted text fit for one line of a terminal or an
// error: control and format characters become U+FFFD, and it is cut at
// max runes.
func SafeText(s string, max int) string {
	var b strings.Builder
	n := 0
	for _, r := range s {
		if n == max {
			b.WriteString("…")
			break
		}
		n++
		switch {
		case r < 0x20, r == 0x7f, 0x80 <= r && r < 0xa0,
			r == 0x200e, r == 0x200f, 0x202a <= r && r <= 0x202e, 0x2066 <= r && r <= 0x2069:
			b.WriteRune('\uFFFD')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
