package gateway

import (
	"context"
	"encoding/xml"
	"fmt"
	"net"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

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
	lastNS atomic.Int64
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
	out *traceConn
	wmu sync.Mutex
	// jids are the read loop's parsed addresses (stanzaAddrs).
	jids jidCache
	// memo is the read loop's kept answers (memo.go); nil until the first
	// and after an idle release.
	memo atomic.Pointer[memoTable]
	// seen is the reads the read loop answered lately, of which only a
	// repeat has its answer kept (memo.go).
	seen memoSeen
}

func (s *session) touch()            { s.lastNS.Store(time.Now().UnixNano()) }
func (s *session) lastIn() time.Time { return time.Unix(0, s.lastNS.Load()) }

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
	var k memoKey
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

// replyResult answers req from the JID it was addressed to.
// A result over the wire size limit (wiresize.go) is answered
// <resource-constraint/> instead.
//
// A frozen answer (wire.Frozen, such as an endpoint's disco#info) is
// written as the bytes it was encoded to once (writeResultBytes). Any
// other payload is copied once, by measuring it, and encoded by mellium
// without being measured again: the envelope is bounded (iqEnvelope).
//
// onReadLoop is set by the read loop's fast path (fastpath.go): a frozen
// answer then leaves with the others of the same read (traceConn.writeLater).
func (s *session) replyResult(req *Request, payload xml.TokenReader, onReadLoop bool) {
	if raw, ok := wire.FrozenBytes(payload); ok && s.out != nil {
		if s.writeResultBytes(req, raw, onReadLoop) {
			return
		}
	}
	payload, ok := boundPayload(payload)
	if !ok {
		s.g.log.Warn("reply over the stanza size limit refused", "to", req.To.String(), "payload", req.Payload.Start.Name.Space+" "+req.Payload.Start.Name.Local, "limit", wire.MaxStanzaBytes)
		s.replyError(req, surface.ErrResourceConstraint)
		return
	}
	iq := stanza.IQ{ID: req.ID, Type: stanza.ResultIQ, From: req.To, To: req.From}
	_ = s.writeWith(iq.Wrap(payload), false)
}

// resultBufs hold the bytes of result IQs written by writeResultBytes.
var resultBufs = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

// writeResultBytes writes the result IQ of req around payload, the XML of
// a frozen answer, as bytes in one write. It reports false, having written
// nothing, when the stanza would be over wire.MaxStanzaBytes: the caller
// then answers as for any payload. The IQ takes the stream's default
// namespace (jabber:component:accept), as mellium's do.
//
// The envelope is built from bytes, not by a writer: this is the measured
// hot path (issue 26), and the one place allowed to (with the memo's
// replies, which it shares writeIQBytes and appendReplyAddrs with). Its
// values go through wire's one escaper; payload was written by
// wire.AppendXML.
func (s *session) writeResultBytes(req *Request, payload []byte, later bool) bool {
	var buf [256]byte
	return s.writeIQBytes(resultHead, req.ID, appendReplyAddrs(buf[:0], req), payload, later)
}

// resultHead and errorHead begin the IQs writeIQBytes writes.
const (
	resultHead = `<iq type="result" id="`
	errorHead  = `<iq type="error" id="`
)

// appendReplyAddrs appends the rest of an answer's start tag after its id
// to dst: `" from="` req's to, `" to="` req's from, `">`, escaped.
func appendReplyAddrs(dst []byte, req *Request) []byte {
	dst = append(dst, `" from="`...)
	dst = wire.AppendAttrValue(dst, req.To.String())
	dst = append(dst, `" to="`...)
	dst = wire.AppendAttrValue(dst, req.From.String())
	return append(dst, `">`...)
}

// writeIQBytes writes the IQ head, id escaped, addrs (appendReplyAddrs),
// payload and "</iq>" in one write (writeBytes; later as there). It
// reports false, having written nothing, when the stanza would be over
// wire.MaxStanzaBytes.
func (s *session) writeIQBytes(head, id string, addrs, payload []byte, later bool) bool {
	bp := resultBufs.Get().(*[]byte)
	b := append((*bp)[:0], head...)
	b = wire.AppendAttrValue(b, id)
	b = append(b, addrs...)
	b = append(b, payload...)
	b = append(b, "</iq>"...)
	ok := len(b) <= wire.MaxStanzaBytes
	if ok {
		_ = s.writeBytes(b, later)
	}
	if cap(b) <= 64<<10 {
		*bp = b
		resultBufs.Put(bp)
	}
	return ok
}

