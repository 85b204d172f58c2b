package gateway

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/xml"
	"errors"
	"sync"

	"agentgw/wire"

	"mellium.im/xmpp/jid"
	"mellium.im/xmpp/stanza"
)

// errTooManyPending refuses an outgoing IQ beyond maxPendingIQs.
var errTooManyPending = errors.New("gateway: too many outgoing IQs pending")

// pendingIQs correlates outgoing IQs with their answers by id and by the
// answering JID, so that a third party cannot answer in another's name. When
// the stream ends every waiter fails at once: nothing stays pending.
type pendingIQs struct {
	mu      sync.Mutex
	max     int
	sess    *session
	waiting map[string]*waiter
}

type waiter struct {
	to jid.JID
	ch chan wire.Element
}

func newPendingIQs(max int) *pendingIQs {
	return &pendingIQs{max: max, waiting: map[string]*waiter{}}
}

// open attaches a new session; sends go to it from now on.
func (p *pendingIQs) open(s *session) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sess = s
}

// close fails every waiter with err and detaches the session.
func (p *pendingIQs) close(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sess = nil
	for id, w := range p.waiting {
		close(w.ch)
		delete(p.waiting, id)
	}
}

// Len is the number of IQs awaiting an answer.
func (p *pendingIQs) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.waiting)
}

// send writes iq with payload on s and waits for the answer, ctx's end, or
// the stream's loss. The IQ's id is chosen here. An error answer is returned
// as an element like a result; the caller decides what it means.
func (p *pendingIQs) send(ctx context.Context, s *session, iq stanza.IQ, payload xml.TokenReader) (wire.Element, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, iqTimeout)
		defer cancel()
	}
	iq.ID = randomID()
	w := &waiter{to: iq.To, ch: make(chan wire.Element, 1)}
	p.mu.Lock()
	if p.sess != s || s == nil {
		p.mu.Unlock()
		return wire.Element{}, ErrStreamLost
	}
	if len(p.waiting) >= p.max {
		p.mu.Unlock()
		return wire.Element{}, errTooManyPending
	}
	p.waiting[iq.ID] = w
	p.mu.Unlock()
	defer p.forget(iq.ID, w)

	// The session's context, not ctx (see session.send). A failed write
	// drops the stream (session.write), which fails every other waiter too.
	if err := s.write(iq.Wrap(payload)); err != nil {
		return wire.Element{}, err
	}
	select {
	case el, ok := <-w.ch:
		if !ok {
			return wire.Element{}, ErrStreamLost
		}
		return el, nil
	case <-ctx.Done():
		return wire.Element{}, ctx.Err()
	}
}

func (p *pendingIQs) forget(id string, w *waiter) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.waiting[id] == w {
		delete(p.waiting, id)
	}
}

// deliver hands an inbound result or error to its waiter. It reports false
// for an answer nobody waits for, or one from the wrong JID; such stanzas
// are dropped.
func (p *pendingIQs) deliver(id string, from jid.JID, el wire.Element) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	w, ok := p.waiting[id]
	if !ok || !w.to.Equal(from) {
		return false
	}
	delete(p.waiting, id)
	w.ch <- el
	return true
}

// randomID returns an unpredictable stanza id (128 bits).
func randomID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}
