package gateway

import (
	"context"
	"encoding/xml"
	"net"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"agentgw/gateway/internal/compstream"
	"agentgw/gateway/internal/hotpath"
	"agentgw/metrics"
	"agentgw/surface"
	"agentgw/wire"

	"mellium.im/xmpp"
	"mellium.im/xmpp/jid"
	"mellium.im/xmpp/stanza"
)

// session is one component stream.
type session struct {
	g    *Gateway
	sess *xmpp.Session
	ctx  context.Context
	// memCtx is ctx under db.MemoryOnly, for the fast path (fastpath.go),
	// made once per stream rather than once per stanza.
	memCtx context.Context
	conn   net.Conn
	// idle is when the last stanza came in, for the keepalive and the
	// idle release.
	idle compstream.Idle
	// broken is closed, with brokenErr set, once a write has failed
	// (session.write); the stream is then being dropped.
	broken    chan struct{}
	brokenErr error
	breakOnce sync.Once
	// quickQ feeds quickSender (see reject).
	quickQ chan func()
	// jobs feeds the warm workers (see dispatchIQ).
	jobs chan *Request
	// presence is the stream's presence state (presence.go).
	presence *presenceState
	// out is the stream's connection and wmu orders whole stanzas on it
	// (write.go).
	out *compstream.Conn
	wmu sync.Mutex
	// jids are the read loop's parsed addresses (stanzaAddrs).
	jids jidCache
	// memo is the read loop's kept answers (memo.go), of which only a
	// repeated read's answer is kept.
	memo hotpath.Memo[memoEntry]
}

func (s *session) touch()            { s.idle.Touch() }
func (s *session) lastIn() time.Time { return s.idle.Last() }

// idleRelease is how long the stream must be quiet before the gateway
// hands its free heap back to the operating system.
const idleRelease = time.Second

// releaseWhenIdle calls release once the stream has been quiet for
// quiet, and again after each later burst (compstream.Idle).
func (s *session) releaseWhenIdle(quiet time.Duration, release func()) {
	s.idle.ReleaseWhenIdle(s.ctx, quiet, release)
}

// Request is one inbound IQ get or set, as handlers see it: the one
// request type of every surface. route sets its Policy.
type Request = surface.Request

// nsComponent is the component stream's namespace (XEP-0114), the only
// one its stanzas are in.
const nsComponent = "jabber:component:accept"

// dispatch hands one inbound top-level element to its kind's dispatcher;
// a message or presence too large to read is dropped, an IQ too large gets
// its error. An element in another namespace (<iq xmlns='urn:x'/>) is not
// a stanza, and is ignored.
func (s *session) dispatch(el wire.Element, tooLarge bool) {
	if el.Start.Name.Space != nsComponent {
		return
	}
	switch el.Start.Name.Local {
	case "iq":
		s.dispatchIQ(el, tooLarge)
	case "message":
		if !tooLarge {
			s.dispatchMessage(el)
		}
	case "presence":
		if !tooLarge {
			s.dispatchPresence(el)
		}
	}
}

// stanzaAddrs parses the addressing of an inbound stanza. An empty 'from'
// is the domain itself, as it was under mellium's reader, which blanked a
// 'from' equal to our own domain; ours passes it on as sent.
// A stanza with no 'from' attribute at all is not ok: the server stamps
// every stanza it routes to a component, so one without is not from
// anyone we could authorize, answer or rate-limit. snd is the rate
// limits' key of from (senderOf), kept with the parsed address.
func (s *session) stanzaAddrs(start xml.StartElement) (from, to jid.JID, snd sender, id, typ string, ok bool) {
	sawFrom, ours := false, false
	for _, a := range start.Attr {
		if a.Name.Space != "" {
			continue
		}
		switch a.Name.Local {
		case "from":
			sawFrom = true
			var f *parsedJID
			if f, ok = s.jids.parse(s.g, a.Value); !ok {
				return
			}
			from, snd = f.j, f.snd
		case "to":
			var t *parsedJID
			if t, ok = s.jids.parse(s.g, a.Value); !ok {
				return
			}
			to, ours = t.j, t.ours
		case "id":
			id = a.Value
		case "type":
			typ = a.Value
		}
	}
	if !sawFrom {
		return from, to, snd, id, typ, false
	}
	if from.Equal(jid.JID{}) {
		from, snd = s.g.domain, sender{self: true}
	}
	// A stanza not addressed to a JID we host is dropped unanswered: any
	// reply would have to come from a JID we do not host, and the server
	// would drop the whole component stream for it (invalid-from).
	if !ours {
		return from, to, snd, id, typ, false
	}
	return from, to, snd, id, typ, true
}

