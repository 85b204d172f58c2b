package account

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"agentgw/agentclient"
	"agentgw/c2s"
	"agentgw/wire"

	"mellium.im/xmpp/jid"
	"mellium.im/xmpp/stanza"
)

// Timing of the account's stream.
const (
	// reconnectMin and reconnectMax bound the backoff between logins; it
	// doubles from reconnectMin with ±25% jitter.
	reconnectMin = time.Second
	reconnectMax = 30 * time.Second
	// stableAfter resets the backoff: a stream that lived this long was
	// not a failing login.
	stableAfter = time.Minute
	// loginTimeout bounds one login (connect, TLS, SASL, bind, roster).
	loginTimeout = 30 * time.Second
	// iqTimeout bounds a roster IQ of a tool.
	iqTimeout = 15 * time.Second
	// DefaultPingInterval and DefaultPingTimeout: after that long the
	// account pings its server (XEP-0199), and a ping unanswered in time
	// drops the stream, which reconnects: a dead TCP connection (a laptop
	// that slept, a NAT that forgot) is noticed.
	DefaultPingInterval = 60 * time.Second
	DefaultPingTimeout  = 15 * time.Second
	// incomingBuffer is the client's stanza buffer: a burst past it while
	// the session is busy would be dropped (and logged); the session hands
	// messages to the writer (ingest.go) and never waits on the disk.
	incomingBuffer = 4096
	// maxPendingStrangers bounds the subscription requests kept from JIDs
	// not in the roster (each is a contact and an xmpp: resource): past
	// it the oldest is forgotten (it can ask again).
	maxPendingStrangers = 1000
	// maxResourcesPerContact bounds the presences kept of one contact
	// (one per available resource): past it the oldest is forgotten.
	maxResourcesPerContact = 32
)

// ErrNotConnected is returned while the account's stream is down.
var ErrNotConnected = errors.New("not connected to the XMPP server (reconnecting); try again shortly")

// nsRoster is the RFC 6121 roster namespace.
const nsRoster = "jabber:iq:roster"

// nsPing is XEP-0199's namespace.
const nsPing = "urn:xmpp:ping"

// Contact is what the account knows of one roster contact, or of someone
// who asked for a subscription: the body of its xmpp: resource.
type Contact struct {
	BareJid string   `json:"BareJid"`
	Name    string   `json:"Name,omitempty"`
	Groups  []string `json:"Groups"`
	// InRoster is false for someone who asked for a subscription and is
	// not (yet) in the roster.
	InRoster bool `json:"InRoster"`
	// Subscription is the roster's none, to, from or both.
	Subscription string `json:"Subscription"`
	// PendingOut is the roster's ask="subscribe": our request awaits them.
	PendingOut bool `json:"PendingOut"`
	// PendingIn is true when they asked for our presence and nobody has
	// answered yet.
	PendingIn bool `json:"PendingIn"`
	// Presence is the last presence of each of their available resources.
	Presence []Presence `json:"Presence"`

	pendingSeq uint64 // orders the pending requests of strangers
}

// Presence is the last presence received from one resource.
type Presence struct {
	Resource  string `json:"Resource"`
	Available bool   `json:"Available"`
	Show      string `json:"Show,omitempty"`
	Status    string `json:"Status,omitempty"`
	Priority  int    `json:"Priority"`
}

// Events receives what changes in an account, from its session goroutine.
// The MCP server turns them into resource notifications.
type Events interface {
	// ContactChanged: the roster item, presence or pending request of bare
	// changed (and maybe whether it exists).
	ContactChanged(bare string)
	// MessageQueued: a message was stored; dropped lists the IDs removed
	// past queue_max.
	MessageQueued(st Stored, dropped []string)
}

// Options configure an Account.
type Options struct {
	// JID is the account's bare JID; Password its password.
	JID      jid.JID
	Password string
	// Server is host:port, or empty: the domain's SRV record, then port
	// 5222.
	Server string
	// Queue is the [mcp] table's bounds of the queue.
	Queue
	// AcceptFrom is whose messages are queued: AcceptSubscribed (also
	// when empty), AcceptRoster or AcceptAnyone. Message errors always
	// pass it.
	AcceptFrom string
	Store      *Store
	Log        *slog.Logger
	// DialOptions are passed to c2s.Dial (tests: a private CA).
	DialOptions []c2s.Option
	// PingInterval and PingTimeout: zero takes DefaultPingInterval and
	// DefaultPingTimeout.
	PingInterval, PingTimeout time.Duration
}

