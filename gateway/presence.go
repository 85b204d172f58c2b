package gateway

// Presence for virtual endpoints (RFC 6121; the decisions are
// legacy.React's). The gateway acts as each endpoint's server: the read
// loop queues presence per endpoint and presence workers drain one
// endpoint at a time, so answers go out in order ("subscribed" before
// "available"); what each subscriber was shown is kept per stream and
// reconciled with what should be shown now, when the store's data version
// or the policy changes, when a runtime goes down or comes back, and at
// stream start; at shutdown subscribers are sent unavailable. In full:
// docs/gateway.md, "Presence".

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"agentgw/db"
	"agentgw/legacy"
	"agentgw/policy"
	"agentgw/surface"
	"agentgw/wire"

	"mellium.im/xmpp/jid"
	"mellium.im/xmpp/stanza"
)

// Tunables of presence.
const (
	// presenceWorkers bounds the endpoints whose presence is handled at
	// once. It is separate from the IQ workers, so that announcing presence
	// to many subscribers never makes IQs fail with resource-constraint.
	presenceWorkers = 8
	// maxPresenceBacklog bounds the inbound presence stanzas waiting across
	// all endpoints; past it, presence is dropped (the read loop never
	// waits). Reconciles are coalesced, one per endpoint, and not counted.
	maxPresenceBacklog = 4096
	// presencePoll is how often the watcher reads the store's data version.
	presencePoll = 500 * time.Millisecond
	// presenceShutdownTimeout bounds the unavailable presence sent on
	// shutdown, waiting for workers included.
	presenceShutdownTimeout = 3 * time.Second
)

// Availability returns the hook through which a runtime reports that an
// endpoint's runtime is down (MarkDown) or up again (MarkUp). Presence
// follows at once: subscribers are sent unavailable or available. An active
// endpoint nobody marked down is available.
func (g *Gateway) Availability() *legacy.Availability {
	return &g.avail
}

// availabilityChanged is the Availability callback.
func (g *Gateway) availabilityChanged(endpoint string) {
	if p := g.presence.Load(); p != nil {
		p.reconcileLater(endpoint, nil)
	}
}

// inboundPresence is one subscribe, unsubscribe or probe, as queued.
type inboundPresence struct {
	typ stanza.PresenceType
	id  string
	// from is the sender as given; its bare JID keys the subscription.
	from jid.JID
	// endpoint is the bare JID the stanza was addressed to.
	endpoint jid.JID
}

// presenceHint is what a watcher pass read for one endpoint: its
// subscribers (none if it is inactive or gone) and the count of local
// subscription writes before the read. A reconcile uses it only if no local
// write happened since; otherwise it reads the store again.
type presenceHint struct {
	subs   []string
	writes uint64
}

// presenceQueue is one endpoint's pending work. It exists, in
// presenceState.queues, exactly while the endpoint is in the ready list or
// being worked on.
type presenceQueue struct {
	inbound   []inboundPresence
	reconcile bool
	hint      *presenceHint
}

// presenceState is the presence of one component stream.
type presenceState struct {
	s *session

	// qmu guards the queues; the read loop takes it only to append.
	qmu     sync.Mutex
	cond    *sync.Cond
	stopped bool
	queues  map[string]*presenceQueue
	ready   []string
	backlog int

	// amu guards announced: endpoint → subscriber bare JID → shown
	// available. Lock order: amu before qmu.
	amu       sync.Mutex
	announced map[string]map[string]bool

	// writes counts local subscription writes (see presenceHint).
	writes atomic.Uint64
	// rescan asks the watcher for a pass even if nothing changed, after a
	// failure.
	rescan atomic.Bool
	wg     sync.WaitGroup
}

// startPresence starts presence on a new stream: the workers, the watcher
// (whose first pass announces available), and the availability hook. It all
// stops when the stream's context ends.
func startPresence(s *session) *presenceState {
	p := &presenceState{
		s:         s,
		queues:    map[string]*presenceQueue{},
		announced: map[string]map[string]bool{},
	}
	p.cond = sync.NewCond(&p.qmu)
	g := s.g
	g.avail.Notify(g.availabilityChanged)
	g.presence.Store(p)
	p.wg.Add(presenceWorkers + 1)
	for range presenceWorkers {
		go p.work()
	}
	go p.watch()
	context.AfterFunc(s.ctx, p.stop)
	return p
}

// stop ends the workers after the job in hand and detaches the state from
// the gateway. Queued work is dropped: the stream it was for is gone.
func (p *presenceState) stop() {
	p.qmu.Lock()
	p.stopped = true
	p.queues, p.ready, p.backlog = map[string]*presenceQueue{}, nil, 0
	p.cond.Broadcast()
	p.qmu.Unlock()
	p.s.g.presence.CompareAndSwap(p, nil)
}

