package gateway

import (
	"crypto/rand"
	"encoding/base64"
	"log/slog"
	"net"
	"sync/atomic"
	"time"
)

// traceConn is the component stream's connection. Every write gets its own
// deadline (timeout, replyTimeout unless a test shortens it), so a stalled
// server cannot block senders forever; a write that times out breaks the
// stream (session.write), which then reconnects.
//
// It also logs the XML of the stream at debug level when debug_xml is set.
// It stays silent until start is called, after the handshake, so the
// secret-derived handshake digest is never logged.
type traceConn struct {
	net.Conn
	log     *slog.Logger
	enabled bool
	timeout time.Duration
	on      atomic.Bool
}

func (c *traceConn) start() { c.on.Store(c.enabled) }

func (c *traceConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 && c.on.Load() {
		c.log.Debug("xml in", "data", string(b[:n]))
	}
	return n, err
}

func (c *traceConn) Write(b []byte) (int, error) {
	if c.on.Load() {
		c.log.Debug("xml out", "data", string(b))
	}
	if err := c.Conn.SetWriteDeadline(time.Now().Add(c.timeout)); err != nil {
		return 0, err
	}
	return c.Conn.Write(b)
}

// randomID returns an unpredictable stanza id (128 bits).
func randomID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}