// Queue bounds an account's queue; app makes it from config.MCPQueue by
// conversion. QueueMax bounds the queued messages, QueueMaxBytes their
// bytes as stored (0: no byte bound; the newest message is always kept).
// SenderRateLimit (messages a second; 0: no limit) and SenderRateBurst
// bound the messages one sender (bare JID) may have queued.
type Queue struct {
	QueueMax        int
	QueueMaxBytes   int64
	SenderRateLimit float64
	SenderRateBurst int
}

// Account is one XMPP account's session: it logs in, fetches the roster,
// sends initial presence, answers roster pushes, queues received messages,
// and reconnects with capped, jittered backoff.
type Account struct {
	opts   Options
	events Events
	// taskEvents receives the lifecycle messages of agent tasks
	// (SetTaskEvents).
	taskEvents func(el wire.Element, taskID string, size int)

	mu       sync.Mutex
	cl       *c2s.Client // nil while down
	contacts map[string]*Contact
	seq      uint64        // the last pendingSeq given
	arrived  chan struct{} // closed and replaced when a message is queued

	in *ingest // the filter and writer of received messages (ingest.go)
}

// New returns an account that is not connected yet (see Run).
func New(opts Options) *Account {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.PingInterval <= 0 {
		opts.PingInterval = DefaultPingInterval
	}
	if opts.PingTimeout <= 0 {
		opts.PingTimeout = DefaultPingTimeout
	}
	if opts.AcceptFrom == "" {
		opts.AcceptFrom = AcceptSubscribed
	}
	return &Account{opts: opts, contacts: map[string]*Contact{}, arrived: make(chan struct{}), in: newIngest()}
}

// JID returns the account's bare JID.
func (a *Account) JID() jid.JID { return a.opts.JID }

// SetEvents sets the receiver of change events; call it before Run.
func (a *Account) SetEvents(e Events) { a.events = e }

// SetTaskEvents sets the receiver of the lifecycle messages of agent
// tasks (mcpface's agents): parsed and as received, with the task ID of
// their first event, and their size as received. They are never
// queued as messages. Call it before Run.
func (a *Account) SetTaskEvents(f func(el wire.Element, taskID string, size int)) { a.taskEvents = f }

// Run keeps the account logged in until ctx ends.
func (a *Account) Run(ctx context.Context) {
	// The writer commits the accepted messages; Run returns once it has
	// committed the last.
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.writer(ctx)
	}()
	defer func() { <-done }()
	backoff := reconnectMin
	for {
		start := time.Now()
		err := a.session(ctx)
		if ctx.Err() != nil {
			return
		}
		if time.Since(start) > stableAfter {
			backoff = reconnectMin
		}
		wait := time.Duration(float64(backoff) * (0.75 + rand.Float64()/2))
		a.opts.Log.Warn("xmpp stream down", "account", a.opts.JID.String(), "err", err, "retry_in", wait.Round(time.Millisecond))
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		backoff = min(backoff*2, reconnectMax)
	}
}

