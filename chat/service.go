package chat

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"agentgw/db"
	"agentgw/internal/instance"
	"agentgw/policy"
	"agentgw/wire"

	"mellium.im/xmpp/jid"
	"mellium.im/xmpp/stanza"
)

// Limits of the chat service, documented in docs/limits.md.
const (
	// maxPending bounds the messages taken from the read loop and not
	// yet handled; past it a message is dropped (and logged).
	maxPending = 256
	// workers bound the messages handled at once (answerers running).
	workers = 4
	// outboxBatch is how many outbox messages one pass sends.
	outboxBatch = 64
	// retryDelay is the wait before the outbox is tried again after a
	// failed send (the stream is down).
	retryDelay = time.Second
	// MaxBody bounds the text of one message an endpoint sends, in bytes:
	// a longer answer is split into several messages (splitAnswers).
	MaxBody = 16 << 10
	// maxAnswers bounds the messages one answer may send, its parts
	// included; what does not fit ends with CutMark.
	maxAnswers = 8
	// outboxPoll is how often the outbox is looked at for messages
	// another process put there (agentgw check-blocking's probes), when
	// the database has changed since.
	outboxPoll = time.Second
	// outboxRecheck is every how many polls the outbox is looked at even
	// if the database did not change, for claims that lapsed.
	outboxRecheck = 5
)

// Answerer produces the answer of an endpoint to one message. It sees an
// opaque conversation handle, never a JID. It returns the texts to send,
// one message each.
type Answerer interface {
	Answer(ctx context.Context, endpoint string, c Conversation) ([]string, error)
}

// Conversation is what an answerer sees of one inbound message.
type Conversation struct {
	// Handle names the conversation (endpoint and peer) opaquely; it is
	// stable across messages and restarts.
	Handle string
	// Text is the message's body, Lang its xml:lang.
	Text, Lang string
}

// Endpoint is how a chatting endpoint answers: exactly one of Answerer
// and Queue.
type Endpoint struct {
	Answerer Answerer
	// Queue keeps messages in the endpoint's durable queue for MCP
	// clients.
	Queue bool
}

// Options configures a Service.
type Options struct {
	Store *db.Store
	// Send writes one stanza on the component stream; Ready waits for a
	// stream to be up.
	Send  func(xml.TokenReader) error
	Ready func(context.Context) error
	// Bounce answers a message (from, to, its id) the service does not
	// take after all, because its endpoint is not active, exactly as the
	// gateway answers one to a nonexistent JID. Nil: no answer.
	Bounce func(from, to jid.JID, id string) error
	// Endpoints are the endpoints whose chat is not off, by bare JID.
	Endpoints map[string]Endpoint
	// Consent is how long a message lets an endpoint write back.
	Consent time.Duration
	// QueueMax bounds the queue of each queue endpoint; past it the
	// oldest message is dropped (and logged).
	QueueMax int
	Log      *slog.Logger
	// Instance names this gateway among several on one store: the holder
	// of its outbox claims (db.ChatClaimOutbox). "" makes a fresh one.
	Instance string
}

// Service is the chat side of the gateway: it takes the messages the
// gateway's read loop hands it (Take, Bounced), answers them, and sends
// what the endpoints write through the durable outbox.
type Service struct {
	opts Options
	log  *slog.Logger
	jobs chan func(context.Context)
	wake chan struct{}

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// queued holds, per queue endpoint, a channel closed at the next
	// change of its queue (QueueChanged).
	qmu    sync.Mutex
	queued map[string]chan struct{}
}

// New builds a Service; Start runs it.
func New(opts Options) *Service {
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.Instance == "" {
		opts.Instance = instance.New()
	}
	return &Service{opts: opts, log: log, jobs: make(chan func(context.Context), maxPending), wake: make(chan struct{}, 1),
		queued: map[string]chan struct{}{}}
}

// Start runs the workers and the outbox sender until Close. Messages left
// in the outbox by a previous run are sent again, with their origin-ids.
func (s *Service) Start(ctx context.Context) {
	s.ctx, s.cancel = context.WithCancel(ctx)
	for range workers {
		s.wg.Add(1)
		go s.work()
	}
	s.wg.Add(1)
	go s.sendOutbox()
	s.kick()
}

