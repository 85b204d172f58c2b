// Package c2s is a small XMPP client (c2s) for tests and the
// `agentgw client` command: it logs in, sends IQs and stanzas as token
// streams, and returns what comes back as wire.Element. IQ and SendRaw are
// text forms for tests and tools that hold XML as text; they parse and
// write with wire (ParseFragment, AppendXML).
//
// Plaintext login is allowed only to a loopback IP address; anything else
// uses STARTTLS (or direct TLS) with certificate verification.
package c2s

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"mellium.im/sasl"
	"mellium.im/xmlstream"
	"mellium.im/xmpp"
	"mellium.im/xmpp/jid"
	"mellium.im/xmpp/stanza"

	"agentgw/wire"
)

// DefaultBuffer is the default capacity of the Incoming channel.
const DefaultBuffer = 256

const nsPing = "urn:xmpp:ping"

// maxResponseTokens and maxResponseBytes bound the IQ response read into
// memory for a waiter; they are far above what any server relays (its own
// stanza size limit is smaller) and only stop a runaway stream.
const (
	maxResponseTokens = 1 << 20
	maxResponseBytes  = 64 << 20
)

// Option configures Dial.
type Option func(*config)

type config struct {
	tls          *tls.Config
	directTLS    bool
	buffer       int
	rosterPushes bool
}

// nsRoster is the RFC 6121 roster namespace.
const nsRoster = "jabber:iq:roster"

// WithRosterPushes makes the client answer RFC 6121 roster pushes (an IQ
// set with a jabber:iq:roster query from the account itself or from no one)
// with an empty result, and deliver each push on Incoming as the <iq/>
// element. Without it, a push is answered service-unavailable.
func WithRosterPushes() Option {
	return func(c *config) { c.rosterPushes = true }
}

// WithTLSConfig makes Dial use STARTTLS with cfg even on loopback, where it
// would otherwise log in in plaintext. If cfg.ServerName is empty, the JID's
// domain is used. Use it to trust a private CA (RootCAs).
func WithTLSConfig(cfg *tls.Config) Option {
	return func(c *config) { c.tls = cfg }
}

// WithDirectTLS makes Dial open TLS immediately (XEP-0368 style) instead of
// using STARTTLS. The TLS configuration is the one of WithTLSConfig, or the
// system defaults.
func WithDirectTLS() Option {
	return func(c *config) { c.directTLS = true }
}

// WithBuffer sets the capacity of the Incoming channel (default
// DefaultBuffer).
func WithBuffer(n int) Option {
	return func(c *config) { c.buffer = n }
}

// Client is a logged-in XMPP client session. Its methods are safe for
// concurrent use.
type Client struct {
	session *xmpp.Session
	conn    net.Conn
	in      chan wire.Element
	dropped atomic.Int64
	done    chan struct{}
	err     error // why Serve ended; valid after done is closed

	closeOnce sync.Once

	// pending maps the ids of IQs sent by IQ to their waiters.
	mu      sync.Mutex
	pending map[string]chan wire.Element

	// pushes is WithRosterPushes.
	pushes bool
}

// writeTimeout bounds each write on the connection.
const writeTimeout = 30 * time.Second

// deadlineConn gives every write its own deadline. Writes are bounded this
// way rather than by a Send context: mellium arms a goroutine per Send that,
// if the context ends as Send returns, can set a past write deadline under
// the next write and break the stream.
type deadlineConn struct{ net.Conn }

func (c deadlineConn) Write(b []byte) (int, error) {
	if err := c.Conn.SetWriteDeadline(time.Now().Add(writeTimeout)); err != nil {
		return 0, err
	}
	return c.Conn.Write(b)
}

