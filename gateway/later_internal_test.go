package gateway

import (
	"io"
	"log/slog"
	"net"
	"testing"
	"time"
)

// TestWriteLater: stanzas queued by the read loop leave together, in one
// write, before the connection is next read, and ahead of any other write.
func TestWriteLater(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	cc := &countingConn{Conn: a}
	c := &traceConn{Conn: cc, log: slog.New(slog.NewTextHandler(io.Discard, nil)), timeout: 5 * time.Second}
	got := make(chan string, 4)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := b.Read(buf)
			if err != nil {
				close(got)
				return
			}
			got <- string(buf[:n])
		}
	}()
	for _, s := range []string{"<a/>", "<b/>"} {
		if err := c.writeLater([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	if w, _ := cc.take(); w != 0 {
		t.Fatalf("%d writes before a read or another write", w)
	}
	// A read sends them first, in one write.
	go b.Write([]byte("x"))
	buf := make([]byte, 1)
	if _, err := c.Read(buf); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s != "<a/><b/>" {
		t.Errorf("first write %q", s)
	}
	if w, _ := cc.take(); w != 1 {
		t.Errorf("%d writes for two queued stanzas", w)
	}
	// Another write sends what was queued ahead of itself.
	if err := c.writeLater([]byte("<c/>")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("<d/>")); err != nil {
		t.Fatal(err)
	}
	if s := <-got + <-got; s != "<c/><d/>" {
		t.Errorf("then %q", s)
	}
}