// session logs in once and serves the stream until it ends.
func (a *Account) session(ctx context.Context) error {
	lctx, cancel := context.WithTimeout(ctx, loginTimeout)
	defer cancel()
	addr, err := a.address(lctx)
	if err != nil {
		return err
	}
	opts := append([]c2s.Option{c2s.WithRosterPushes(), c2s.WithBuffer(incomingBuffer)}, a.opts.DialOptions...)
	cl, err := c2s.Dial(lctx, addr, a.opts.JID, a.opts.Password, opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	// RFC 6121: fetch the roster before initial presence (Prosody delivers
	// subscribed/unsubscribed only to resources that did).
	el, err := cl.IQElement(lctx, "get", "", wire.Elem(xml.Name{Space: nsRoster, Local: "query"}, nil))
	if err != nil {
		return fmt.Errorf("roster: %w", err)
	}
	if attr(el, "type") != "result" {
		return fmt.Errorf("roster: the server answered %s", attr(el, "type"))
	}
	a.loadRoster(el)
	if err := cl.Send(lctx, wire.Elem(xml.Name{Local: "presence"}, nil)); err != nil {
		return fmt.Errorf("initial presence: %w", err)
	}
	a.mu.Lock()
	a.cl = cl
	a.mu.Unlock()
	a.opts.Log.Info("xmpp stream up", "account", a.opts.JID.String(), "jid", cl.JID().String())
	defer func() {
		a.mu.Lock()
		a.cl = nil
		// Presence is stale once the stream is gone.
		var changed []string
		for bare, c := range a.contacts {
			if len(c.Presence) > 0 {
				c.Presence = nil
				changed = append(changed, bare)
			}
		}
		a.mu.Unlock()
		for _, bare := range changed {
			a.changed(bare)
		}
	}()
	go a.keepalive(ctx, cl)
	var dropped int64
	for {
		select {
		case el, ok := <-cl.Incoming():
			if !ok {
				if err := cl.Err(); err != nil {
					return err
				}
				return errors.New("stream closed by the server")
			}
			a.handle(ctx, el)
			if n := cl.Dropped(); n > dropped {
				a.opts.Log.Error("stanzas dropped: the session fell behind", "account", a.opts.JID.String(), "dropped", n)
				dropped = n
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// keepalive pings the server every PingInterval until the stream ends, and
// closes a stream whose ping goes unanswered for PingTimeout.
func (a *Account) keepalive(ctx context.Context, cl *c2s.Client) {
	t := time.NewTicker(a.opts.PingInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-cl.Done():
			return
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, a.opts.PingTimeout)
		_, err := cl.IQElement(pctx, "get", a.opts.JID.Domainpart(), wire.Elem(xml.Name{Space: nsPing, Local: "ping"}, nil))
		timedOut := pctx.Err() != nil && ctx.Err() == nil
		cancel()
		if timedOut {
			a.opts.Log.Warn("xmpp ping unanswered: dropping the stream", "account", a.opts.JID.String(), "timeout", a.opts.PingTimeout)
			cl.Close()
			return
		}
		if err != nil {
			return // the stream ended
		}
	}
}

// address is opts.Server, or the domain's _xmpp-client._tcp SRV target,
// or the domain on port 5222.
func (a *Account) address(ctx context.Context) (string, error) {
	if a.opts.Server != "" {
		return a.opts.Server, nil
	}
	domain := a.opts.JID.Domainpart()
	if _, srvs, err := net.DefaultResolver.LookupSRV(ctx, "xmpp-client", "tcp", domain); err == nil && len(srvs) > 0 && srvs[0].Target != "." {
		return net.JoinHostPort(strings.TrimSuffix(srvs[0].Target, "."), strconv.Itoa(int(srvs[0].Port))), nil
	}
	return net.JoinHostPort(domain, "5222"), nil
}

// connected returns the live client, or ErrNotConnected.
func (a *Account) connected() (*c2s.Client, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cl == nil {
		return nil, ErrNotConnected
	}
	return a.cl, nil
}

// Connected reports whether the stream is up.
func (a *Account) Connected() bool {
	_, err := a.connected()
	return err == nil
}

func (a *Account) changed(bare string) {
	if a.events != nil {
		a.events.ContactChanged(bare)
	}
}

// loadRoster replaces the roster with a roster result, keeping pending
// requests, and reports every contact that changed.
func (a *Account) loadRoster(iq wire.Element) {
	q, _ := iq.Child(xml.Name{Space: nsRoster, Local: "query"})
	a.mu.Lock()
	old := a.contacts
	a.contacts = map[string]*Contact{}
	touched := map[string]bool{}
	for bare, c := range old {
		touched[bare] = true
		if c.PendingIn {
			a.contacts[bare] = &Contact{BareJid: bare, PendingIn: true, Subscription: "none", Groups: []string{}, pendingSeq: c.pendingSeq}
		}
	}
	for _, item := range q.Children() {
		if bare := a.applyItemLocked(item); bare != "" {
			touched[bare] = true
		}
	}
	a.mu.Unlock()
	for bare := range touched {
		a.changed(bare)
	}
}

// applyItemLocked applies one roster <item/> and returns its bare JID.
func (a *Account) applyItemLocked(item wire.Element) string {
	if item.Start.Name.Local != "item" {
		return ""
	}
	j, err := jid.Parse(attr(item, "jid"))
	if err != nil {
		return ""
	}
	bare := j.Bare().String()
	c := a.contacts[bare]
	if attr(item, "subscription") == "remove" {
		if c != nil && c.PendingIn {
			*c = Contact{BareJid: bare, PendingIn: true, Subscription: "none", Groups: []string{}, pendingSeq: c.pendingSeq}
		} else {
			delete(a.contacts, bare)
		}
		return bare
	}
	if c == nil {
		c = &Contact{BareJid: bare}
		a.contacts[bare] = c
	}
	c.InRoster = true
	c.Name = attr(item, "name")
	c.Subscription = attr(item, "subscription")
	if c.Subscription == "" {
		c.Subscription = "none"
	}
	c.PendingOut = attr(item, "ask") == "subscribe"
	c.Groups = []string{}
	for _, g := range item.Children() {
		if g.Start.Name.Local == "group" {
			c.Groups = append(c.Groups, g.Text())
		}
	}
	slices.Sort(c.Groups)
	// Someone we share presence with has no request pending any more.
	if c.Subscription == "from" || c.Subscription == "both" {
		c.PendingIn = false
	}
	return bare
}

// receivedSize is the length of el as XML text (wire.AppendXML's, the
// length it was received as up to quoting), what the bounds of queued
// messages and early events count.
func receivedSize(el wire.Element) int {
	b, err := wire.AppendXML(nil, el.Reader())
	if err != nil {
		return 0
	}
	return len(b)
}

// handle processes one received stanza.
func (a *Account) handle(ctx context.Context, el wire.Element) {
	switch el.Start.Name.Local {
	case "iq": // a roster push, already answered
		q, _ := el.Child(xml.Name{Space: nsRoster, Local: "query"})
		a.mu.Lock()
		var touched []string
		for _, item := range q.Children() {
			if bare := a.applyItemLocked(item); bare != "" {
				touched = append(touched, bare)
			}
		}
		a.mu.Unlock()
		for _, bare := range touched {
			a.changed(bare)
		}
	case "presence":
		a.presence(el)
	case "message":
		if id, ok := agentclient.IsLifecycleMessage(el); ok {
			if a.taskEvents != nil {
				a.taskEvents(el, id, receivedSize(el))
			}
			return
		}
		m, ok := parseMessage(el)
		if !ok {
			return
		}
		// Filtered here, committed by the writer: the session never
		// waits on the disk.
		a.offer(m, receivedSize(el))
	}
}

// presence records a presence stanza from a contact.
func (a *Account) presence(el wire.Element) {
	from, err := jid.Parse(attr(el, "from"))
	if err != nil {
		return
	}
	bare := from.Bare().String()
	if bare == a.opts.JID.String() {
		return // our own resources
	}
	typ := attr(el, "type")
	a.mu.Lock()
	c := a.contacts[bare]
	switch typ {
	case "", "unavailable":
		if c == nil {
			a.mu.Unlock()
			return // presence only from contacts is recorded
		}
		p := Presence{Resource: from.Resourcepart(), Available: typ == ""}
		for _, ch := range el.Children() {
			switch ch.Start.Name.Local {
			case "show":
				p.Show = ch.Text()
			case "status":
				if p.Status == "" {
					p.Status = ch.Text()
				}
			case "priority":
				p.Priority, _ = strconv.Atoi(strings.TrimSpace(ch.Text()))
			}
		}
		i := slices.IndexFunc(c.Presence, func(q Presence) bool { return q.Resource == p.Resource })
		switch {
		case !p.Available:
			// Gone: nothing of that resource is kept.
			if i >= 0 {
				c.Presence = slices.Delete(c.Presence, i, i+1)
			}
		case i >= 0:
			c.Presence[i] = p
		default:
			if len(c.Presence) >= maxResourcesPerContact {
				c.Presence = slices.Delete(c.Presence, 0, len(c.Presence)-maxResourcesPerContact+1)
			}
			c.Presence = append(c.Presence, p)
		}
	case "subscribe":
		if c == nil {
			c = &Contact{BareJid: bare, Subscription: "none", Groups: []string{}}
			a.contacts[bare] = c
		}
		if !c.PendingIn && !c.InRoster {
			a.seq++
			c.pendingSeq, c.PendingIn = a.seq, true
			if dropped := a.dropOldestStrangerLocked(); dropped != "" {
				defer a.changed(dropped)
			}
		}
		c.PendingIn = true
	case "unsubscribe":
		if c == nil {
			a.mu.Unlock()
			return
		}
		c.PendingIn = false
	case "subscribed", "unsubscribed":
		// The roster push that follows carries the change; record nothing.
		if c == nil {
			a.mu.Unlock()
			return
		}
	default:
		a.mu.Unlock()
		return
	}
	a.mu.Unlock()
	a.changed(bare)
}

// dropOldestStrangerLocked forgets the oldest pending request of a JID not
// in the roster when there are more than maxPendingStrangers, and returns
// its bare JID ("" if none was dropped).
func (a *Account) dropOldestStrangerLocked() string {
	n, oldest := 0, (*Contact)(nil)
	for _, c := range a.contacts {
		if c.PendingIn && !c.InRoster {
			n++
			if oldest == nil || c.pendingSeq < oldest.pendingSeq {
				oldest = c
			}
		}
	}
	if n <= maxPendingStrangers || oldest == nil {
		return ""
	}
	delete(a.contacts, oldest.BareJid)
	return oldest.BareJid
}

// Contacts returns a copy of every known contact, sorted by bare JID.
func (a *Account) Contacts() []Contact {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]Contact, 0, len(a.contacts))
	for _, c := range a.contacts {
		out = append(out, copyContact(c))
	}
	slices.SortFunc(out, func(x, y Contact) int { return strings.Compare(x.BareJid, y.BareJid) })
	return out
}

// Contact returns a copy of the contact bare.
func (a *Account) Contact(bare string) (Contact, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	c, ok := a.contacts[bare]
	if !ok {
		return Contact{}, false
	}
	return copyContact(c), true
}

func copyContact(c *Contact) Contact {
	out := *c
	out.Groups = slices.Clone(c.Groups)
	if out.Groups == nil {
		out.Groups = []string{}
	}
	out.Presence = slices.Clone(c.Presence)
	if out.Presence == nil {
		out.Presence = []Presence{}
	}
	return out
}

// Arrived returns a channel closed when the next message is queued.
func (a *Account) Arrived() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.arrived
}

// send sends one stanza.
func (a *Account) send(ctx context.Context, stanza xml.TokenReader) error {
	cl, err := a.connected()
	if err != nil {
		return err
	}
	if err := cl.Send(ctx, stanza); err != nil {
		return fmt.Errorf("%w (%v)", ErrNotConnected, err)
	}
	return nil
}

// iq sends a roster IQ set and returns nil on a result, or the server's
// error.
func (a *Account) rosterSet(ctx context.Context, item xml.TokenReader) error {
	cl, err := a.connected()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, iqTimeout)
	defer cancel()
	el, err := cl.IQElement(ctx, "set", "", wire.Elem(xml.Name{Space: nsRoster, Local: "query"}, nil, item))
	if err != nil {
		if ctx.Err() != nil {
			return errors.New("the XMPP server did not answer in time")
		}
		return fmt.Errorf("%w (%v)", ErrNotConnected, err)
	}
	if attr(el, "type") == "result" {
		return nil
	}
	return stanzaError(el)
}

