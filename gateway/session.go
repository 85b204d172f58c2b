package gateway

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"time"

	"agentgw/db"
	"agentgw/gateway/internal/compstream"
	"agentgw/metrics"
	"agentgw/ping"

	"mellium.im/xmpp"
	"mellium.im/xmpp/component"
	"mellium.im/xmpp/stanza"
	"mellium.im/xmpp/stream"
)

// ErrNotAuthorized means the server rejected the component secret. It is
// fatal: retrying with the same secret cannot succeed.
var ErrNotAuthorized = errors.New("gateway: the server rejected the component secret (not-authorized)")

// ErrConflict means the server refused the stream because another
// connection holds the component domain (Prosody accepts one per domain):
// another gateway on the same store is serving it.
var ErrConflict = errors.New("gateway: another connection holds the component domain (conflict)")

// conflictRetry is how often a gateway whose stream met <conflict/> tries
// again: it waits to take over from the connected gateway.
const conflictRetry = time.Second

// Run connects and serves until ctx ends or the secret is rejected,
// reconnecting after every stream loss with capped exponential backoff and
// jitter. It returns nil when ctx ends.
//
// A stream refused with <conflict/> (another gateway holds the domain,
// on a server that accepts one connection per component) is no fault:
// the gateway logs once, at info, that it is waiting, and tries again
// every conflictRetry, so that it takes over within about a second of the
// connected one going.
func (g *Gateway) Run(ctx context.Context) error {
	delay := min(backoffMin, g.opts.ReconnectMax)
	waiting := false
	for {
		started := time.Now()
		err := g.connectAndServe(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, ErrNotAuthorized) {
			g.log.Error("component stream refused; not retrying", "server", g.opts.Server, "err", err)
			return err
		}
		if errors.Is(err, ErrConflict) {
			if !waiting {
				g.log.Info("another gateway is connected for the component domain; waiting to take over",
					"domain", g.domain.String(), "server", g.opts.Server, "retry", conflictRetry)
				waiting = true
			}
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(conflictRetry):
			}
			continue
		}
		waiting = false
		if time.Since(started) >= backoffReset {
			delay = min(backoffMin, g.opts.ReconnectMax)
		}
		// Equal jitter: half the delay fixed, half random, so a restarted
		// server is not hit by every gateway at the same instant.
		wait := delay/2 + rand.N(delay/2+1)
		metrics.StreamReconnects.Inc()
		g.log.Warn("component stream down; reconnecting", "server", g.opts.Server, "err", err, "in", wait.Round(time.Millisecond))
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		delay = max(min(delay*2, g.opts.ReconnectMax), time.Millisecond)
	}
}

// connectAndServe runs one component stream to its end.
func (g *Gateway) connectAndServe(ctx context.Context) error {
	hctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
	conn, err := g.dial(hctx)
	if err != nil {
		cancel()
		return err
	}
	cancel()
	// The handshake is bounded by a connection deadline rather than by a
	// context that ends when it returns: mellium arms a goroutine on the
	// context that, racing with its own cleanup, can set a past deadline on
	// the live connection (see session.send).
	tc := compstream.New(conn, g.log, g.opts.DebugXML, g.writeTimeout)
	_ = conn.SetDeadline(time.Now().Add(handshakeTimeout))
	sess, err := component.NewSession(ctx, g.domain, g.opts.Secret, tc)
	_ = conn.SetDeadline(time.Time{})
	if err != nil {
		conn.Close()
		if errors.Is(err, stream.NotAuthorized) {
			return ErrNotAuthorized
		}
		if errors.Is(err, stream.Conflict) {
			return ErrConflict
		}
		return fmt.Errorf("component handshake: %w", err)
	}
	tc.Start()
	return g.serve(ctx, sess, tc)
}

