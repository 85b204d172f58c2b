package db_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"agentgw/db"
)

// TestMigrationBacksUpFirst opens a frozen version-1 database: Open copies
// it to <db>.pre-<new version> before migrating, the copy still has the old
// schema and is private, and Migrated says both. A second old database whose
// .pre-N name is taken gets .pre-N.1, leaving the first copy alone. A new
// file, and a current one, are not copied.
func TestMigrationBacksUpFirst(t *testing.T) {
	sqliteOnly(t, "SQLite migrations and their file backup")
	ctx := context.Background()
	sqlText, err := os.ReadFile("testdata/schema-v1.sql")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "agentgw.db")
	execRaw(t, path, string(sqlText))

	s, err := db.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	want := db.Migration{From: 1, To: db.SchemaVersion(), Backup: fmt.Sprintf("%s.pre-%d", path, db.SchemaVersion())}
	if got := s.Migrated(); got != want {
		t.Errorf("Migrated() = %+v, want %+v", got, want)
	}
	s.Close()
	if got := userVersion(t, want.Backup); got != 1 {
		t.Errorf("the backup has schema version %d, want 1", got)
	}
	if fi, err := os.Stat(want.Backup); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("backup: %v, mode %v, want 0600", err, fi.Mode().Perm())
	}

	// Opened again: current, nothing copied.
	s, err = db.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Migrated(); got != (db.Migration{From: db.SchemaVersion(), To: db.SchemaVersion()}) {
		t.Errorf("Migrated() of a current database = %+v", got)
	}
	s.Close()

	// The same name again: the first backup is kept.
	first, err := os.ReadFile(want.Backup)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(path)
	os.Remove(path + "-wal")
	os.Remove(path + "-shm")
	execRaw(t, path, string(sqlText))
	s, err = db.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Migrated().Backup; got != want.Backup+".1" {
		t.Errorf("second backup at %q, want %q", got, want.Backup+".1")
	}
	s.Close()
	if again, _ := os.ReadFile(want.Backup); string(again) != string(first) {
		t.Errorf("the first backup was overwritten")
	}

	// A new file gets the schema and no backup.
	fresh := filepath.Join(dir, "new.db")
	s, err = db.Open(ctx, fresh)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Migrated(); got != (db.Migration{From: 0, To: db.SchemaVersion()}) {
		t.Errorf("Migrated() of a new file = %+v", got)
	}
	s.Close()
	if matches, _ := filepath.Glob(fresh + ".pre-*"); len(matches) > 0 {
		t.Errorf("a new file was backed up: %v", matches)
	}
}