// stanzaError describes the <error/> of an error stanza.
func stanzaError(el wire.Element) error {
	e, ok := el.Child(xml.Name{Space: nsClient, Local: "error"})
	if !ok {
		return errors.New("the XMPP server answered with an error")
	}
	var m MessageResponse
	parseError(e, &m)
	cond := ""
	if se := decodeError(e); se.Condition != stanza.UndefinedCondition || hasCondition(e) {
		cond = string(se.Condition)
	}
	if m.ErrorMessageText != "" && m.ErrorMessageText != cond {
		return fmt.Errorf("the XMPP server refused: %s (%s)", cond, m.ErrorMessageText)
	}
	return fmt.Errorf("the XMPP server refused: %s", cond)
}

// answerSubscription accepts (subscribed) or declines (unsubscribed) the
// pending request of bare.
func (a *Account) answerSubscription(ctx context.Context, bare string, accept bool) error {
	typ := "unsubscribed"
	if accept {
		typ = "subscribed"
	}
	if err := a.send(ctx, presence(typ, bare)); err != nil {
		return err
	}
	a.mu.Lock()
	if c := a.contacts[bare]; c != nil {
		c.PendingIn = false
		if !c.InRoster {
			delete(a.contacts, bare)
		}
	}
	a.mu.Unlock()
	a.changed(bare)
	return nil
}

// IQ implements agentclient.Conn over the account's current stream;
// while it is down the answer is unknown (ErrNotConnected), which a
// retrying request treats as lost.
func (a *Account) IQ(ctx context.Context, typ, to, payload string) (string, error) {
	cl, err := a.connected()
	if err != nil {
		return "", err
	}
	return cl.IQ(ctx, typ, to, payload)
}

// IQElement implements agentclient.ElementConn: the same IQ as token
// streams, not written out as text and parsed back.
func (a *Account) IQElement(ctx context.Context, typ, to string, payload xml.TokenReader) (wire.Element, error) {
	cl, err := a.connected()
	if err != nil {
		return wire.Element{}, err
	}
	return cl.IQElement(ctx, typ, to, payload)
}
