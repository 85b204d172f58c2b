package gateway

import (
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"agentgw/db"
	"agentgw/gateway/internal/hotpath"
	"agentgw/metrics"
	"agentgw/surface"
)

// The lean path for hot reads (disco, a directory page, a search, a ping):
// answered on the read loop itself when the store can answer from memory
// (db.MemoryOnly), with no hand-off to a worker, whose wake-up on two
// shared cores costs more than the answer; anything needing the database
// fails at once with db.ErrWouldBlock and goes to a worker. The choice never
// depends on the addressed endpoint, so hidden, nonexistent and visible
// endpoints answer alike. Why a write from the read loop is safe:
// docs/gateway.md, "The fast path".

// fastIQs are the requests tried on the read loop: every IQ of the
// surfaces marked fromMemory in surfaces.go.
var fastIQs = memoryReads(surfaces)

// memoryReads is the IQs of list's fromMemory surfaces, at the gateway JID
// and at endpoints alike. The read loop looks an IQ up by type and payload
// before it picks the table that routes it, so a key that one surface
// answers from memory and another routes to a worker panics.
func memoryReads(list []protocol) map[iqKey]bool {
	fromMemory := map[iqKey]bool{}
	for _, p := range list {
		for _, r := range append(slices.Clip(p.gateway), p.endpoint...) {
			k := iqKey{r.typ, r.name}
			if prev, ok := fromMemory[k]; ok && prev != p.fromMemory {
				panic(fmt.Sprintf("gateway: IQ %s {%s}%s is answered from memory by one surface and by a worker in another (%s)",
					r.typ, r.name.Space, r.name.Local, p.name))
			}
			fromMemory[k] = p.fromMemory
		}
	}
	// A map of its own, filled with the hot reads only: deleting the
	// others from fromMemory would leave tombstones that every lookup of
	// a worker's IQ (a miss) probes past.
	fast := map[iqKey]bool{}
	for k, ok := range fromMemory {
		if ok {
			fast[k] = true
		}
	}
	return fast
}

// fastAnswers counts the requests answered on the read loop (tests).
var fastAnswers atomic.Int64

// answerFromMemory answers req on the read loop if it is a hot read that
// the store can answer from memory, and reports whether it did.
//
// The answer to a read the memo may keep (memo.go; memoable, under key
// k) is kept for the next time if the read was asked before
// (hotpath.Memo.Begin).
func (s *session) answerFromMemory(req *Request, snd sender, k hotpath.Key, memoable bool) (answered bool) {
	if !fastIQs[iqKey{req.Type, req.Payload.Start.Name}] {
		return false
	}
	// Read before the answer is, so that a change landing meanwhile only
	// makes the kept answer stale (memo.go).
	// Only a read asked before is kept: most are asked once.
	var keep hotpath.Pending[memoEntry]
	if memoable {
		keep, memoable = s.memo.Begin(k, s)
	}
	defer func() {
		// A bug in one handler must not take the gateway down.
		if r := recover(); r != nil {
			s.g.log.Error("handler panic", "to", req.To.String(), "payload", req.Payload.Start.Name.Space+" "+req.Payload.Start.Name.Local, "panic", r)
			s.replyError(req, surface.ErrInternalServerError)
			answered = true
		}
	}()
	start := time.Now()
	payload, err := s.g.route(s.memCtx, req)
	if errors.Is(err, db.ErrWouldBlock) {
		return false
	}
	metrics.IQ(req.Payload.Start.Name.Space, err, time.Since(start))
	fastAnswers.Add(1)
	if memoable {
		if e := memoize(keep, req, snd, payload, err); e != nil {
			s.writeMemo(e, req.ID)
			return true
		}
	}
	if err != nil {
		s.replyError(req, err)
		return true
	}
	s.replyResult(req, payload, true)
	if a, ok := payload.(*afterRead); ok {
		// As in handle: written or not, the reply is done with.
		a.done()
	}
	return true
}
