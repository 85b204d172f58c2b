package mcpface

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestStoreCreateMatchesMigrations: a new store (storeCreate) and one that
// version 1 wrote, brought up by storeMigrations, have the same tables,
// columns, constraints and indexes, so that which of the two a user has
// never matters.
func TestStoreCreateMatchesMigrations(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	fresh := filepath.Join(dir, "fresh.db")
	s, err := OpenStore(ctx, fresh)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()

	old := filepath.Join(dir, "old.db")
	in, err := os.Open("../testdata/upgrade/mcp-v1.db")
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.OpenFile(old, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	in.Close()
	out.Close()
	s, err = OpenStore(ctx, old)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()

	want, got := schemaOf(t, fresh), schemaOf(t, old)
	if want != got {
		t.Errorf("migrated from version 1:\n%s\nnew:\n%s", got, want)
	}
	if !strings.Contains(want, "hash BLOB NOT NULL CHECK (length(hash) = 32)") {
		t.Errorf("mcp_task.hash is not a 32-byte BLOB:\n%s", want)
	}
}

var space = regexp.MustCompile(`\s+`)

// schemaOf is the schema of the database at path, one normalized
// statement a line, with its user_version.
func schemaOf(t *testing.T, path string) string {
	t.Helper()
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var v string
	if err := raw.QueryRow("PRAGMA user_version").Scan(&v); err != nil {
		t.Fatal(err)
	}
	rows, err := raw.Query("SELECT sql FROM sqlite_schema WHERE sql IS NOT NULL ORDER BY type, name")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	lines := []string{"user_version " + v}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		// A renamed table's name is quoted.
		s = strings.ReplaceAll(space.ReplaceAllString(s, " "), `"`, "")
		lines = append(lines, strings.ReplaceAll(strings.ReplaceAll(s, "( ", "("), " )", ")"))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

// TestStoreRefusesNewer: a store written by a newer binary is refused,
// with both versions in the error, and left as it was.
func TestStoreRefusesNewer(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "mcp.db")
	s, err := OpenStore(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	newer := storeSchema.Version() + 1
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(fmt.Sprintf("PRAGMA user_version = %d", newer)); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	_, err = OpenStore(ctx, path)
	want := fmt.Sprintf("mcp store: database schema version %d is newer than this binary supports (%d)", newer, storeSchema.Version())
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("OpenStore = %v, want an error containing %q", err, want)
	}
	if v := schemaOf(t, path); !strings.HasPrefix(v, fmt.Sprintf("user_version %d\n", newer)) {
		t.Errorf("schema after the refusal:\n%s", v)
	}
}
