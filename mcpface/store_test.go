package mcpface_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"agentgw/internal/pgtest"
	"agentgw/mcpface"
	"agentgw/mcpface/account"
)

func openStore(t *testing.T, path string) *mcpface.Store {
	t.Helper()
	s, err := mcpface.OpenStore(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestStoreIsPrivate: the message store, its -wal and -shm are 0600 with
// umask 022, and an exposed existing store is refused, naming the file.
func TestStoreIsPrivate(t *testing.T) {
	pgtest.SQLiteOnly(t, "file modes")
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	path := filepath.Join(t.TempDir(), "mcp.db")
	s := openStore(t, path)
	if _, _, err := s.Push(context.Background(), "a@example.org", account.MessageResponse{Success: true, Body: "hi"}, 10); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		info, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if m := info.Mode().Perm(); m != 0o600 {
			t.Errorf("%s: mode %04o, want 0600", filepath.Base(p), m)
		}
	}
	s.Close()
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := mcpface.OpenStore(context.Background(), path); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("exposed store: %v", err)
	}
}
