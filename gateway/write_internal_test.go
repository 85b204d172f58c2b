package gateway

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"agentgw/gateway/internal/compstream"
	"agentgw/search"

	"mellium.im/xmpp/component"
	"mellium.im/xmpp/jid"
	"mellium.im/xmpp/stanza"
)

// countingConn counts the writes made on a connection and their bytes.
type countingConn struct {
	net.Conn
	mu     sync.Mutex
	writes int
	bytes  int
}

func (c *countingConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	c.writes++
	c.bytes += len(b)
	c.mu.Unlock()
	return c.Conn.Write(b)
}

// take returns the writes and bytes counted since the last take.
func (c *countingConn) take() (writes, bytes int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	writes, bytes = c.writes, c.bytes
	c.writes, c.bytes = 0, 0
	return writes, bytes
}

// handshakeServer accepts one component stream on ln, completes the
// XEP-0114 handshake and then reads and discards everything.
func handshakeServer(t *testing.T, ln net.Listener, secret string) {
	conn, err := ln.Accept()
	if err != nil {
		t.Error(err)
		return
	}
	t.Cleanup(func() { conn.Close() })
	dec := xml.NewDecoder(conn)
	for {
		tok, err := dec.Token()
		if err != nil {
			t.Error(err)
			return
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "stream" {
			break
		}
	}
	const id = "stream-1"
	io.WriteString(conn, `<?xml version='1.0'?><stream:stream xmlns='jabber:component:accept' xmlns:stream='http://etherx.jabber.org/streams' from='agents.example' id='`+id+`'>`)
	var hs struct {
		XMLName xml.Name `xml:"handshake"`
		Digest  string   `xml:",chardata"`
	}
	if err := dec.Decode(&hs); err != nil {
		t.Error(err)
		return
	}
	if sum := sha1.Sum([]byte(id + secret)); hs.Digest != hex.EncodeToString(sum[:]) {
		t.Error("bad handshake digest")
		return
	}
	io.WriteString(conn, `<handshake/>`)
	io.Copy(io.Discard, conn)
}

// TestStanzaLeavesInOneWrite: a 100-row search result, 27 KB, leaves the
// gateway in one write on the connection, where mellium's encoder alone
// writes it in 4 KiB pieces.
func TestStanzaLeavesInOneWrite(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go handshakeServer(t, ln, "secret")
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	cc := &countingConn{Conn: raw}
	tc := compstream.New(cc, slog.New(slog.DiscardHandler), false, replyTimeout)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	domain := jid.MustParse("agents.example")
	sess, err := component.NewSession(ctx, domain, []byte("secret"), tc)
	if err != nil {
		t.Fatal(err)
	}
	s := &session{sess: sess, ctx: context.Background(), out: tc}

	res := search.Result{}
	for i := range 100 {
		res.Items = append(res.Items, search.Item{JID: fmt.Sprintf("weather-forecast-%06d@agents.example", i), Nick: fmt.Sprintf("Weather Forecast Agent %06d", i)})
	}
	iq := stanza.IQ{ID: "q1", Type: stanza.ResultIQ, From: domain, To: jid.MustParse("alice@home.example/phone")}

	cc.take()
	if err := s.sendWhole(iq.Wrap(res.TokenReader())); err != nil {
		t.Fatal(err)
	}
	writes, n := cc.take()
	if n < 27_000 || n > compstream.StanzaBuffer {
		t.Fatalf("the result is %d bytes; the test wants 27 KB", n)
	}
	if writes != 1 {
		t.Errorf("a %d-byte stanza left in %d writes, want 1", n, writes)
	}

	// The same stanza straight through mellium: what the buffer saves.
	if err := s.sess.Send(s.ctx, iq.Wrap(res.TokenReader())); err != nil {
		t.Fatal(err)
	}
	if writes, _ := cc.take(); writes < 2 {
		t.Errorf("without the stanza buffer the result left in %d writes; the test cannot tell", writes)
	}

	// A small stanza after a held one still leaves at once, in one write.
	if err := s.sendWhole(iq.Wrap(nil)); err != nil {
		t.Fatal(err)
	}
	if writes, _ := cc.take(); writes != 1 {
		t.Errorf("an empty result left in %d writes, want 1", writes)
	}

	// session.write, every stanza's path: measured (compstream.Bound), then
	// encoded once and written in one write; the same bytes as sendWhole.
	s.g = &Gateway{log: slog.New(slog.DiscardHandler)}
	s.conn, s.broken = tc, make(chan struct{})
	if err := s.write(iq.Wrap(res.TokenReader())); err != nil {
		t.Fatal(err)
	}
	if writes, m := cc.take(); writes != 1 || m != n {
		t.Errorf("write: %d bytes in %d writes, want %d in 1", m, writes, n)
	}
}