// shutdown runs when the gateway stops, before the stream is closed: it
// stops the presence work and sends unavailable to every subscriber shown an
// endpoint available, for at most presenceShutdownTimeout. Pairs it has no
// time for are skipped; their servers mark the endpoint offline at their
// next probe.
func (p *presenceState) shutdown() {
	p.stop()
	deadline := time.Now().Add(presenceShutdownTimeout)
	// Let a job in hand finish first: the stream context is done, so it
	// stops at its next store call or send.
	idle := make(chan struct{})
	go func() { p.wg.Wait(); close(idle) }()
	select {
	case <-idle:
	case <-time.After(time.Until(deadline)):
	}
	p.amu.Lock()
	shown := p.announced
	p.announced = map[string]map[string]bool{}
	p.amu.Unlock()
	n, total := 0, 0
	for _, subs := range shown {
		total += len(subs)
	}
	// Send takes a context that never ends: a context that ends arms
	// mellium's write-deadline trap (see session.send). Each write is
	// bounded by the connection's write deadline, and the loop by deadline.
send:
	for ep, subs := range shown {
		from, err := jid.Parse(ep)
		if err != nil {
			continue
		}
		for sub := range subs {
			to, err := jid.Parse(sub)
			if err != nil {
				continue
			}
			if time.Now().After(deadline) {
				break send
			}
			pr := stanza.Presence{From: from, To: to, Type: stanza.UnavailablePresence}
			if err := p.s.sess.Send(context.Background(), pr.Wrap(nil)); err != nil {
				p.s.g.log.Warn("shutdown: sending unavailable presence failed", "err", err)
				break send
			}
			n++
		}
	}
	if total > 0 {
		p.s.g.log.Info("shutdown: sent unavailable presence", "sent", n, "subscribers", total)
	}
}

// dispatchPresence queues a subscribe, unsubscribe or probe addressed to an
// endpoint; every other presence needs no answer (see legacy.React), and
// presence of type error is never answered. It runs on the read loop, so it
// only appends.
func (s *session) dispatchPresence(el wire.Element) {
	from, to, snd, id, typ, ok := s.stanzaAddrs(el.Start)
	if !ok || s.presence == nil {
		return
	}
	switch stanza.PresenceType(typ) {
	case stanza.SubscribePresence, stanza.UnsubscribePresence, stanza.ProbePresence:
	default:
		return
	}
	// Only a remote entity subscribes; and only our own JIDs are answered.
	dom := s.g.domain.Domainpart()
	if from.Domainpart() == dom || to.Domainpart() != dom {
		return
	}
	if !s.g.allow(snd, time.Now()) {
		// Past the sender's or its domain's rate (ratelimit.go).
		return
	}
	s.presence.enqueue(inboundPresence{typ: stanza.PresenceType(typ), id: id, from: from, endpoint: to.Bare()})
}

// enqueue queues an inbound stanza on its endpoint's queue, or drops it if
// the backlog is full.
func (p *presenceState) enqueue(in inboundPresence) {
	p.qmu.Lock()
	defer p.qmu.Unlock()
	if p.stopped {
		return
	}
	if p.backlog >= maxPresenceBacklog {
		p.s.g.log.Debug("presence backlog full; dropping", "type", string(in.typ), "to", in.endpoint.String())
		return
	}
	q := p.queueLocked(in.endpoint.String())
	q.inbound = append(q.inbound, in)
	p.backlog++
}

// reconcileLater queues a reconcile of endpoint, replacing one already
// queued. A nil hint makes it read the store.
func (p *presenceState) reconcileLater(endpoint string, hint *presenceHint) {
	p.qmu.Lock()
	defer p.qmu.Unlock()
	if p.stopped {
		return
	}
	q := p.queueLocked(endpoint)
	q.reconcile, q.hint = true, hint
}

// queueLocked returns the endpoint's queue, creating it and marking it
// ready if it did not exist. qmu is held.
func (p *presenceState) queueLocked(endpoint string) *presenceQueue {
	q, ok := p.queues[endpoint]
	if !ok {
		q = &presenceQueue{}
		p.queues[endpoint] = q
		p.ready = append(p.ready, endpoint)
		p.cond.Signal()
	}
	return q
}