// Close stops the service and waits for its goroutines.
func (s *Service) Close() {
	if s.cancel != nil {
		s.cancel()
	}
	s.wg.Wait()
	if s.cancel != nil {
		// What this gateway claimed and did not send is for the next
		// one (or the next start) to send now.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.opts.Store.ChatReleaseClaims(ctx, s.opts.Instance); err != nil {
			s.log.Warn("chat: outbox claims not released; other gateways send the messages once they lapse", "err", err)
		}
	}
}

// releaseGone drops the outbox claims of gateways of this machine whose
// process is gone (a crash), so that their messages are sent without
// waiting for the claims to lapse.
func (s *Service) releaseGone() {
	holders, err := s.opts.Store.ChatClaimHolders(s.ctx)
	if err != nil {
		return
	}
	for _, h := range holders {
		if h != s.opts.Instance && instance.Gone(h) {
			if err := s.opts.Store.ChatReleaseClaims(s.ctx, h); err != nil && s.ctx.Err() == nil {
				s.log.Warn("chat: outbox claims of a gone gateway not released", "err", err)
			}
		}
	}
}

// Chats reports whether endpoint answers messages from requester: the
// endpoint's chat is on and a [[policy.chat]] grant names both. Anything
// else is answered as a nonexistent endpoint is.
func (s *Service) Chats(pol *policy.Policy, requester jid.JID, endpoint string) bool {
	_, ok := s.opts.Endpoints[endpoint]
	return ok && pol.CanChat(requester, endpoint)
}

// Features are the disco#info features of endpoint for requester: the
// profile's extensions where Chats, none otherwise.
func (s *Service) Features(pol *policy.Policy, requester jid.JID, endpoint string) []string {
	if !s.Chats(pol, requester, endpoint) {
		return nil
	}
	return Features
}

// Take is handed a message of type chat or normal on the read loop, from
// a sender within its rates; it reports whether the profile takes it. If
// not, the gateway bounces it as it bounces a message to a nonexistent
// endpoint. Take never blocks: the work is done by the service's workers.
func (s *Service) Take(pol *policy.Policy, from, to jid.JID, el wire.Element) bool {
	endpoint := to.Bare().String()
	if to.Resourcepart() != "" || !s.Chats(pol, from, endpoint) {
		return false
	}
	in := ParseInbound(from, to, el)
	ep := s.opts.Endpoints[endpoint]
	s.queue(func(ctx context.Context) { s.inbound(ctx, ep, in) })
	return true
}

// Bounced is handed an error message to an endpoint on the read loop. A
// bounce that means blocked (IsBlockBounce) from a sender who may chat
// with the endpoint stops the endpoint writing to that sender until it
// writes again.
func (s *Service) Bounced(pol *policy.Policy, from, to jid.JID, el wire.Element) {
	endpoint := to.Bare().String()
	if !s.Chats(pol, from, endpoint) || !IsBlockBounce(el) {
		return
	}
	peer := from.Bare().String()
	s.queue(func(ctx context.Context) {
		dropped, err := s.opts.Store.ChatBounced(ctx, endpoint, peer)
		if errors.Is(err, db.ErrChatInactive) {
			// Nothing is kept for an endpoint that is not active.
			return
		}
		if err != nil {
			s.log.Error("chat: record a bounce", "endpoint", endpoint, "err", err)
			return
		}
		s.log.Info("chat: a message bounced; not writing to the peer until it writes again", "endpoint", endpoint, "peer", peer, "dropped", dropped)
	})
}

func (s *Service) queue(job func(context.Context)) {
	select {
	case s.jobs <- job:
	default:
		s.log.Warn("chat: too many messages pending; one dropped", "limit", maxPending)
	}
}

func (s *Service) work() {
	defer s.wg.Done()
	for {
		select {
		case <-s.ctx.Done():
			return
		case job := <-s.jobs:
			job(s.ctx)
		}
	}
}