// serve runs the read loop and the keepalive on an established session and
// cleans up after it: pending outgoing IQs fail, and the state flips back.
func (g *Gateway) serve(ctx context.Context, sess *xmpp.Session, conn *compstream.Conn) error {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s := &session{g: g, sess: sess, ctx: sctx, conn: conn, broken: make(chan struct{}),
		quickQ: make(chan func(), quickReplies), jobs: make(chan *Request)}
	s.out = conn
	s.memCtx = db.MemoryOnly(sctx)
	s.touch()
	go s.quickSender()
	for range warmWorkers {
		go s.warmWorker()
	}
	g.pending.open(s)
	// Presence starts before the read loop, so no presence stanza finds it
	// missing; its first pass announces available to subscribers.
	s.presence = startPresence(s)
	g.setConnected(true)
	g.log.Info("component stream up", "domain", g.domain.String(), "server", g.opts.Server)

	done := make(chan error, 1)
	go func() { done <- s.readLoop() }()
	go s.keepalive(g.opts.PingInterval, g.opts.PingTimeout, conn)
	go s.releaseWhenIdle(idleRelease, func() {
		// The kept answers and the caches go first, so that the
		// collection frees them: each is rebuilt by the next requests
		// that need it, and each held live objects made during the
		// burst, scattered over pages that the release could not hand
		// back (docs/BENCHMARKS.md, "Spread reads and memory after
		// load").
		s.dropMemo()
		s.jids.drop()
		g.infos.Drop()
		compstream.ReleaseMemory()
	})

	var err error
	select {
	case err = <-done:
	case <-s.broken:
		// A write failed (session.write) and closed the connection; Serve
		// ends on its own, but nothing more is waited for.
		err = s.brokenErr
	case <-ctx.Done():
		// Orderly shutdown: tell subscribers the endpoints are going away
		// (bounded in time), close our stream, then give the server a
		// moment to close its own before dropping the connection.
		s.presence.shutdown()
		_ = sess.Close()
		select {
		case err = <-done:
		case <-time.After(time.Second):
		}
	}
	cancel()
	conn.Close()
	g.pending.close(ErrStreamLost)
	g.setConnected(false)
	if err == nil {
		err = errors.New("stream closed by server")
	}
	return err
}

// dialServer opens the transport: plain TCP to loopback (config validation refuses
// anything else unless insecure_plaintext is set), or direct TLS with
// certificate verification.
func (g *Gateway) dialServer(ctx context.Context) (net.Conn, error) {
	d := &net.Dialer{KeepAlive: 30 * time.Second}
	if !g.opts.TLS {
		conn, err := d.DialContext(ctx, "tcp", g.opts.Server)
		if err != nil {
			return nil, err
		}
		// Configuration accepted the name; check where it led, since a
		// resolver can map "localhost" anywhere.
		if tcp, ok := conn.RemoteAddr().(*net.TCPAddr); !g.opts.InsecurePlaintext && (!ok || !tcp.IP.IsLoopback()) {
			conn.Close()
			return nil, fmt.Errorf("plaintext component stream refused: %s is not a loopback address", conn.RemoteAddr())
		}
		if g.opts.InsecurePlaintext {
			g.log.Warn("component stream is plaintext to a non-loopback server (insecure_plaintext)", "server", g.opts.Server)
		}
		return conn, nil
	}
	host, _, _ := net.SplitHostPort(g.opts.Server)
	tcfg := &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}
	if g.opts.TLSServerName != "" {
		tcfg.ServerName = g.opts.TLSServerName
	}
	if g.opts.TLSCAFile != "" {
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		pem, err := os.ReadFile(g.opts.TLSCAFile)
		if err != nil {
			return nil, fmt.Errorf("read tls_ca_file: %w", err)
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, errors.New("tls_ca_file holds no PEM certificate")
		}
		tcfg.RootCAs = pool
	}
	td := &tls.Dialer{NetDialer: d, Config: tcfg}
	return td.DialContext(ctx, "tcp", g.opts.Server)
}

// keepalive pings the gateway's own domain after a quiet interval: the IQ
// goes through the server and comes back to us, proving the whole path.
// An unanswered ping closes the connection, which ends Serve and so starts a
// reconnect. Pings never overlap.
func (s *session) keepalive(interval, timeout time.Duration, conn net.Conn) {
	tick := time.NewTicker(max(interval/4, 10*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-tick.C:
		}
		if time.Since(s.lastIn()) < interval {
			continue
		}
		ctx, cancel := context.WithTimeout(s.ctx, timeout)
		_, err := s.g.pending.send(ctx, s, stanza.IQ{Type: stanza.GetIQ, To: s.g.domain, From: s.g.domain}, ping.Request())
		cancel()
		if err != nil && s.ctx.Err() == nil {
			s.g.log.Warn("keepalive ping failed; dropping the stream", "err", err)
			conn.Close()
			return
		}
	}
}
