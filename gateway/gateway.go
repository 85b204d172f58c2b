// Package gateway is agentgw's XEP-0114 component: it keeps one stream to the
// XMPP server alive (dialing, TLS, handshake, keepalive pings, reconnect with
// capped backoff), reads stanzas on one goroutine, hands each to a bounded
// pool of workers, and routes them to the protocol packages below it.
//
// The read loop never does slow work: it buffers a stanza, answers it itself
// if it is a hot read the store can answer from memory (fastpath.go), else
// checks it out to a worker, and reads the next. Every reply goes out from the JID the request was
// addressed to, which is the gateway domain or an endpoint under it, and
// never reflects the request payload.
package gateway

import (
	"context"
	"encoding/xml"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"agentgw/adhoc"
	"agentgw/chat"
	"agentgw/db"
	"agentgw/directory"
	"agentgw/gateway/internal/compstream"
	"agentgw/gateway/internal/hotpath"
	"agentgw/legacy"
	"agentgw/metrics"
	"agentgw/policy"
	"agentgw/taskd"
	"agentgw/wire"

	"mellium.im/xmpp/jid"
)

// Tunables of the stanza pipeline.
const (
	// maxWorkers bounds concurrently handled stanzas beyond the warm
	// workers (dispatch.go); past it an IQ get/set is answered
	// <resource-constraint/> at once by the read loop.
	maxWorkers = 64
	// maxStanzaTokens and maxStanzaBytes bound one buffered stanza; a larger
	// IQ request is answered <resource-constraint/>.
	maxStanzaTokens = 200_000
	maxStanzaBytes  = 2 << 20
	// replyTimeout bounds one write to a stalled stream; a write that
	// times out drops the stream (session.write).
	replyTimeout = 10 * time.Second
	// maxPendingIQs bounds outgoing IQs awaiting an answer.
	maxPendingIQs = 256
	// iqTimeout is the default wait for an outgoing IQ's answer.
	iqTimeout = 30 * time.Second
	// backoffMin is the first reconnect delay; backoffReset is how long a
	// session must have lived for the next failure to start from it again.
	backoffMin   = time.Second
	backoffReset = 30 * time.Second
	// handshakeTimeout bounds dialing plus the component handshake.
	handshakeTimeout = 15 * time.Second
)

// ErrStreamLost fails outgoing IQs that were pending when the stream ended.
var ErrStreamLost = errors.New("gateway: component stream lost")

// Gateway is the running component.
type Gateway struct {
	opts   Options
	store  *db.Store
	log    *slog.Logger
	dir    *directory.Service
	policy atomic.Pointer[policy.Policy]

	domain  jid.JID
	workers chan struct{}
	pending *pendingIQs
	limiter *limiter
	// domainLimiter is the per-domain budget (ratelimit.go).
	domainLimiter *limiter

	// avail is the runtime availability hook and presence the presence
	// state of the live stream, nil between streams (presence.go).
	avail    legacy.Availability
	presence atomic.Pointer[presenceState]

	// writeTimeout bounds one write on the stream (compstream.Conn), and dial
	// opens the transport; tests shorten the one and replace the other.
	writeTimeout time.Duration
	dial         func(context.Context) (net.Conn, error)

	// tasks runs the task protocol (route_task.go); nil until AttachTasks.
	tasks atomic.Pointer[taskd.Service]
	// chat is the Human Messaging profile (chat.go); nil until AttachChat.
	chat atomic.Pointer[chat.Service]
	// commands holds the gateway's ad-hoc command sessions (route_adhoc.go).
	commands adhoc.Sessions

	// infos holds built endpoint disco#info answers (infocache.go).
	infos hotpath.Infos

	gatewayIQ        map[iqKey]iqHandler
	endpointIQ       map[iqKey]iqHandler
	gatewayFeatures  []string
	endpointFeatures []string
	// policyFeatures are the surfaces' gateway features that depend on
	// the policy in force (buildRoutes).
	policyFeatures []func(*policy.Policy) []string

	// connected is closed and replaced on each state change; tests and
	// the CLI wait on it.
	mu        sync.Mutex
	connected bool
	notify    chan struct{}
}

// New builds a Gateway from its options and an open store.
func New(opts Options, store *db.Store, log *slog.Logger) *Gateway {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	g := &Gateway{
		opts:          opts,
		store:         store,
		log:           log,
		domain:        opts.Domain,
		workers:       make(chan struct{}, maxWorkers),
		pending:       newPendingIQs(maxPendingIQs),
		limiter:       newLimiter(opts.RateLimit, float64(opts.RateBurst)),
		domainLimiter: newLimiter(opts.DomainRateLimit, float64(opts.DomainRateBurst)),
		notify:        make(chan struct{}),

		writeTimeout: replyTimeout,
		dir: &directory.Service{
			Store:         store,
			Name:          opts.Name,
			PageMax:       opts.PageMax,
			ReplaySeconds: opts.RequestReplaySeconds,
			ColdStart:     opts.ColdStart,
		},
	}
	g.dial = g.dialServer
	g.policy.Store(opts.Policy)
	g.buildRoutes()
	// The metrics label of every routed namespace, from the same table.
	metrics.UseIQKinds(metricsKinds(surfaces))
	return g
}

// features merges feature lists, sorted and without duplicates, as XEP-0115
// would order them.
func features(lists ...[]string) []string {
	seen := map[string]bool{}
	var out []string
	for _, l := range lists {
		for _, f := range l {
			if !seen[f] {
				seen[f] = true
				out = append(out, f)
			}
		}
	}
	sortStrings(out)
	return out
}

// SetPolicy swaps in a new policy; stanzas being handled finish with the old
// one, and every later stanza sees the new one.
func (g *Gateway) SetPolicy(p *policy.Policy) {
	g.policy.Store(p)
}

// Policy returns the policy in force.
func (g *Gateway) Policy() *policy.Policy {
	return g.policy.Load()
}

func (g *Gateway) setConnected(v bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.connected = v
	close(g.notify)
	g.notify = make(chan struct{})
}

// Connected reports whether a component stream is up, and a channel closed
// at the next change.
func (g *Gateway) Connected() (bool, <-chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.connected, g.notify
}

// sendStanza writes one stanza on the live stream, from any goroutine, or
// fails with ErrStreamLost when there is none (session.write).
func (g *Gateway) sendStanza(r xml.TokenReader) error {
	g.pending.mu.Lock()
	s := g.pending.sess
	g.pending.mu.Unlock()
	if s == nil {
		return ErrStreamLost
	}
	err := s.write(r)
	if compstream.IsTooLarge(err) {
		g.log.Error("stanza over the size limit not sent", "limit", wire.MaxStanzaBytes)
	}
	return err
}

// WaitConnected blocks until a stream is up or ctx ends.
func (g *Gateway) WaitConnected(ctx context.Context) error {
	for {
		up, ch := g.Connected()
		if up {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
