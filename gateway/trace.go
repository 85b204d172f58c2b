package gateway

import (
	"bufio"
	"crypto/rand"
	"encoding/base64"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// stanzaBuffer is the size of the buffer that holds one outgoing stanza
// until its end, so that it leaves in one write (one TCP segment on
// loopback, where the MTU is 64 KiB). It covers the stanzas the gateway
// sends most: a 100-row search page is about 27 KB, a 50-item directory
// page 7.5 KB. A larger stanza leaves in writes of this size.
const stanzaBuffer = 64 << 10

// traceConn is the component stream's connection. Every write gets its own
// deadline (timeout, replyTimeout unless a test shortens it), so a stalled
// server cannot block senders forever; a write that times out breaks the
// stream (session.write), which then reconnects.
//
// mellium's encoder writes in 4 KiB pieces, so a 27 KB search result would
// leave as seven writes and seven TCP segments. Between hold and flush
// (session.sendWhole, around one stanza) writes are gathered in a buffer
// and leave at the stanza's end, in one write under one deadline.
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

	// mu orders every write to Conn; held, buf, later and laterErr are
	// under it.
	mu   sync.Mutex
	held bool
	buf  *bufio.Writer // over deadlineWriter, made on the first hold
	// later holds whole stanzas the read loop answered (writeLater), sent
	// before the next read or the next other write, so that the answers
	// to requests that arrived together leave in one write.
	later    []byte
	laterErr error

	// in is the read buffer (reader); head keeps the first bytes read
	// until started is set, for the stream header (streamHeader). Only the
	// reading goroutine uses them.
	in      *bufio.Reader
	head    []byte
	started bool
}

func (c *traceConn) start() { c.on.Store(c.enabled) }

// readBuffer is the size of the buffer reads come through.
const readBuffer = 32 << 10

// maxHead bounds what head keeps of the first bytes read.
const maxHead = 8 << 10

// reader is the buffer every read comes through. mellium's decoder reads
// the handshake from it a byte at a time (traceConn is an io.ByteReader, so
// encoding/xml adds no buffer of its own), which leaves whatever the server
// sent after the handshake here, for the stanza reader (stanzaread).
func (c *traceConn) reader() *bufio.Reader {
	if c.in == nil {
		c.in = bufio.NewReaderSize(socketReader{c}, readBuffer)
	}
	return c.in
}

func (c *traceConn) Read(b []byte) (int, error) { return c.reader().Read(b) }

// ReadByte makes traceConn an io.ByteReader (see reader).
func (c *traceConn) ReadByte() (byte, error) { return c.reader().ReadByte() }

// socketReader is the reader under traceConn's buffer: it sends the
// queued answers (writeLater) before it waits for the socket, and logs what
// the socket gave.
type socketReader struct{ c *traceConn }

func (r socketReader) Read(b []byte) (int, error) {
	c := r.c
	if err := c.flushLater(); err != nil {
		// The stream is broken: end the read loop, which reconnects.
		return 0, err
	}
	n, err := c.Conn.Read(b)
	if n > 0 && c.on.Load() {
		c.log.Debug("xml in", "data", string(b[:n]))
	}
	if n > 0 && !c.started && len(c.head) < maxHead {
		c.head = append(c.head, b[:min(n, maxHead-len(c.head))]...)
	}
	return n, err
}

func (c *traceConn) Write(b []byte) (int, error) {
	if c.on.Load() {
		c.log.Debug("xml out", "data", string(b))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.laterFirst(); err != nil {
		return 0, err
	}
	if c.held {
		return c.buf.Write(b)
	}
	return c.writeNow(b)
}

// maxLater bounds the bytes writeLater gathers before it writes them.
const maxLater = stanzaBuffer

// writeLater queues b, one whole stanza, to leave before the connection is
// next read or written: only the read loop calls it, for the answers it
// writes itself (fastpath.go), so an answer waits at most until the read
// loop has handled what it has already received. An error is that of an
// earlier queued write, which broke the stream.
func (c *traceConn) writeLater(b []byte) error {
	if c.on.Load() {
		c.log.Debug("xml out", "data", string(b))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.laterErr != nil {
		return c.laterErr
	}
	c.later = append(c.later, b...)
	if len(c.later) >= maxLater {
		return c.laterFirst()
	}
	return nil
}

// flushLater writes what writeLater queued.
func (c *traceConn) flushLater() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.laterFirst()
}

// laterFirst writes what writeLater queued, ahead of anything else; c.mu
// is held. Its error sticks.
func (c *traceConn) laterFirst() error {
	if c.laterErr != nil {
		return c.laterErr
	}
	if len(c.later) == 0 {
		return nil
	}
	_, err := c.writeNow(c.later)
	c.later = c.later[:0]
	if cap(c.later) > 4*maxLater {
		c.later = nil
	}
	c.laterErr = err
	return err
}

// writeNow writes b under its own deadline; c.mu is held.
func (c *traceConn) writeNow(b []byte) (int, error) {
	if err := c.Conn.SetWriteDeadline(time.Now().Add(c.timeout)); err != nil {
		return 0, err
	}
	return c.Conn.Write(b)
}

// hold gathers the writes that follow until flush.
func (c *traceConn) hold() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.buf == nil {
		c.buf = bufio.NewWriterSize(deadlineWriter{c}, stanzaBuffer)
	}
	c.held = true
}

// flush writes what was gathered since hold, in one write, and ends the
// hold. A write error sticks: every later flush fails the same way, as
// mellium's own encoder does.
func (c *traceConn) flush() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.held = false
	if c.buf == nil {
		return nil
	}
	return c.buf.Flush()
}

// deadlineWriter is the writer under the stanza buffer: traceConn.writeNow,
// called with traceConn.mu held.
type deadlineWriter struct{ c *traceConn }

func (w deadlineWriter) Write(b []byte) (int, error) { return w.c.writeNow(b) }

// randomID returns an unpredictable stanza id (128 bits).
func randomID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}
