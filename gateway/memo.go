package gateway

import (
	"encoding/xml"
	"sync/atomic"
	"time"

	"agentgw/gateway/internal/compstream"
	"agentgw/gateway/internal/hotpath"
	"agentgw/metrics"
	"agentgw/surface"
	"agentgw/wire"

	"mellium.im/xmpp/jid"
	"mellium.im/xmpp/stanza"
)

// The read loop's memo of hot answers. A requester repeats itself (disco#info
// on every connect, directory pings), and even the fast path spends most of
// its cost per IQ routing and gathering in cache misses (issue 26); so the
// memo keeps the bytes of the answer to a payload-less read by who asked
// what, and writes them around the new id.
//
// An entry holds as long as everything the answer was read from does
// (hotpath.State, read before the answer is computed); the state only moves
// on, so nothing stale is held. Hidden and visible endpoints are kept alike,
// so a requester can tell only that it asked the same thing before. The
// bounds and rules in full: docs/gateway.md, "The memo".

// maxMemoKey and maxMemoMid bound what one entry holds of its own: the
// addresses and node of the read as received, and the reply's addresses
// escaped. A read past either is answered by the fast path every time.
const (
	maxMemoKey = 512
	maxMemoMid = 1024
)

// maxMemoPayload is the largest result payload the memo keeps. The bytes
// are the info cache's, shared, while it holds them; once it has started
// over the memo alone holds them, so they count toward its bound. An
// endpoint's disco#info is about 1.1 KB; a larger one is answered by the
// fast path every time.
const maxMemoPayload = 8 << 10

// maxMemoID is the longest id a kept answer is written around; a longer
// one (ids are a client's choice, usually a few bytes) takes the fast
// path, which also measures the reply against wire.MaxStanzaBytes.
const maxMemoID = 1024

// memoEntry is one kept answer: the stanza is head, the escaped id, mid,
// payload and "</iq>". The rest is what the read loop would have worked
// out again from the stanza: the parsed addresses, the rate limits' key
// for the sender and the metrics' series of the answer.
type memoEntry struct {
	head     compstream.Head
	mid      []byte
	payload  []byte
	from, to jid.JID
	sender   sender
	series   metrics.IQSeries
}

// memoKeyOf returns the memo key and the id of el, an IQ, and whether it
// may be answered from the memo at all: a get with a 'from', an id of 1 to
// maxMemoID bytes, addresses and node of at most maxMemoKey in all,
// and one payload with no content and no attribute but its namespace
// declarations and a node. The shape is read off the
// tokens, with nothing parsed or allocated.
func memoKeyOf(el wire.Element) (k hotpath.Key, id string, ok bool) {
	if len(el.Inner) != 2 {
		return hotpath.Key{}, "", false
	}
	p, ok := el.Inner[0].(xml.StartElement)
	if _, end := el.Inner[1].(xml.EndElement); !ok || !end {
		return hotpath.Key{}, "", false
	}
	k.Name = p.Name
	for _, a := range p.Attr {
		switch {
		case wire.IsNSDecl(a.Name):
		case a.Name.Space == "" && a.Name.Local == "node":
			k.Node = a.Value
		default:
			return hotpath.Key{}, "", false
		}
	}
	get, from := false, false
	for _, a := range el.Start.Attr {
		if a.Name.Space != "" {
			continue
		}
		switch a.Name.Local {
		case "from":
			k.From, from = a.Value, true
		case "to":
			k.To = a.Value
		case "id":
			id = a.Value
		case "type":
			get = a.Value == string(stanza.GetIQ)
		}
	}
	// A get without an id is answered without one (replyError), which a
	// kept answer, written around an id, cannot be.
	return k, id, get && from && id != "" && len(id) <= maxMemoID && len(k.From)+len(k.To)+len(k.Node) <= maxMemoKey
}

// HotState returns the state answers are read from now, or false when
// the store cannot say without the database (hotpath.Source).
func (s *session) HotState() (hotpath.State, bool) {
	v, err := s.g.store.MemoryView(s.memCtx)
	if err != nil {
		return hotpath.State{}, false
	}
	return hotpath.StateOf(v, s.g.Policy(), s.g.tasks.Load(), s.g.chat.Load()), true
}

// answerKept answers the get with key k and id from the memo, if its
// answer is kept and holds, and reports whether it did. The sender's rate
// limits apply as on every path: one over them is refused here, as
// dispatchIQ would refuse it.
func (s *session) answerKept(k hotpath.Key, id string) bool {
	e, ok := s.memo.Lookup(k, s)
	if !ok {
		return false
	}
	start := time.Now()
	if !s.g.allow(e.sender, start) {
		req := &Request{ID: id, Type: stanza.GetIQ, From: e.from, To: e.to}
		req.Payload.Start.Name = k.Name
		s.reject(req, surface.ErrResourceConstraint)
		return true
	}
	s.writeMemo(e, id)
	e.series.Observe(time.Since(start))
	fastAnswers.Add(1)
	memoAnswers.Add(1)
	return true
}

// memoAnswers counts the requests answered from the memo (tests).
var memoAnswers atomic.Int64

// memoize keeps the answer the fast path gave req from snd, the read p
// began, and returns it: a result whose payload is bytes, or an error of
// ours. It returns nil, keeping nothing, for any other answer.
func memoize(p hotpath.Pending[memoEntry], req *Request, snd sender, payload xml.TokenReader, err error) *memoEntry {
	e := &memoEntry{from: req.From, to: req.To, sender: snd,
		series: metrics.IQSeriesOf(p.Key().Name.Space, err)}
	if err != nil {
		se, ok := surface.Wire(err)
		if !ok {
			return nil
		}
		b, aerr := wire.AppendXML(nil, se.TokenReader())
		if aerr != nil {
			return nil
		}
		e.head, e.payload = compstream.ErrorHead, b
	} else {
		if _, after := payload.(*afterRead); after {
			return nil
		}
		raw, ok := wire.FrozenBytes(payload)
		if !ok || len(raw) > maxMemoPayload {
			return nil
		}
		e.head, e.payload = compstream.ResultHead, raw
	}
	e.mid = replyAddrs(nil, req)
	if len(e.mid) > maxMemoMid {
		return nil
	}
	// An id escapes to at most six bytes a byte (&quot;).
	if len(e.head)+6*maxMemoID+len(e.mid)+len(e.payload)+len("</iq>") > wire.MaxStanzaBytes {
		return nil
	}
	p.Keep(e)
	return e
}

// writeMemo writes e's answer with id, in one write with the others of
// the same read. memoize kept only answers that fit wire.MaxStanzaBytes
// around any id memoKeyOf lets through.
func (s *session) writeMemo(e *memoEntry, id string) {
	s.writeIQBytes(e.head, id, e.mid, e.payload, true)
}

// dropMemo forgets every kept answer (the idle release).
func (s *session) dropMemo() { s.memo.Drop() }