// Dial logs in as j (its resource, if any, is ignored: the server assigns
// one) with password at addr (host:port) and binds a resource.
//
// If addr's host is a loopback IP and neither WithTLSConfig nor
// WithDirectTLS is given, the session is plaintext, SASL PLAIN included: for
// tests against local servers only. For any other address Dial uses STARTTLS
// (or direct TLS) and verifies the server's certificate for j's domain; it
// fails if the server does not offer STARTTLS.
//
// Dial does not send initial presence nor fetch the roster; send them with
// SendRaw and IQ if the test needs presence or messages to the bare JID.
func Dial(ctx context.Context, addr string, j jid.JID, password string, opts ...Option) (*Client, error) {
	cfg := config{buffer: DefaultBuffer}
	for _, o := range opts {
		o(&cfg)
	}
	if j.Localpart() == "" {
		return nil, fmt.Errorf("dial: jid %q has no localpart", j)
	}
	plaintext, err := plaintextAllowed(addr, cfg)
	if err != nil {
		return nil, fmt.Errorf("dial: %w", err)
	}

	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if cfg.tls != nil {
		tlsCfg = cfg.tls.Clone()
	}
	if tlsCfg.ServerName == "" {
		tlsCfg.ServerName = j.Domain().String()
	}

	var d net.Dialer
	raw, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("dial: %w", err)
	}
	var conn net.Conn = deadlineConn{raw}
	var state xmpp.SessionState
	// mellium refuses SASL before the session is Secure. Declaring a
	// plaintext loopback connection Secure is what lets it log in there.
	features := []xmpp.StreamFeature{
		xmpp.SASL("", password, sasl.ScramSha256, sasl.ScramSha1, sasl.Plain),
		xmpp.BindResource(),
	}
	switch {
	case plaintext:
		state = xmpp.Secure
	case cfg.directTLS:
		tc := tls.Client(conn, tlsCfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			conn.Close()
			return nil, fmt.Errorf("dial: tls: %w", err)
		}
		conn = tc
		state = xmpp.Secure
	default:
		features = append([]xmpp.StreamFeature{xmpp.StartTLS(tlsCfg)}, features...)
	}
	// Negotiation reads and writes the connection directly: make ctx
	// interrupt it by expiring the connection's deadline.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	// Bind with the bare JID: mellium v0.22's bind request writes an empty
	// <resource/> when the origin JID carries one.
	session, err := xmpp.NewSession(ctx, j.Domain(), j.Bare(), conn, state,
		xmpp.NewNegotiator(func(*xmpp.Session, *xmpp.StreamConfig) xmpp.StreamConfig {
			return xmpp.StreamConfig{Features: features}
		}))
	if !stop() && err == nil {
		err = ctx.Err() // the deadline is spent: the session is unusable
	}
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("dial: login as %s: %w", j.Bare(), err)
	}
	if !plaintext && session.State()&xmpp.Secure == 0 {
		session.Close()
		conn.Close()
		return nil, errors.New("dial: server did not negotiate TLS")
	}
	if cfg.buffer < 0 {
		cfg.buffer = 0
	}
	c := &Client{
		session: session,
		conn:    conn,
		in:      make(chan wire.Element, cfg.buffer),
		done:    make(chan struct{}),
		pending: map[string]chan wire.Element{},
		pushes:  cfg.rosterPushes,
	}
	go func() {
		c.err = session.Serve(xmpp.HandlerFunc(c.handle))
		close(c.in)
		close(c.done)
	}()
	return c, nil
}

// plaintextAllowed reports whether Dial logs in without TLS: only when addr's
// host is a loopback IP address (not a name such as "localhost", which a
// resolver could map elsewhere) and no TLS option was given.
func plaintextAllowed(addr string, cfg config) (bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, fmt.Errorf("address: %w", err)
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback() && cfg.tls == nil && !cfg.directTLS, nil
}

// JID returns the full JID bound to the session.
func (c *Client) JID() jid.JID { return c.session.LocalAddr() }

// Incoming delivers the presence and message stanzas received, each read
// whole (its top element in jabber:client; wire.Marshal or wire.AppendXML
// write it as text). The channel is buffered
// (see WithBuffer); when it is full, further stanzas are dropped (counted by
// Dropped) rather than stalling the session, which would also block IQ
// responses. It is closed when the session ends.
func (c *Client) Incoming() <-chan wire.Element { return c.in }

// Dropped returns how many stanzas were dropped because Incoming was full.
func (c *Client) Dropped() int64 { return c.dropped.Load() }

// Done is closed when the session has ended (Close, or the server closed
// the stream or the connection).
func (c *Client) Done() <-chan struct{} { return c.done }

// Err returns why the session ended, once Done is closed; nil before.
func (c *Client) Err() error {
	select {
	case <-c.done:
		return c.err
	default:
		return nil
	}
}

