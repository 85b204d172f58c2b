package account

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"agentgw/metrics"
)

// Who may fill the queue, and how fast (docs/mcp-server.md, "Who may fill
// the queue"): the account's session goroutine filters each message and
// hands it to the writer (ingest) without waiting; the writer commits
// whatever has gathered in one transaction, so a flood costs one fsync
// per batch and roster pushes and task events never wait on the disk.

// The values of Options.AcceptFrom.
const (
	AcceptSubscribed = "subscribed"
	AcceptRoster     = "roster"
	AcceptAnyone     = "anyone"
)

const (
	// ingestMax and ingestMaxBytes bound the messages accepted and not yet
	// committed (the stanza's size counts): past either, a message is
	// refused ("backlog") rather than the session waiting for the disk.
	ingestMax      = 1024
	ingestMaxBytes = 8 << 20
	// maxBatch bounds the messages of one commit.
	maxBatch = 256
	// maxSenders bounds the per-sender rate buckets kept; past it the
	// full (idle) ones are forgotten, and if none is, all are.
	maxSenders = 4096
	// refusedLogEvery spaces the log lines about refused messages; each
	// carries the running totals.
	refusedLogEvery = 10 * time.Second
)

// Reasons a message is not queued, as counted in the log and in
// agentgw_mcp_messages_refused_total.
const (
	refusedSender  = "sender"  // not allowed by accept_from
	refusedRate    = "rate"    // past the sender's rate
	refusedBacklog = "backlog" // the writer is behind
)

type ingestItem struct {
	m    MessageResponse
	size int64
}

// bucket is a sender's token bucket.
type bucket struct {
	tokens float64
	last   time.Time
}

// ingest is an account's filter and writer state.
type ingest struct {
	ch      chan ingestItem
	bytes   atomic.Int64
	buckets map[string]*bucket // session goroutine only

	mu      sync.Mutex
	refused map[string]int64
	logged  time.Time
}

func newIngest() *ingest {
	return &ingest{ch: make(chan ingestItem, ingestMax), buckets: map[string]*bucket{}, refused: map[string]int64{}}
}

