package db_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"agentgw/db"
)

// TestNewDatabaseIsPrivate: a database the store creates, and its WAL
// and shared-memory files, have mode 0600 even under a permissive umask.
func TestNewDatabaseIsPrivate(t *testing.T) {
	sqliteOnly(t, "file modes")
	old := syscall.Umask(0o002)
	defer syscall.Umask(old)
	path := filepath.Join(t.TempDir(), "new.db")
	s, err := db.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// A write makes sure the WAL exists.
	if _, err := s.RegisterVersion(context.Background(), db.Version{JID: "a@agents.example", Version: "1", Canonical: []byte("{}"), Name: "a"}, "admin"); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		info, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if m := info.Mode().Perm(); m != 0o600 {
			t.Errorf("%s has mode %04o, want 0600", filepath.Base(p), m)
		}
	}
}

// TestBackupAndExposedDatabase: a backup is private too, and an existing
// database that group or others may read is refused, naming it.
func TestBackupAndExposedDatabase(t *testing.T) {
	sqliteOnly(t, "file modes")
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	dir := t.TempDir()
	path := filepath.Join(dir, "gw.db")
	s, err := db.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(dir, "copy.db")
	if err := s.Backup(context.Background(), dest); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if info, err := os.Stat(dest); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("backup: %v %v", info.Mode(), err)
	}
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Open(context.Background(), path); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("exposed database opened: %v", err)
	}
}