// work is one presence worker: it takes a ready endpoint, does one item of
// its work, and puts it back at the end of the ready list if more remains,
// so a busy endpoint cannot starve the others.
func (p *presenceState) work() {
	defer p.wg.Done()
	for {
		p.qmu.Lock()
		for len(p.ready) == 0 && !p.stopped {
			p.cond.Wait()
		}
		if p.stopped {
			p.qmu.Unlock()
			return
		}
		ep := p.ready[0]
		p.ready = p.ready[1:]
		q := p.queues[ep]
		var job func()
		if len(q.inbound) > 0 {
			in := q.inbound[0]
			q.inbound = q.inbound[1:]
			p.backlog--
			job = func() { p.handle(in) }
		} else {
			hint := q.hint
			q.reconcile, q.hint = false, nil
			job = func() { p.reconcile(ep, hint) }
		}
		p.qmu.Unlock()

		job()

		p.qmu.Lock()
		// stop may have replaced the queues meanwhile.
		if p.queues[ep] == q {
			if len(q.inbound) > 0 || q.reconcile {
				p.ready = append(p.ready, ep)
				p.cond.Signal()
			} else {
				delete(p.queues, ep)
			}
		}
		p.qmu.Unlock()
	}
}

// handle answers one inbound stanza: it gathers the sender's standing,
// lets legacy.React decide, makes the store change, then sends. A store
// failure leaves the stanza unanswered (the sender's server resends a
// pending subscription request at the next login).
func (p *presenceState) handle(in inboundPresence) {
	ctx, g := p.s.ctx, p.s.g
	ep := in.endpoint.String()
	sub := in.from.Bare()
	pol := g.Policy()
	st := legacy.Standing{MaySee: pol.CanSee(in.from, ep)}
	// The directory decides visibility, as for every other surface, so a
	// hidden endpoint costs what a nonexistent one costs.
	_, err := g.dir.EndpointSummary(ctx, pol, in.from, in.endpoint)
	var se stanza.Error
	switch {
	case err == nil:
		st.Visible = true
	case !errors.As(err, &se):
		p.fail("presence: read endpoint", ep, err)
		return
	}
	st.Available = st.Visible && !g.avail.Down(ep)
	if st.Subscribed, err = g.store.Subscribed(ctx, ep, sub.String()); err != nil {
		p.fail("presence: read subscription", ep, err)
		return
	}
	st.Announced = p.isShown(ep, sub.String())

	r := legacy.React(in.typ, st)
	switch r.Store {
	case legacy.StoreSubscribe:
		o := &g.opts
		_, err = g.store.SubscribeWithin(ctx, ep, sub.String(), o.SubscriptionsPerEndpoint, o.SubscriptionsTotal)
		if errors.Is(err, db.ErrQuota) {
			// Past [quotas] subscriptions_per_endpoint or
			// subscriptions_total: a presence error, and nothing stored
			// changes. The sender's server may ask again later.
			g.log.Info("presence subscription refused: quota", "endpoint", ep)
			pr := stanza.Presence{ID: in.id, From: in.endpoint, To: in.from, Type: stanza.ErrorPresence}
			p.s.send(pr.Wrap(surface.ErrResourceConstraint.TokenReader()))
			return
		}
	case legacy.StoreUnsubscribe:
		_, err = g.store.Unsubscribe(ctx, ep, sub.String())
	}
	if err != nil {
		p.fail("presence: store subscription", ep, err)
		return
	}
	if r.Store != legacy.StoreNothing {
		p.writes.Add(1)
	}
	answered := make([]string, 0, len(r.Send))
	for i, out := range r.Send {
		to := sub
		if out.ToSender {
			to = in.from
		}
		id := ""
		if i == 0 {
			id = in.id // the direct answer carries the request's id
		}
		p.send(in.endpoint, to, out.Type, id)
		answered = append(answered, presenceTypeName(out.Type))
	}
	g.log.Debug("presence", "endpoint", ep, "from", sub.String(), "type", string(in.typ), "answered", answered)
}

// reconcile makes what the endpoint's subscribers are shown match what they
// should be shown now: available for each subscriber allowed to see the
// endpoint while it is active and its runtime is not down; nothing for
// anyone else, which means unavailable for those shown available before.
func (p *presenceState) reconcile(ep string, hint *presenceHint) {
	ctx, g := p.s.ctx, p.s.g
	var subs []string
	if hint != nil && hint.writes == p.writes.Load() {
		subs = hint.subs
	} else {
		var err error
		if subs, err = p.activeSubscribers(ctx, ep); err != nil {
			p.fail("presence: read subscribers", ep, err)
			p.rescan.Store(true)
			return
		}
	}
	want := p.desired(ep, subs, g.Policy())
	p.amu.Lock()
	var on, off []string
	for sub := range want {
		if !p.announced[ep][sub] {
			on = append(on, sub)
		}
	}
	for sub := range p.announced[ep] {
		if !want[sub] {
			off = append(off, sub)
		}
	}
	p.amu.Unlock()
	from, err := jid.Parse(ep)
	if err != nil {
		return
	}
	for _, list := range []struct {
		subs []string
		typ  stanza.PresenceType
	}{{on, stanza.AvailablePresence}, {off, stanza.UnavailablePresence}} {
		for _, sub := range list.subs {
			if to, err := jid.Parse(sub); err == nil {
				p.send(from, to, list.typ, "")
			}
		}
	}
	if len(on)+len(off) > 0 {
		g.log.Debug("presence reconciled", "endpoint", ep, "available", len(on), "unavailable", len(off))
	}
}

