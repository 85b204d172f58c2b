// Package compstream is the gateway's component stream below routing:
// the connection's buffered writes under per-write deadlines, the reads
// and the stream header, the byte writers of answer stanzas, the wire-size
// bound of every stanza, and the memory released when the stream is idle.
// The gateway (package gateway) routes; it calls this package to read and
// write.
package compstream

import (
	"bufio"
	"bytes"
	"encoding/xml"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// StanzaBuffer is the size of the buffer that holds one outgoing stanza
// until its end, so that it leaves in one write (one TCP segment on
// loopback, where the MTU is 64 KiB). It covers the stanzas the gateway
// sends most: a 100-row search page is about 27 KB, a 50-item directory
// page 7.5 KB. A larger stanza leaves in writes of this size.
const StanzaBuffer = 64 << 10

// Conn is the component stream's connection. Every write gets its own
// deadline, so a stalled server cannot block senders forever; a write
// that times out breaks the stream (the gateway then reconnects).
//
// mellium's encoder writes in 4 KiB pieces, so a 27 KB search result would
// leave as seven writes and seven TCP segments. Between Hold and Flush
// (around one stanza) writes are gathered in a buffer and leave at the
// stanza's end, in one write under one deadline.
//
// It also logs the XML of the stream at debug level when debug_xml is set.
// It stays silent until Start is called, after the handshake, so the
// secret-derived handshake digest is never logged.
type Conn struct {
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
	// later holds whole stanzas the read loop answered (WriteLater), sent
	// before the next read or the next other write, so that the answers
	// to requests that arrived together leave in one write.
	later    []byte
	laterErr error

	// in is the read buffer (Reader); head keeps the first bytes read
	// until started is set, for the stream header (StreamHeader). Only the
	// reading goroutine uses them.
	in      *bufio.Reader
	head    []byte
	started bool
}

// New returns conn as the component stream's connection: each write is
// bounded by timeout, and the stream's XML is logged to log at debug
// level once Start is called if debugXML is set.
func New(conn net.Conn, log *slog.Logger, debugXML bool, timeout time.Duration) *Conn {
	return &Conn{Conn: conn, log: log, enabled: debugXML, timeout: timeout}
}

// Start begins logging the stream's XML (if debug_xml is set): called
// after the handshake.
func (c *Conn) Start() { c.on.Store(c.enabled) }

// readBuffer is the size of the buffer reads come through.
const readBuffer = 32 << 10

// maxHead bounds what head keeps of the first bytes read.
const maxHead = 8 << 10

// Reader is the buffer every read comes through. mellium's decoder reads
// the handshake from it a byte at a time (Conn is an io.ByteReader, so
// encoding/xml adds no buffer of its own), which leaves whatever the server
// sent after the handshake here, for the stanza reader (stanzaread).
func (c *Conn) Reader() *bufio.Reader {
	if c.in == nil {
		c.in = bufio.NewReaderSize(socketReader{c}, readBuffer)
	}
	return c.in
}

func (c *Conn) Read(b []byte) (int, error) { return c.Reader().Read(b) }

// ReadByte makes Conn an io.ByteReader (see Reader).
func (c *Conn) ReadByte() (byte, error) { return c.Reader().ReadByte() }

// StreamHeader returns the server's stream header as xml.Decoder.RawToken
// reads it (names not resolved) from the first bytes the stream gave, and
// stops keeping them. Only the reading goroutine calls it.
func (c *Conn) StreamHeader() (xml.StartElement, error) {
	c.started = true
	head := c.head
	c.head = nil
	d := xml.NewDecoder(bytes.NewReader(head))
	for {
		tok, err := d.RawToken()
		if err != nil {
			return xml.StartElement{}, fmt.Errorf("stream header: %w", err)
		}
		if st, ok := tok.(xml.StartElement); ok {
			return st.Copy(), nil
		}
	}
}

// socketReader is the reader under Conn's buffer: it sends the queued
// answers (WriteLater) before it waits for the socket, and logs what the
// socket gave.
type socketReader struct{ c *Conn }

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

func (c *Conn) Write(b []byte) (int, error) {
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

// maxLater bounds the bytes WriteLater gathers before it writes them.
const maxLater = StanzaBuffer

// WriteLater queues b, one whole stanza, to leave before the connection is
// next read or written: only the read loop calls it, for the answers it
// writes itself (the gateway's fast path), so an answer waits at most
// until the read loop has handled what it has already received. An error
// is that of an earlier queued write, which broke the stream.
func (c *Conn) WriteLater(b []byte) error {
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

// flushLater writes what WriteLater queued.
func (c *Conn) flushLater() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.laterFirst()
}

// laterFirst writes what WriteLater queued, ahead of anything else; c.mu
// is held. Its error sticks.
func (c *Conn) laterFirst() error {
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
func (c *Conn) writeNow(b []byte) (int, error) {
	if err := c.Conn.SetWriteDeadline(time.Now().Add(c.timeout)); err != nil {
		return 0, err
	}
	return c.Conn.Write(b)
}

// Hold gathers the writes that follow until Flush.
func (c *Conn) Hold() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.buf == nil {
		c.buf = bufio.NewWriterSize(deadlineWriter{c}, StanzaBuffer)
	}
	c.held = true
}

// Flush writes what was gathered since Hold, in one write, and ends the
// hold. A write error sticks: every later Flush fails the same way, as
// mellium's own encoder does.
func (c *Conn) Flush() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.held = false
	if c.buf == nil {
		return nil
	}
	return c.buf.Flush()
}

// deadlineWriter is the writer under the stanza buffer: Conn.writeNow,
// called with Conn.mu held.
type deadlineWriter struct{ c *Conn }

func (w deadlineWriter) Write(b []byte) (int, error) { return w.c.writeNow(b) }
