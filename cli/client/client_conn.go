package client

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"agentgw/agentclient"
	"agentgw/cli/cmdline"
	"agentgw/wire"

	"mellium.im/xmpp/jid"
)

// Timeouts and retry bounds of the client commands; the pause between
// retries is agentclient.RetryBackoff, doubling up to
// agentclient.MaxRetryBackoff.
const (
	// maxReconnects bounds the logins after the session was lost, per
	// command.
	maxReconnects = 5
)

// conn is what the client commands need of an XMPP session.
// *c2s.Client implements it.
type conn interface {
	// IQ sends an IQ get or set and returns the whole answer as XML text;
	// an error IQ is not a Go error.
	IQ(ctx context.Context, typ, to, payload string) (string, error)
	// IQElement is IQ with the payload and the answer as token streams.
	IQElement(ctx context.Context, typ, to string, payload xml.TokenReader) (wire.Element, error)
	// Incoming delivers message and presence stanzas, each read whole; it
	// is closed when the session ends.
	Incoming() <-chan wire.Element
	// Done is closed when the session has ended.
	Done() <-chan struct{}
	// JID is the full JID bound to the session.
	JID() jid.JID
	// Close ends the session.
	Close() error
}

// dialFunc logs in, once per call.
type dialFunc func(ctx context.Context) (conn, error)

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
	backoff := agentclient.RetryBackoff
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		dctx, cancel := context.WithTimeout(ctx, cmdline.LoginTimeout)
		var c conn
		c, err = s.dial(dctx)
		cancel()
		if err == nil {
			s.c = c
			return nil
		}
		if !agentclient.Sleep(ctx, backoff) {
			return ctx.Err()
		}
		backoff = min(2*backoff, agentclient.MaxRetryBackoff)
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

// IQ implements agentclient.Conn: it logs in again first when the
// session was lost, and records the answer in the trace.
func (s *session) IQ(ctx context.Context, typ, to, payload string) (string, error) {
	if s.lost() {
		if err := s.reconnect(ctx); err != nil {
			return "", err
		}
	}
	raw, err := s.c.IQ(ctx, typ, to, payload)
	if err == nil {
		s.record("iq", raw)
	}
	return raw, err
}

// recordElement is record for a stanza received as an element, written
// as XML text only when there is a trace.
func (s *session) recordElement(kind string, el wire.Element) {
	if s.trace == nil {
		return
	}
	b, err := wire.AppendXML(nil, el.Reader())
	if err != nil {
		return
	}
	s.record(kind, string(b))
}

// IQElement implements agentclient.ElementConn, as IQ does Conn: the
// client's IQs go as token streams, not written out as text and parsed
// back.
func (s *session) IQElement(ctx context.Context, typ, to string, payload xml.TokenReader) (wire.Element, error) {
	if s.lost() {
		if err := s.reconnect(ctx); err != nil {
			return wire.Element{}, err
		}
	}
	el, err := s.c.IQElement(ctx, typ, to, payload)
	if err == nil {
		s.recordElement("iq", el)
	}
	return el, err
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