// inbound handles one message: consent is recorded, the receipt sent,
// and the answerer's answer put in the outbox.
func (s *Service) inbound(ctx context.Context, ep Endpoint, in Inbound) {
	endpoint := in.To.Bare().String()
	peer := in.From.Bare().String()
	if in.Body == "" {
		// A chat state, a receipt or a marker of the peer's client: no
		// consent, no answer; but to an endpoint that is not active, the
		// bounce a nonexistent JID gets.
		if _, err := s.opts.Store.ActiveSummary(ctx, endpoint); errors.Is(err, db.ErrNotFound) {
			s.bounce(in)
		}
		return
	}
	if ep.Queue {
		s.enqueue(ctx, in)
		return
	}
	handle, err := s.opts.Store.ChatInbound(ctx, endpoint, peer)
	if errors.Is(err, db.ErrChatInactive) {
		s.bounce(in)
		return
	}
	if err != nil {
		s.log.Error("chat: record an inbound message", "endpoint", endpoint, "err", err)
		return
	}
	if ep.Answerer == nil {
		return
	}
	if in.Receipt && in.ID != "" {
		// Handed to the answerer: XEP-0184's "received".
		_ = s.opts.Send(Receipt(in.To, in.From, NewID(), in.ID))
	}
	chatting := in.Type == string(stanza.ChatMessage)
	if chatting {
		_ = s.opts.Send(ChatState(in.To, in.From, in.Type, NewID(), "composing"))
	}
	texts, err := ep.Answerer.Answer(ctx, endpoint, Conversation{Handle: handle, Text: in.Body, Lang: in.Lang})
	if err != nil || len(texts) == 0 {
		if err != nil {
			s.log.Warn("chat: the answerer failed", "endpoint", endpoint, "err", err)
		}
		if chatting {
			_ = s.opts.Send(ChatState(in.To, in.From, in.Type, NewID(), "active"))
		}
		return
	}
	replyID := in.ID
	if replyID == "" {
		replyID = in.OriginID
	}
	for _, text := range splitAnswers(texts) {
		m := db.ChatOut{Endpoint: endpoint, Recipient: in.From.String(), Peer: peer, OriginID: NewID(),
			Type: in.Type, Body: text, Lang: in.Lang, ReplyTo: in.From.String(), ReplyID: replyID}
		if _, err := s.opts.Store.ChatSend(ctx, m, s.opts.Consent); err != nil {
			s.log.Warn("chat: answer not sent", "endpoint", endpoint, "err", err)
			return
		}
	}
	s.kick()
}

// bounce answers in as the gateway answers a message to a nonexistent
// JID: its endpoint is not active (deactivated or removed since the
// configuration named it), and such an endpoint takes no chats. Take had
// no way to know without asking the store, which the read loop does not.
func (s *Service) bounce(in Inbound) {
	if s.opts.Bounce == nil {
		return
	}
	if err := s.opts.Bounce(in.From, in.To, in.ID); err != nil {
		s.log.Debug("chat: bounce not sent", "endpoint", in.To.Bare().String(), "err", err)
	}
}

// enqueue keeps a message for the endpoint's MCP clients and, once it is
// committed, answers a receipt request.
func (s *Service) enqueue(ctx context.Context, in Inbound) {
	endpoint := in.To.Bare().String()
	m := db.ChatIn{ID: NewID(), Endpoint: endpoint, Sender: in.From.String(), Recipient: in.To.String(), Type: in.Type,
		Body: in.Body, Subject: in.Subject, Thread: in.Thread, Parent: in.Parent, Lang: in.Lang, StanzaID: in.ID}
	_, dropped, err := s.opts.Store.ChatEnqueue(ctx, m, in.From.Bare().String(), max(s.opts.QueueMax, 1))
	if errors.Is(err, db.ErrChatInactive) {
		s.bounce(in)
		return
	}
	if err != nil {
		s.log.Error("chat: queue a message", "endpoint", endpoint, "err", err)
		return
	}
	if len(dropped) > 0 {
		s.log.Warn("chat: queue full; the oldest messages were dropped", "endpoint", endpoint, "dropped", len(dropped), "queue_max", s.opts.QueueMax)
	}
	if in.Receipt && in.ID != "" {
		// Durably queued: XEP-0184's "received".
		_ = s.opts.Send(Receipt(in.To, in.From, NewID(), in.ID))
	}
	s.QueueTouched(endpoint)
}