// accepts reports whether accept_from lets bare's messages in. The
// account's own JID (its other resources, the server on its behalf) is
// always accepted.
func (a *Account) accepts(bare string) bool {
	if bare == "" || bare == a.opts.JID.String() || a.opts.AcceptFrom == AcceptAnyone {
		return true
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	c := a.contacts[bare]
	if c == nil || !c.InRoster {
		return false
	}
	if a.opts.AcceptFrom == AcceptRoster {
		return true
	}
	// subscribed: either direction.
	return c.Subscription == "to" || c.Subscription == "from" || c.Subscription == "both"
}

// allow takes one token of bare's bucket.
func (a *Account) allow(bare string, now time.Time) bool {
	rate, burst := a.opts.SenderRateLimit, float64(a.opts.SenderRateBurst)
	if rate <= 0 {
		return true
	}
	if burst < 1 {
		burst = 1
	}
	in := a.in
	b := in.buckets[bare]
	if b == nil {
		if len(in.buckets) >= maxSenders {
			for k, o := range in.buckets {
				if o.tokens+now.Sub(o.last).Seconds()*rate >= burst {
					delete(in.buckets, k)
				}
			}
			if len(in.buckets) >= maxSenders {
				clear(in.buckets)
			}
		}
		b = &bucket{tokens: burst, last: now}
		in.buckets[bare] = b
	}
	b.tokens = min(burst, b.tokens+now.Sub(b.last).Seconds()*rate)
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// offer filters a parsed message on the session goroutine and hands it
// to the writer; it never waits.
func (a *Account) offer(m MessageResponse, size int) {
	bare := m.FromBareJid
	isErr := m.Type != nil && *m.Type == "Error"
	switch {
	case !isErr && !a.accepts(bare):
		// Message errors pass: they answer what the client sent.
		a.refuse(refusedSender, bare)
		return
	case !a.allow(bare, time.Now()):
		a.refuse(refusedRate, bare)
		return
	}
	n := int64(size)
	if a.in.bytes.Add(n) > ingestMaxBytes {
		a.in.bytes.Add(-n)
		a.refuse(refusedBacklog, bare)
		return
	}
	select {
	case a.in.ch <- ingestItem{m: m, size: n}:
	default:
		a.in.bytes.Add(-n)
		a.refuse(refusedBacklog, bare)
	}
}

// refuse counts a message not queued, in the metrics at once and in the
// log at most every refusedLogEvery (each at debug).
func (a *Account) refuse(reason, from string) {
	metrics.MCPMessagesRefused.Inc(reason)
	a.in.mu.Lock()
	a.in.refused[reason]++
	now := time.Now()
	due := now.Sub(a.in.logged) >= refusedLogEvery
	var totals []any
	if due {
		a.in.logged = now
		totals = []any{"account", a.opts.JID.String(), "reason", reason, "from", from, "accept_from", a.opts.AcceptFrom,
			"refused_sender", a.in.refused[refusedSender], "refused_rate", a.in.refused[refusedRate], "refused_backlog", a.in.refused[refusedBacklog]}
	}
	a.in.mu.Unlock()
	a.opts.Log.Debug("message not queued", "account", a.opts.JID.String(), "reason", reason, "from", from)
	if due {
		a.opts.Log.Warn("messages not queued", totals...)
	}
}

// Refused returns how many messages were not queued, by reason.
func (a *Account) Refused() map[string]int64 {
	a.in.mu.Lock()
	defer a.in.mu.Unlock()
	out := make(map[string]int64, len(a.in.refused))
	for k, v := range a.in.refused {
		out[k] = v
	}
	return out
}

// writer commits what the session accepted, in batches, until ctx ends;
// then it commits what is left and returns.
func (a *Account) writer(ctx context.Context) {
	wctx := context.WithoutCancel(ctx)
	batch := make([]ingestItem, 0, maxBatch)
	for {
		select {
		case it := <-a.in.ch:
			batch = append(batch, it)
		case <-ctx.Done():
			for {
				select {
				case it := <-a.in.ch:
					batch = append(batch, it)
					if len(batch) == maxBatch {
						a.commit(wctx, batch)
						batch = batch[:0]
					}
					continue
				default:
				}
				break
			}
			a.commit(wctx, batch)
			return
		}
	gather:
		for len(batch) < maxBatch {
			select {
			case it := <-a.in.ch:
				batch = append(batch, it)
			default:
				break gather
			}
		}
		a.commit(wctx, batch)
		batch = batch[:0]
	}
}

// commit stores one batch and tells the MCP server.
func (a *Account) commit(ctx context.Context, batch []ingestItem) {
	if len(batch) == 0 {
		return
	}
	ms := make([]MessageResponse, len(batch))
	var size int64
	for i, it := range batch {
		ms[i], size = it.m, size+it.size
	}
	defer a.in.bytes.Add(-size)
	account := a.opts.JID.String()
	stored, dropped, err := a.opts.Store.PushBatch(ctx, account, ms, a.opts.QueueMax, a.opts.QueueMaxBytes)
	if err != nil {
		a.opts.Log.Error("store messages", "account", account, "messages", len(ms), "err", err)
		return
	}
	if len(dropped) > 0 {
		n, _ := a.opts.Store.Dropped(ctx, account)
		a.opts.Log.Warn("message queue full: oldest dropped", "account", account, "dropped", len(dropped), "dropped_total", n,
			"queue_max", a.opts.QueueMax, "queue_max_bytes", a.opts.QueueMaxBytes)
	}
	gone := make(map[string]bool, len(dropped))
	for _, id := range dropped {
		gone[id] = true
	}
	var kept []Stored
	for _, st := range stored {
		if !gone[st.ID] {
			kept = append(kept, st)
		}
	}
	a.mu.Lock()
	close(a.arrived)
	a.arrived = make(chan struct{})
	a.mu.Unlock()
	if a.events == nil {
		return
	}
	// The newest is never dropped, so kept is not empty; the drops go
	// with the last message.
	for i, st := range kept {
		var d []string
		if i == len(kept)-1 {
			d = dropped
		}
		a.events.MessageQueued(st, d)
	}
}