// activeSubscribers reads the subscribers of ep if it is active; an
// inactive or removed endpoint has none to show.
func (p *presenceState) activeSubscribers(ctx context.Context, ep string) ([]string, error) {
	st, err := p.s.g.store.Status(ctx, ep)
	if errors.Is(err, db.ErrNotFound) || (err == nil && st.Active == "") {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return p.s.g.store.Subscribers(ctx, ep)
}

// desired is the set of subscribers of an active endpoint that should be
// shown it available. Presence never widens visibility: a subscriber the
// policy no longer allows to see the endpoint is shown nothing.
func (p *presenceState) desired(ep string, subs []string, pol *policy.Policy) map[string]bool {
	want := map[string]bool{}
	if len(subs) == 0 || p.s.g.avail.Down(ep) {
		return want
	}
	for _, sub := range subs {
		j, err := jid.Parse(sub)
		if err == nil && pol.CanSee(j, ep) {
			want[sub] = true
		}
	}
	return want
}

// isShown reports whether sub has been shown ep available.
func (p *presenceState) isShown(ep, sub string) bool {
	p.amu.Lock()
	defer p.amu.Unlock()
	return p.announced[ep][sub]
}

// send writes one presence stanza from the endpoint's bare JID and records
// what the recipient's bare JID is now shown. Available and unavailable
// presence carry no payload: availability is all they say.
func (p *presenceState) send(from, to jid.JID, typ stanza.PresenceType, id string) {
	if p.s.ctx.Err() != nil {
		// The stream is ending; shutdown speaks for the endpoints now.
		return
	}
	pr := stanza.Presence{ID: id, From: from.Bare(), To: to, Type: typ}
	p.s.send(pr.Wrap(nil))
	ep, sub := from.Bare().String(), to.Bare().String()
	p.amu.Lock()
	defer p.amu.Unlock()
	switch typ {
	case stanza.AvailablePresence:
		if p.announced[ep] == nil {
			p.announced[ep] = map[string]bool{}
		}
		p.announced[ep][sub] = true
	case stanza.UnavailablePresence, stanza.UnsubscribedPresence:
		delete(p.announced[ep], sub)
		if len(p.announced[ep]) == 0 {
			delete(p.announced, ep)
		}
	}
}

// watch polls the data version and runs a pass when it, or the policy,
// changed, and once at the start.
func (p *presenceState) watch() {
	defer p.wg.Done()
	ctx, g := p.s.ctx, p.s.g
	tick := time.NewTicker(presencePoll)
	defer tick.Stop()
	var lastVersion int64
	var lastPolicy *policy.Policy
	p.rescan.Store(true)
	for {
		v, err := g.store.DataVersion(ctx)
		pol := g.Policy()
		switch {
		case err != nil:
			if ctx.Err() == nil {
				g.log.Error("presence: read data version", "err", err)
			}
		case p.rescan.Swap(false) || v != lastVersion || pol != lastPolicy:
			if err := p.scan(ctx, pol); err != nil {
				if ctx.Err() == nil {
					g.log.Error("presence: read subscriptions", "err", err)
				}
				p.rescan.Store(true)
			}
			lastVersion, lastPolicy = v, pol
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// scan is one watcher pass: it reads the subscribers of every active
// endpoint that has any, in one query whose cost follows the number of
// subscriptions, and queues a reconcile of each endpoint whose subscribers
// were shown something else than they should be, including endpoints
// shown available that are no longer active or no longer exist.
func (p *presenceState) scan(ctx context.Context, pol *policy.Policy) error {
	writes := p.writes.Load()
	snap, err := p.s.g.store.ActiveSubscriptions(ctx)
	if err != nil {
		return err
	}
	p.amu.Lock()
	defer p.amu.Unlock()
	for ep, subs := range snap {
		want := p.desired(ep, subs, pol)
		if !sameSet(want, p.announced[ep]) {
			p.reconcileLater(ep, &presenceHint{subs: subs, writes: writes})
		}
	}
	for ep, shown := range p.announced {
		if _, ok := snap[ep]; !ok && len(shown) > 0 {
			p.reconcileLater(ep, &presenceHint{writes: writes})
		}
	}
	return nil
}

// fail logs a store failure of a presence job; a failure because the stream
// ended is not worth a line.
func (p *presenceState) fail(what, ep string, err error) {
	if p.s.ctx.Err() == nil {
		p.s.g.log.Error(what, "endpoint", ep, "err", err)
	}
}

func sameSet(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

func presenceTypeName(t stanza.PresenceType) string {
	if t == stanza.AvailablePresence {
		return "available"
	}
	return string(t)
}