// QueueChanged returns a channel closed at the next change of the
// endpoint's queue.
func (s *Service) QueueChanged(endpoint string) <-chan struct{} {
	s.qmu.Lock()
	defer s.qmu.Unlock()
	ch, ok := s.queued[endpoint]
	if !ok {
		ch = make(chan struct{})
		s.queued[endpoint] = ch
	}
	return ch
}

// QueueTouched wakes whoever waits on QueueChanged(endpoint).
func (s *Service) QueueTouched(endpoint string) {
	s.qmu.Lock()
	defer s.qmu.Unlock()
	if ch, ok := s.queued[endpoint]; ok {
		close(ch)
		delete(s.queued, endpoint)
	}
}

// Unsubscribed ends peer's subscription to endpoint's presence and tells
// peer (RFC 6121 unsubscribed), for DeclinePresenceSubscription. The
// gateway's presence code sees the change in the store.
func (s *Service) Unsubscribed(ctx context.Context, endpoint string, peer jid.JID) (bool, error) {
	removed, err := s.opts.Store.Unsubscribe(ctx, endpoint, peer.Bare().String())
	if err != nil || !removed {
		return removed, err
	}
	if from, err := jid.Parse(endpoint); err == nil {
		_ = s.opts.Send(stanza.Presence{From: from, To: peer.Bare(), Type: stanza.UnsubscribedPresence}.Wrap(nil))
	}
	return true, nil
}

// Store is the store the service keeps its state in.
func (s *Service) Store() *db.Store { return s.opts.Store }

// Consent is the consent window.
func (s *Service) Consent() time.Duration { return s.opts.Consent }

// Send puts a message from endpoint to the bare JID to in the outbox, if
// the endpoint may write to it: to may chat with the endpoint, wrote to it
// within the consent window or is subscribed to its presence, and no
// bounce has blocked it since. The error says why not.
func (s *Service) Send(ctx context.Context, pol *policy.Policy, endpoint string, to jid.JID, body, lang string) (originID string, err error) {
	to = to.Bare()
	if !s.Chats(pol, to, endpoint) {
		return "", ErrNotGranted
	}
	m := db.ChatOut{Endpoint: endpoint, Recipient: to.String(), Peer: to.String(), OriginID: NewID(),
		Type: string(stanza.ChatMessage), Body: clipMarked(body), Lang: lang}
	if _, err := s.opts.Store.ChatSend(ctx, m, s.opts.Consent); err != nil {
		return "", err
	}
	s.kick()
	return m.OriginID, nil
}

// ErrNotGranted refuses a message to someone no [[policy.chat]] grant
// lets chat with the endpoint.
var ErrNotGranted = errors.New("no chat grant names the recipient and this endpoint")

func (s *Service) kick() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// sendOutbox sends the outbox, oldest first, whenever something is added
// (here, or by another process: the database changed) and after a failed
// send once a stream is up again. A message is removed
// once written; one written and not removed when the process dies is sent
// again with the same origin-id (at least once).
func (s *Service) sendOutbox() {
	defer s.wg.Done()
	tick := time.NewTicker(outboxPoll)
	defer tick.Stop()
	var (
		seen  int64
		ticks int
	)
	s.releaseGone()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-s.wake:
		case <-tick.C:
			ticks++
			// Every outboxRecheck ticks, look again whatever changed:
			// another gateway's claims may have lapsed, or its process
			// gone.
			if ticks%outboxRecheck == 0 {
				s.releaseGone()
				break
			}
			// Cheap when nothing changed: PRAGMA data_version.
			v, err := s.opts.Store.DataVersion(s.ctx)
			if err != nil || v == seen {
				continue
			}
			seen = v
		}
		for s.ctx.Err() == nil {
			more, err := s.sendBatch(s.ctx)
			if err != nil {
				if s.ctx.Err() == nil {
					s.log.Debug("chat: outbox waits for the stream", "err", err)
				}
				select {
				case <-s.ctx.Done():
					return
				case <-time.After(retryDelay):
				}
				continue
			}
			if !more {
				break
			}
		}
	}
}

