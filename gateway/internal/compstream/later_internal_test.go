package compstream

import (
	"io"
	"log/slog"
	"net"
	"sync"
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
	c := New(cc, slog.New(slog.NewTextHandler(io.Discard, nil)), false, 5*time.Second)
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
		if err := c.WriteLater([]byte(s)); err != nil {
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
	if err := c.WriteLater([]byte("<c/>")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("<d/>")); err != nil {
		t.Fatal(err)
	}
	if s := <-got + <-got; s != "<c/><d/>" {
		t.Errorf("then %q", s)
	}
}

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
