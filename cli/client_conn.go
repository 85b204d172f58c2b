package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"agentgw/wire"

	"mellium.im/xmpp/jid"
)

// Timeouts and retry bounds of the client commands.
const (
	// loginTimeout bounds each login, first or after a lost session.
	loginTimeout = 30 * time.Second
	// iqTimeout bounds the wait for the answer to one IQ.
	iqTimeout = 30 * time.Second
	// invokeAttemptTimeout bounds one <invoke/> attempt; a lost
	// acceptance is retried with the same request ID after it.
	invokeAttemptTimeout = 15 * time.Second
	// maxInvokeAttempts bounds the identical retries of one <invoke/>.
	maxInvokeAttempts = 8
	// retryBackoff is the first pause between retries; it doubles up to
	// maxRetryBackoff.
	retryBackoff    = 500 * time.Millisecond
	maxRetryBackoff = 8 * time.Second
	// maxReconnects bounds the logins after the session was lost, per
	// command.
	maxReconnects = 5
)

// conn is what the client commands need of an XMPP session.
// *client.Client implements it.
type conn interface {
	// IQ sends an IQ get or set and returns the whole answer as XML text;
	// an error IQ is not a Go error.
	IQ(ctx context.Context, typ, to, payload string) (string, error)
	// Incoming delivers message and presence stanzas as XML text; it is
	// closed when the session ends.
	Incoming() <-chan string
	// Done is closed when the session has ended.
	Done() <-chan struct{}
	// JID is the full JID bound to the session.
	JID() jid.JID
	// Close ends the session.
	Close() error
}

// dialFunc logs in, once per call.
type dialFunc func(ctx context.Context) (conn, error)

// iqError is an XMPP stanza error answered to an IQ: the target (or a
// server on the way) refused the request. Before acceptance it means no
// task was created.
type iqError struct {
	// From is the JID that was asked.
	From string
	// Type is the error type (cancel, modify, auth, wait, continue).
	Type string
	// Condition is the defined condition, such as item-not-found.
	Condition string
	// Text is the optional human-readable text, untrusted.
	Text string
}

func (e *iqError) Error() string {
	msg := e.From + " answered " + e.Condition
	if e.Condition == "item-not-found" {
		// Nonexistent and unauthorized are the same answer on purpose;
		// say nothing that would distinguish them.
		return msg + " (it does not exist, or you are not allowed to use it)"
	}
	if e.Text != "" {
		msg += ": " + safeText(e.Text, 200)
	}
	return msg
}

// temporary reports whether the same request may simply be sent again:
// an error of type wait, such as remote-server-timeout when the gateway
// is not connected.
func (e *iqError) temporary() bool { return e.Type == "wait" }

// parseIQError reads the <error/> of an error IQ.
func parseIQError(from string, el wire.Element) *iqError {
	e := &iqError{From: from, Type: "cancel", Condition: "undefined-condition"}
	for _, c := range el.Children() {
		if c.Start.Name.Local != "error" {
			continue
		}
		if t, ok := c.AttrValue("type"); ok {
			e.Type = t
		}
		for _, cond := range c.Children() {
			if cond.Start.Name.Space != nsStanzas {
				continue
			}
			if cond.Start.Name.Local == "text" {
				e.Text = cond.Text()
			} else {
				e.Condition = cond.Start.Name.Local
			}
		}
	}
	return e
}

// nsStanzas is the namespace of stanza error conditions (RFC 6120).
const nsStanzas = "urn:ietf:params:xml:ns:xmpp-stanzas"

// session is the current XMPP session of a command, with what it needs to
// log in again after losing it, and an optional trace of what it receives.
type session struct {
	dial       dialFunc
	c          conn
	reconnects int

	traceMu sync.Mutex
	trace   io.Writer // nil: no trace
}

// reconnect replaces a session that ended with a new login.
func (s *session) reconnect(ctx context.Context) error {
	if s.reconnects >= maxReconnects {
		return errors.New("the XMPP session was lost too many times")
	}
	s.reconnects++
	if s.c != nil {
		s.c.Close()
	}
	backoff := retryBackoff
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		dctx, cancel := context.WithTimeout(ctx, loginTimeout)
		var c conn
		c, err = s.dial(dctx)
		cancel()
		if err == nil {
			s.c = c
			return nil
		}
		if !sleep(ctx, backoff) {
			return ctx.Err()
		}
		backoff = min(2*backoff, maxRetryBackoff)
	}
	return fmt.Errorf("log in again: %w", err)
}

// lost reports whether the session has ended.
func (s *session) lost() bool {
	select {
	case <-s.c.Done():
		return true
	default:
		return false
	}
}

// iq sends an IQ bounded by timeout and returns the payload of a result
// (the zero Element if it has none). An error IQ is an *iqError; any other
// error means the answer is unknown (timeout, lost session).
func (s *session) iq(ctx context.Context, timeout time.Duration, typ, to, payload string) (wire.Element, error) {
	if s.lost() {
		if err := s.reconnect(ctx); err != nil {
			return wire.Element{}, err
		}
	}
	ictx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	raw, err := s.c.IQ(ictx, typ, to, payload)
	if err != nil {
		return wire.Element{}, err
	}
	s.record("iq", raw)
	el, err := wire.Parse(raw)
	if err != nil {
		return wire.Element{}, fmt.Errorf("answer from %s: %w", to, err)
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

// get is iq with type get and the default timeout.
func (s *session) get(ctx context.Context, to, payload string) (wire.Element, error) {
	return s.iq(ctx, iqTimeout, "get", to, payload)
}

// traceLine is one line of the -trace file.
type traceLine struct {
	Time string `json:"time"`
	Kind string `json:"kind"` // "iq" (an answer) or "stanza" (message or presence)
	XML  string `json:"xml"`
}

// record appends a received stanza to the trace, one JSON object a line
// (stanzas may contain newlines).
func (s *session) record(kind, raw string) {
	if s.trace == nil {
		return
	}
	b, err := json.Marshal(traceLine{Time: time.Now().UTC().Format(time.RFC3339Nano), Kind: kind, XML: raw})
	if err != nil {
		return
	}
	s.traceMu.Lock()
	defer s.traceMu.Unlock()
	s.trace.Write(append(b, '\n'))
}

// sleep waits for d or until ctx ends; it reports whether d elapsed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// safeText makes untrusted text fit for one line of a terminal: control
// and format characters become U+FFFD, and it is cut at max runes.
func safeText(s string, max int) string {
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