func (s *Service) sendBatch(ctx context.Context) (more bool, err error) {
	if err := s.opts.Ready(ctx); err != nil {
		return false, err
	}
	batch, err := s.opts.Store.ChatClaimOutbox(ctx, s.opts.Instance, outboxBatch)
	if err != nil {
		return false, err
	}
	for _, m := range batch {
		// A bounce may have arrived since the message was queued.
		if err := s.opts.Store.ChatConsent(ctx, m.Endpoint, m.Peer, s.opts.Consent); err != nil {
			if errors.Is(err, db.ErrChatBlocked) || errors.Is(err, db.ErrChatNoConsent) || errors.Is(err, db.ErrChatInactive) {
				s.log.Info("chat: outbox message dropped", "endpoint", m.Endpoint, "reason", err.Error())
				if err := s.opts.Store.ChatSent(ctx, m.Seq); err != nil {
					return false, err
				}
				continue
			}
			return false, err
		}
		from, err1 := jid.Parse(m.Endpoint)
		to, err2 := jid.Parse(m.Recipient)
		if err := errors.Join(err1, err2); err != nil {
			s.log.Error("chat: outbox message with a bad address dropped", "endpoint", m.Endpoint)
			_ = s.opts.Store.ChatSent(ctx, m.Seq)
			continue
		}
		if err := s.opts.Send(Outbound(from, to, m.Type, m.OriginID, m.Body, m.Lang, m.ReplyTo, m.ReplyID)); err != nil {
			return false, err
		}
		if err := s.opts.Store.ChatSent(ctx, m.Seq); err != nil {
			return false, err
		}
	}
	return len(batch) == outboxBatch, nil
}

// NewID is a message id and XEP-0359 origin-id: 128 random bits.
func NewID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// CutMark ends a text that was cut because it did not fit in the
// messages an endpoint may send (docs/messaging.md).
const CutMark = "\n[… cut: the rest did not fit in the messages allowed]"

// splitAnswers makes an answerer's texts into message bodies of at most
// MaxBody bytes: a longer text is split into several messages, at a line
// break where one is near, else at a rune boundary, and at most
// maxAnswers messages go out. A text that does not fit in them ends with
// CutMark, so that nothing is lost unsaid.
func splitAnswers(texts []string) []string {
	var out []string
	for _, text := range texts {
		for text != "" || len(out) == 0 {
			if len(out) == maxAnswers {
				out[len(out)-1] = withCutMark(out[len(out)-1])
				return out
			}
			if len(text) <= MaxBody {
				out = append(out, text)
				break
			}
			cut := splitPoint(text)
			out = append(out, text[:cut])
			text = text[cut:]
		}
	}
	return out
}

// splitPoint is where a text over MaxBody is split: after the last line
// break in the final quarter of the bound, else at the last rune boundary
// within it.
func splitPoint(s string) int {
	cut := MaxBody
	for cut > 0 && !utf8RuneStart(s[cut]) {
		cut--
	}
	if nl := strings.LastIndexByte(s[:cut], '\n'); nl >= MaxBody*3/4 {
		return nl + 1
	}
	return cut
}

// clipMarked returns s if it fits in MaxBody bytes, and otherwise s cut
// with CutMark (withCutMark). A text given to SendChatMessage is one
// message: it is cut so, never split.
func clipMarked(s string) string {
	if len(s) <= MaxBody {
		return s
	}
	return withCutMark(s)
}

// withCutMark is s, cut at a rune boundary where it must be, followed by
// CutMark, in at most MaxBody bytes.
func withCutMark(s string) string {
	cut := min(len(s), MaxBody-len(CutMark))
	for cut > 0 && cut < len(s) && !utf8RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + CutMark
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