// replyError turns err into an error IQ: the one function that does, for
// every surface. A stanza.Error is sent as its type and condition, never
// its text (surface.Wire); anything else is logged and becomes
// internal-server-error, so that no internal detail reaches the wire.
func (s *session) replyError(req *Request, err error) {
	se, ok := surface.Wire(err)
	if !ok {
		s.g.log.Error("request failed", "to", req.To.String(), "payload", req.Payload.Start.Name.Space+" "+req.Payload.Start.Name.Local, "err", err)
		se = surface.ErrInternalServerError
	}
	iq := stanza.IQ{ID: req.ID, Type: stanza.ErrorIQ, From: req.To, To: req.From}
	s.send(iq.Wrap(se.TokenReader()))
}

// send writes one stanza and forgets the outcome: a failed write has
// already dropped the stream (write), and the request it answered is lost
// with it, as on any stream loss.
func (s *session) send(r xml.TokenReader) {
	_ = s.write(r)
}

// write writes one stanza on the stream, from any goroutine. Any write
// error that is not ours drops the stream: mellium's encoder keeps the first
// error it meets (a write that timed out on a stalled server, for one), so
// every later Send on this session would fail too, while the read loop and
// its inbound traffic would keep the keepalive from ever noticing.
// Dropping the connection ends Serve, fails every pending IQ and starts a
// reconnect. The errors that are ours come from measuring, before anything
// is written (a stanza too large, a payload reader that fails): the stream
// is intact.
//
// Stalled writes are bounded by the connection's per-write deadline
// (traceConn), not by a context: mellium arms a goroutine per Send that, if
// the context ends as Send returns, can set a past write deadline under the
// next Send and break the stream. So only the session's own context, which
// ends with the stream, is ever passed.
func (s *session) write(r xml.TokenReader) error { return s.writeWith(r, true) }

// writeWith is write; measure false skips the measuring for a stanza whose
// payload was measured already (replyResult), so that it is copied once.
func (s *session) writeWith(r xml.TokenReader, measure bool) error {
	if s.ctx.Err() != nil {
		// The stream is closing. A Send with an ended context would set a
		// past write deadline under the shutdown announcements.
		return ErrStreamLost
	}
	select {
	case <-s.broken:
		return ErrStreamLost
	default:
	}
	// One stanza at a time from its measuring on: measuring reads the
	// payload to its end, which runs an afterRead's callback (the dispatch
	// of an admitted task, route_task.go), so no stanza sent because of it
	// can overtake it.
	s.wmu.Lock()
	defer s.wmu.Unlock()
	// Bounded to wire.MaxStanzaBytes after escaping (wiresize.go): a
	// stanza over it is not sent at all, and the stream is intact.
	if measure {
		var err error
		if r, err = boundStanza(r); err != nil {
			return err
		}
	}
	// The measured stanza, a replay that cannot fail, is encoded once, by
	// mellium, into the stream's stanza buffer and leaves in one write
	// (sendWhole).
	return s.wrote(s.sendWhole(r))
}

// writeBytes writes one whole stanza given as bytes, in one write, ordered
// with every other stanza by s.wmu as write is. Between two of mellium's
// sends its encoder holds nothing unwritten (sendWhole flushes), so bytes
// written here stand between whole stanzas. later (the read loop only)
// queues them to leave before the connection's next read or write
// (traceConn.writeLater); b may be reused once it returns.
func (s *session) writeBytes(b []byte, later bool) error {
	if s.ctx.Err() != nil {
		return ErrStreamLost
	}
	select {
	case <-s.broken:
		return ErrStreamLost
	default:
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if later {
		return s.wrote(s.out.writeLater(b))
	}
	_, err := s.out.Write(b)
	return s.wrote(err)
}

// wrote handles the outcome of a write: an error drops the stream.
func (s *session) wrote(err error) error {
	if err == nil {
		return nil
	}
	if s.ctx.Err() != nil {
		return ErrStreamLost
	}
	s.fail(err)
	return err
}

// fail drops the stream after a write error: closing the connection ends
// Serve, and serve cleans up as after any stream loss.
func (s *session) fail(err error) {
	s.breakOnce.Do(func() {
		s.g.log.Warn("write failed; dropping the component stream", "err", err)
		s.brokenErr = fmt.Errorf("write: %w", err)
		close(s.broken)
		// Not connected from now on, so that whoever waits for a stream
		// (the task service's notifier) waits for the next one.
		s.g.setConnected(false)
		s.conn.Close()
	})
}

func sortStrings(s []string) { sort.Strings(s) }
