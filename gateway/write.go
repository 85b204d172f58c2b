package gateway

import (
	"encoding/xml"
	"fmt"

	"agentgw/gateway/internal/compstream"
	"agentgw/surface"
	"agentgw/wire"

	"mellium.im/xmpp/stanza"
)

// The session's write side: the answers to requests, and the one order of
// whole stanzas on the stream (s.wmu). The connection's buffering,
// deadlines, byte stanzas and size bound are compstream's.

// replyResult answers req from the JID it was addressed to.
// A result over the wire size limit (compstream.Bound) is answered
// <resource-constraint/> instead.
//
// A frozen answer (wire.Frozen, such as an endpoint's disco#info) is
// written as the bytes it was encoded to once (writeResultBytes). Any
// other payload is copied once, by measuring it, and encoded by mellium
// without being measured again: the envelope is bounded
// (compstream.IQEnvelope).
//
// onReadLoop is set by the read loop's fast path (fastpath.go): a frozen
// answer then leaves with the others of the same read
// (compstream.Conn.WriteLater).
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

// boundPayload is compstream.BoundPayload for a reply payload. An
// afterRead payload is measured through to its inner reader and
// re-wrapped, so its callback still runs only once the reply has been
// encoded; ok is false (and the callback has run) when the payload is too
// large.
func boundPayload(payload xml.TokenReader) (out xml.TokenReader, ok bool) {
	if payload == nil {
		return nil, true
	}
	ar, isAfter := payload.(*afterRead)
	if isAfter {
		payload = ar.r
	}
	r, err := compstream.BoundPayload(payload)
	if err != nil {
		if isAfter {
			ar.done()
		}
		return nil, false
	}
	if isAfter {
		// The same afterRead, so that its callback still runs once.
		ar.r = r
		return ar, true
	}
	return r, true
}

// writeResultBytes writes the result IQ of req around payload, the XML of
// a frozen answer, as bytes in one write. It reports false, having written
// nothing, when the stanza would be over wire.MaxStanzaBytes: the caller
// then answers as for any payload.
func (s *session) writeResultBytes(req *Request, payload []byte, later bool) bool {
	var buf [256]byte
	return s.writeIQBytes(compstream.ResultHead, req.ID, replyAddrs(buf[:0], req), payload, later)
}

// replyAddrs appends the addresses of req's answer
// (compstream.AppendReplyAddrs) to dst.
func replyAddrs(dst []byte, req *Request) []byte {
	return compstream.AppendReplyAddrs(dst, req.To.String(), req.From.String())
}

// writeIQBytes writes the IQ compstream.BuildIQ builds in one write
// (writeBytes; later as there). It reports false, having written nothing,
// when the stanza would be over wire.MaxStanzaBytes.
func (s *session) writeIQBytes(head compstream.Head, id string, addrs, payload []byte, later bool) bool {
	iq, ok := compstream.BuildIQ(head, id, addrs, payload)
	if ok {
		_ = s.writeBytes(iq.Bytes(), later)
	}
	iq.Free()
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
// error that is not ours (mellium keeps the first error, so every later Send
// would fail) drops the stream, which reconnects; the errors that are ours
// come from measuring before anything is written, and leave it intact.
// Stalled writes are bounded by the connection's per-write deadline, never
// by a context (docs/gateway.md, "Writes").
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
	// Bounded to wire.MaxStanzaBytes after escaping (compstream.Bound): a
	// stanza over it is not sent at all, and the stream is intact.
	if measure {
		var err error
		if r, err = compstream.Bound(r); err != nil {
			return err
		}
	}
	// The measured stanza, a replay that cannot fail, is encoded once, by
	// mellium, into the stream's stanza buffer and leaves in one write
	// (sendWhole).
	return s.wrote(s.sendWhole(r))
}

// sendWhole writes one stanza through mellium with its bytes gathered
// (compstream.Conn.Hold) and flushed at its end, so that it leaves in one
// write however many pieces mellium's encoder cuts it into. Like every
// send it passes only the session's own context (see write). A session
// without a compstream.Conn (none in production) sends as mellium does.
//
// The caller holds s.wmu (write), which keeps one stanza per hold:
// without it a second sender's stanza could be flushed half by the first
// sender's flush.
func (s *session) sendWhole(r xml.TokenReader) error {
	if s.out == nil {
		return s.sess.Send(s.ctx, r)
	}
	s.out.Hold()
	err := s.sess.Send(s.ctx, r)
	if ferr := s.out.Flush(); err == nil {
		err = ferr
	}
	return err
}

// writeBytes writes one whole stanza given as bytes, in one write, ordered
// with every other stanza by s.wmu as write is. Between two of mellium's
// sends its encoder holds nothing unwritten (sendWhole flushes), so bytes
// written here stand between whole stanzas. later (the read loop only)
// queues them to leave before the connection's next read or write
// (compstream.Conn.WriteLater); b may be reused once it returns.
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
		return s.wrote(s.out.WriteLater(b))
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
