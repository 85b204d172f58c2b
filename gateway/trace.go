package gateway

import (
	"crypto/rand"
	"encoding/base64"
	"log/slog"
	"net"
	"sync/atomic"
)

// traceConn logs the XML of a stream at debug level when debug_xml is set.
// It stays silent until start is called, after the handshake, so the
// secret-derived handshake digest is never logged.
type traceConn struct {
	net.Conn
	log     *slog.Logger
	enabled bool
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
	return c.Conn.Write(b)
}

// randomID returns an unpredictable stanza id (128 bits).
func randomID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}