// jidCache holds the JIDs the read loop parsed lately, by their text: the
// addresses of a stream repeat, and parsing one (PRECIS and IDNA
// normalization) was a seventh of the read loop's work under a flood.
// With each it keeps what the read loop works out from it on every
// stanza: the rate limits' key of it as a sender, and whether it is a JID
// we host; each of those is strings built from the JID's bytes, three to
// five allocations a stanza when the answer memo does not hold the read
// (docs/BENCHMARKS.md, "Spread reads"). Only valid JIDs are kept, at most
// maxCachedJIDs, after which it starts over. Only the read loop uses it
// (stanzaAddrs); the idle release drops the whole map (drop), which is
// why the map is behind an atomic pointer.
type jidCache struct {
	m atomic.Pointer[map[string]*parsedJID]
}

// parsedJID is one address of jidCache.
type parsedJID struct {
	j    jid.JID
	snd  sender // senderOf(j)
	ours bool   // j is not empty and its domain is the gateway's
}

const maxCachedJIDs = 1024

// emptyJID is the parse of an absent address ("").
var emptyJID = &parsedJID{}

func (c *jidCache) parse(g *Gateway, s string) (*parsedJID, bool) {
	m := c.m.Load()
	if m != nil {
		if p, ok := (*m)[s]; ok {
			return p, true
		}
	}
	if s == "" {
		return emptyJID, true
	}
	j, ok := parseJID(s)
	if !ok {
		return nil, false
	}
	p := &parsedJID{j: j, snd: g.senderOf(j), ours: j.Domainpart() == g.domain.Domainpart()}
	if m == nil || len(*m) >= maxCachedJIDs {
		fresh := make(map[string]*parsedJID)
		m = &fresh
		c.m.Store(m)
	}
	// s is a substring of the stanza's attribute text (stanzaread), which
	// would keep the rest of it alive: the key is a copy.
	(*m)[strings.Clone(s)] = p
	return p, true
}

// drop forgets every kept address (the idle release). The read loop may
// be filling the map it held; it is then no longer the cache's.
func (c *jidCache) drop() { c.m.Store(nil) }

func parseJID(s string) (jid.JID, bool) {
	if s == "" {
		return jid.JID{}, true
	}
	j, err := jid.Parse(s)
	return j, err == nil
}

func (s *session) dispatchIQ(el wire.Element, tooLarge bool) {
	// A repeated read is answered from the memo (memo.go) before anything
	// else is worked out.
	var k hotpath.Key
	memoable := false
	if !tooLarge {
		var id string
		if k, id, memoable = memoKeyOf(el); memoable && s.answerKept(k, id) {
			return
		}
	}
	from, to, snd, id, typ, ok := s.stanzaAddrs(el.Start)
	if !ok {
		s.g.log.Debug("dropping IQ with unusable addresses")
		return
	}
	switch stanza.IQType(typ) {
	case stanza.ResultIQ, stanza.ErrorIQ:
		// Answers are matched to what we sent, never answered themselves.
		if !tooLarge {
			s.g.pending.deliver(id, from, el)
		}
		return
	case stanza.GetIQ, stanza.SetIQ:
	default:
		return
	}
	req := &Request{ID: id, Type: stanza.IQType(typ), From: from, To: to}
	if tooLarge {
		s.reject(req, surface.ErrResourceConstraint)
		return
	}
	kids := el.Children()
	if len(kids) != 1 {
		// RFC 6120 §8.2.3: a get or set has exactly one payload.
		s.reject(req, surface.ErrBadRequest)
		return
	}
	req.Payload = kids[0]
	if !s.g.allow(snd, time.Now()) {
		s.reject(req, surface.ErrResourceConstraint)
		return
	}
	if s.answerFromMemory(req, snd, k, memoable) {
		return
	}
	// A warm worker if one is idle: its stack has already grown to what a
	// store-backed handler needs, which a fresh goroutine pays for on every
	// request. Otherwise an extra goroutine, up to the worker bound.
	select {
	case s.jobs <- req:
		return
	default:
	}
	select {
	case s.g.workers <- struct{}{}:
	default:
		s.reject(req, surface.ErrResourceConstraint)
		return
	}
	go func() {
		defer func() { <-s.g.workers }()
		s.handle(req)
	}()
}