// handle runs in the Serve loop for every top-level stanza. It must not send
// IQs and wait (their responses are read by this same loop).
func (c *Client) handle(t xmlstream.TokenReadEncoder, start *xml.StartElement) error {
	if spoofedAddressing(start) {
		// Only the server's own from/to/id/type count; a stanza that also
		// carries a namespaced copy of one could be read as from someone
		// else by a reader that does not tell them apart. Dropped unread.
		return nil
	}
	switch start.Name.Local {
	case "message", "presence":
		el, err := wire.ReadElement(t, *start, maxResponseTokens, maxResponseBytes)
		if err != nil {
			return err
		}
		select {
		case c.in <- el:
		default:
			c.dropped.Add(1)
		}
		return nil
	case "iq":
		// Answers to our IQs go to their waiters; pings are answered;
		// mellium answers other get/set IQs with service-unavailable once
		// the handler returns.
		iq, err := stanza.NewIQ(*start)
		if err != nil {
			return nil
		}
		if iq.Type == stanza.ResultIQ || iq.Type == stanza.ErrorIQ {
			c.mu.Lock()
			ch, ok := c.pending[iq.ID]
			delete(c.pending, iq.ID)
			c.mu.Unlock()
			if !ok {
				return nil
			}
			el, err := wire.ReadElement(t, *start, maxResponseTokens, maxResponseBytes)
			if err != nil {
				return err
			}
			ch <- el
			return nil
		}
		if iq.Type == stanza.SetIQ && c.pushes && (iq.From.String() == "" || iq.From.String() == c.JID().Bare().String()) {
			return c.rosterPush(t, start, iq)
		}
		if iq.Type != stanza.GetIQ {
			return nil
		}
		tok, err := t.Token()
		if err != nil {
			return nil
		}
		if el, ok := tok.(xml.StartElement); ok && el.Name == (xml.Name{Space: nsPing, Local: "ping"}) {
			iq.XMLName = xml.Name{Local: "iq"}
			_, err := xmlstream.Copy(t, iq.Result(nil))
			return err
		}
	}
	return nil
}

// rosterPush answers and delivers a roster push (WithRosterPushes); any
// other IQ set is left for mellium to refuse.
func (c *Client) rosterPush(t xmlstream.TokenReadEncoder, start *xml.StartElement, iq stanza.IQ) error {
	el, err := wire.ReadElement(t, *start, maxResponseTokens, maxResponseBytes)
	if err != nil {
		return err
	}
	var child xml.Name
	if kids := el.Children(); len(kids) > 0 {
		child = kids[0].Start.Name
	}
	if child != (xml.Name{Space: nsRoster, Local: "query"}) {
		iq.XMLName = xml.Name{Local: "iq"}
		_, err := xmlstream.Copy(t, iq.Error(stanza.Error{Type: stanza.Cancel, Condition: stanza.ServiceUnavailable}))
		return err
	}
	select {
	case c.in <- el:
	default:
		c.dropped.Add(1)
	}
	iq.XMLName = xml.Name{Local: "iq"}
	_, err = xmlstream.Copy(t, iq.Result(nil))
	return err
}

// IQ sends an IQ of type typ ("get" or "set") to the JID to (empty: the
// user's own server) with payload (XML text, typically one element with its
// own xmlns; may be empty) and a fresh random id, and waits for the response
// until ctx ends. It returns the whole response IQ (result or error, <error/>
// child included) as XML text written by wire.AppendXML; an error IQ is not
// a Go error. It is the text form of IQElement, for tests and tools that
// hold XML as text.
func (c *Client) IQ(ctx context.Context, typ, to, payload string) (string, error) {
	toks, err := wire.ParseFragment(payload)
	if err != nil {
		return "", fmt.Errorf("iq: payload: %w", err)
	}
	el, err := c.IQElement(ctx, typ, to, toks.Reader())
	if err != nil {
		return "", err
	}
	b, err := wire.AppendXML(nil, el.Reader())
	if err != nil {
		return "", fmt.Errorf("iq %s to %s: response: %w", typ, to, err)
	}
	return string(b), nil
}

