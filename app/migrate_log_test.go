package app_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"agentgw/app"
)

// syncBuffer is a bytes.Buffer that serve's logger and the test may share.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestServeLogsMigrationBackup starts serve on a database of the first
// schema (testdata/upgrade): before it connects anywhere, it has copied the
// database to <db>.pre-N and logged where.
func TestServeLogsMigrationBackup(t *testing.T) {
	dir := t.TempDir()
	raw, err := os.ReadFile("../testdata/upgrade/agentgw-v1.db")
	if err != nil {
		t.Fatal(err)
	}
	dbPath := filepath.Join(dir, "agentgw.db")
	if err := os.WriteFile(dbPath, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "component.secret"), []byte("0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "agentgw.toml")
	// Port 1 on loopback: nothing listens, so serve keeps redialling until
	// the test stops it.
	body := fmt.Sprintf("[component]\ndomain = \"agents.example\"\nserver = \"127.0.0.1:1\"\nsecret_file = \"component.secret\"\n\n[database]\npath = %q\n", dbPath)
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	var log syncBuffer
	done := make(chan error, 1)
	go func() { done <- app.Serve(ctx, conf, &log) }()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(log.String(), "database migrated") && time.Now().Before(deadline) {
		select {
		case err := <-done:
			cancel()
			t.Fatalf("serve ended: %v\n%s", err, log.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	cancel()
	<-done
	out := log.String()
	var line string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "database migrated") {
			line = l
		}
	}
	if line == "" {
		t.Fatalf("no migration in the log:\n%s", out)
	}
	matches, _ := filepath.Glob(dbPath + ".pre-*")
	if len(matches) != 1 {
		t.Fatalf("backups: %v", matches)
	}
	for _, want := range []string{"from_schema=1", "backup=" + matches[0]} {
		if !strings.Contains(line, want) {
			t.Errorf("the log line lacks %q: %s", want, line)
		}
	}
}
