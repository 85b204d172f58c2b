package account_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"agentgw/internal/harness"
	"agentgw/internal/pgtest"
	"agentgw/internal/testwait"
	"agentgw/mcpface/account"

	"mellium.im/xmpp/jid"
)

// logBuf collects log lines for a test to wait on.
type logBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), s)
}

func waitFor(t *testing.T, what string, check func() bool) {
	t.Helper()
	testwait.Until(t, 60*time.Second, what, check)
}

// A connection that goes silent (the server never sees the ping) is
// dropped by the keepalive, and the account logs in again.
func TestKeepaliveDropsSilentStream(t *testing.T) {
	e := harness.StartT(t, harness.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := e.Register(ctx, "keep", e.HomeDomain, "keeppw"); err != nil {
		t.Fatal(err)
	}
	// A proxy that can stop forwarding client → server.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var mu sync.Mutex
	silent := false
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", e.ProsodyC2S)
			if err != nil {
				c.Close()
				continue
			}
			go func() { io.Copy(c, s); c.Close() }()
			go func() {
				buf := make([]byte, 4096)
				for {
					n, err := c.Read(buf)
					if err != nil {
						s.Close()
						return
					}
					mu.Lock()
					drop := silent
					mu.Unlock()
					if !drop {
						s.Write(buf[:n])
					}
				}
			}()
		}
	}()

	log := &logBuf{}
	store, _ := openStore(t, pgtest.Location(t, filepath.Join(t.TempDir(), "mcp.db")))
	acct := account.New(account.Options{
		JID: jid.MustParse("keep@" + e.HomeDomain), Password: "keeppw", Server: ln.Addr().String(),
		Queue: account.Queue{QueueMax: 10}, Store: store, Log: slog.New(slog.NewTextHandler(log, nil)),
		PingInterval: 200 * time.Millisecond, PingTimeout: 500 * time.Millisecond,
	})
	done := make(chan struct{})
	go func() { acct.Run(ctx); close(done) }()
	waitFor(t, "first login", func() bool { return log.count("xmpp stream up") == 1 })
	mu.Lock()
	silent = true
	mu.Unlock()
	waitFor(t, "ping unanswered", func() bool { return log.count("xmpp ping unanswered") >= 1 })
	waitFor(t, "stream down", func() bool { return !acct.Connected() })
	mu.Lock()
	silent = false
	mu.Unlock()
	waitFor(t, "second login", func() bool { return log.count("xmpp stream up") >= 2 && acct.Connected() })
	cancel()
	<-done
}