// warmWorkers long-lived goroutines per session take IQs first; past them
// up to maxWorkers more run on goroutines of their own.
const warmWorkers = 16

// warmWorker handles requests from the read loop until the session ends.
func (s *session) warmWorker() {
	for {
		select {
		case <-s.ctx.Done():
			return
		case req := <-s.jobs:
			s.handle(req)
		}
	}
}

// handle routes one request and answers it.
func (s *session) handle(req *Request) {
	defer func() {
		// A bug in one handler must not take the gateway down.
		if r := recover(); r != nil {
			s.g.log.Error("handler panic", "to", req.To.String(), "payload", req.Payload.Start.Name.Space+" "+req.Payload.Start.Name.Local, "panic", r)
			s.replyError(req, surface.ErrInternalServerError)
		}
	}()
	start := time.Now()
	payload, err := s.g.route(s.ctx, req)
	metrics.IQ(req.Payload.Start.Name.Space, err, time.Since(start))
	if err != nil {
		s.replyError(req, err)
		return
	}
	s.replyResult(req, payload, false)
	if a, ok := payload.(*afterRead); ok {
		// Written or not, the reply is done with: a reply whose write
		// failed (the stream is being dropped) still releases what waits
		// for it, such as the dispatch of an admitted task.
		a.done()
	}
}

// quickReplies bounds the replies the read loop hands off without a worker:
// rejections and message bounces. Past it they are dropped: a peer flooding
// us faster than we can write does not get every refusal.
const quickReplies = 256

// reject answers req with err without doing any work for it. The read loop
// never writes itself; a full queue drops the reply.
// Only the addressing and the payload's name are kept for the reply: the
// queued closure must not hold a rejected request's payload (up to
// maxStanzaBytes) while it waits.
func (s *session) reject(req *Request, err error) {
	metrics.IQ(req.Payload.Start.Name.Space, err, -1)
	slim := &Request{ID: req.ID, Type: req.Type, From: req.From, To: req.To}
	slim.Payload.Start.Name = req.Payload.Start.Name
	s.quick(func() { s.replyError(slim, err) })
}

// quick queues a small write for the session's quick sender.
func (s *session) quick(f func()) {
	select {
	case s.quickQ <- f:
	default:
		s.g.log.Debug("dropping a quick reply: queue full")
	}
}

// quickSender writes queued quick replies until the session ends.
func (s *session) quickSender() {
	for {
		select {
		case <-s.ctx.Done():
			return
		case f := <-s.quickQ:
			f()
		}
	}
}

// dispatchMessage hands the chat service (chat.go) what it takes, and
// bounces the rest: the bounce is the same for every endpoint, hidden,
// visible or nonexistent, and for a sender who may not chat with it.
func (s *session) dispatchMessage(el wire.Element) {
	from, to, snd, id, typ, ok := s.stanzaAddrs(el.Start)
	if !ok || from.Equal(s.g.domain) {
		return
	}
	if typ == string(stanza.ErrorMessage) {
		// Never answered; it may tell chat that a message bounced.
		s.g.chatBounced(from, to, el)
		return
	}
	if typ == string(stanza.HeadlineMessage) {
		// RFC 6121 §8.5.2: headlines to nobody are silently dropped.
		return
	}
	if !s.g.allow(snd, time.Now()) {
		// Past the sender's or its domain's rate: no bounce.
		return
	}
	if s.g.chatTakes(from, to, typ, el) {
		return
	}
	s.quick(func() { s.send(messageBounce(from, to, id)) })
}

func sortStrings(s []string) { sort.Strings(s) }
