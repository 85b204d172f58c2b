package gateway

import (
	"context"
	"encoding/xml"
	"net"
	"time"

	"agentgw/wire"

	"mellium.im/xmpp/stanza"
)

// SendIQ sends an IQ on the current stream and waits for its answer, for
// tests of the outgoing-IQ table.
func (g *Gateway) SendIQ(ctx context.Context, iq stanza.IQ, payload xml.TokenReader) (wire.Element, error) {
	g.pending.mu.Lock()
	s := g.pending.sess
	g.pending.mu.Unlock()
	return g.pending.send(ctx, s, iq, payload)
}

// PendingIQs is the number of outgoing IQs awaiting an answer.
func (g *Gateway) PendingIQs() int { return g.pending.Len() }

// SetWriteTimeout shortens the per-write deadline of the streams g opens
// from now on, and SetDialer replaces how they are dialed; call both before
// Run.
func (g *Gateway) SetWriteTimeout(d time.Duration) { g.writeTimeout = d }

// SetDialer replaces how g dials its server.
func (g *Gateway) SetDialer(dial func(context.Context) (net.Conn, error)) { g.dial = dial }

// SetCommandWait sets how long an ad-hoc command waits for its task; 0
// restores the default.
func SetCommandWait(d time.Duration) { commandWait.Store(int64(d)) }

// Kept is what the gateway keeps between requests: built endpoint
// disco#info answers, the stream's parsed addresses and its kept answers
// (the memo's entries).
func (g *Gateway) Kept() (infos, jids, memo int) {
	infos = g.infos.Len()
	g.pending.mu.Lock()
	s := g.pending.sess
	g.pending.mu.Unlock()
	if s == nil {
		return infos, 0, 0
	}
	if m := s.jids.m.Load(); m != nil {
		jids = len(*m)
	}
	memo = s.memo.Len()
	return infos, jids, memo
}