// IQElement sends an IQ of type typ ("get" or "set") to the JID to (empty:
// the user's own server) with payload (a token stream, typically one element
// with its own namespace; nil for none) and a fresh random id, and waits for
// the response until ctx ends. It returns the whole response IQ (result or
// error, <error/> child included); an error IQ is not a Go error.
func (c *Client) IQElement(ctx context.Context, typ, to string, payload xml.TokenReader) (wire.Element, error) {
	if typ != string(stanza.GetIQ) && typ != string(stanza.SetIQ) {
		return wire.Element{}, fmt.Errorf("iq: type must be get or set, not %q", typ)
	}
	var toJID jid.JID
	if to != "" {
		var err error
		if toJID, err = jid.Parse(to); err != nil {
			return wire.Element{}, fmt.Errorf("iq: to: %w", err)
		}
	}
	if err := ctx.Err(); err != nil {
		return wire.Element{}, fmt.Errorf("iq %s to %s: %w", typ, to, err)
	}
	if payload == nil {
		payload = wire.Tokens(nil).Reader()
	}
	iq := stanza.IQ{ID: randomID(), To: toJID, Type: stanza.IQType(typ)}
	ch := make(chan wire.Element, 1)
	c.mu.Lock()
	c.pending[iq.ID] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.pending, iq.ID)
		c.mu.Unlock()
	}()
	// The write is bounded by deadlineConn, not by ctx (see deadlineConn).
	if err := c.session.Send(context.Background(), iq.Wrap(payload)); err != nil {
		return wire.Element{}, fmt.Errorf("iq %s to %s: %w", typ, to, err)
	}
	select {
	case el := <-ch:
		return el, nil
	case <-c.done:
		return wire.Element{}, fmt.Errorf("iq %s to %s: session ended", typ, to)
	case <-ctx.Done():
		return wire.Element{}, fmt.Errorf("iq %s to %s: %w", typ, to, ctx.Err())
	}
}

// SendRaw sends one stanza given as XML text, for example
// `<message to="bob@remote.example" type="chat"><body>hi</body></message>`.
// A top-level element without xmlns gets the stream's (jabber:client). For
// IQs whose response you want, use IQ instead: responses to IQs sent here are
// not delivered anywhere. It is the text form of Send.
func (c *Client) SendRaw(ctx context.Context, stanzaXML string) error {
	toks, err := wire.ParseFragment(stanzaXML)
	if err != nil {
		return fmt.Errorf("send: %w", err)
	}
	if len(toks) == 0 {
		return errors.New("send: empty stanza")
	}
	if end, ok := toks[len(toks)-1].(xml.EndElement); !ok || firstEndIndex(toks) != len(toks)-1 || end.Name.Local == "" {
		return errors.New("send: want exactly one element")
	}
	return c.Send(ctx, toks.Reader())
}

// Send sends one stanza given as a token stream (for example built with
// wire.Elem). A top-level element without a namespace gets the stream's
// (jabber:client). Responses to IQs sent here are not delivered anywhere:
// use IQElement for those.
func (c *Client) Send(ctx context.Context, stanza xml.TokenReader) error {
	// The write is bounded by deadlineConn, not by ctx (see deadlineConn).
	if err := c.session.Send(context.Background(), stanza); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	return nil
}

// firstEndIndex returns the index of the token that closes the first element.
func firstEndIndex(toks []xml.Token) int {
	depth := 0
	for i, t := range toks {
		switch t.(type) {
		case xml.StartElement:
			depth++
		case xml.EndElement:
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

// Close ends the stream, waits briefly for the server to end its own, and
// closes the connection.
func (c *Client) Close() error {
	var err error
	c.closeOnce.Do(func() {
		select {
		case <-c.done: // the server already ended the session
		default:
			err = c.session.Close()
		}
		select {
		case <-c.done:
		case <-time.After(2 * time.Second):
		}
		if cerr := c.conn.Close(); cerr != nil && !errors.Is(cerr, net.ErrClosed) && err == nil {
			err = cerr
		}
		<-c.done
	})
	if err != nil {
		return fmt.Errorf("close: %w", err)
	}
	return nil
}

// randomID returns a random stanza id.
func randomID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// spoofedAddressing reports whether start carries a from, to, id or type
// attribute in a namespace: the server stamps the plain ones, and a sender
// can add prefixed copies that the server passes through.
func spoofedAddressing(start *xml.StartElement) bool {
	for _, a := range start.Attr {
		if a.Name.Space == "" || a.Name.Space == "xmlns" {
			continue
		}
		switch a.Name.Local {
		case "from", "to", "id", "type":
			return true
		}
	}
	return false
}
