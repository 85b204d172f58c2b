package db_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"agentgw/db"
)

// TestLegacyMCPStoreConverts: a file of `agentgw mcp`'s own former schema
// (testdata/upgrade/mcp-v1.db and mcp-v2.db, as those versions wrote them)
// opens as a store with exactly the schema of a new one, after a backup of
// the old file. Its rows are checked by the root package's
// TestUpgradeKeepsQueuedMessages and TestUpgradeKeepsMCPTasks, through
// `agentgw mcp`'s own code.
func TestLegacyMCPStoreConverts(t *testing.T) {
	sqliteOnly(t, "the old store was a SQLite file")
	fresh := filepath.Join(t.TempDir(), "fresh.db")
	openAt(t, fresh)
	want, current := schemaOf(t, fresh), userVersion(t, fresh)
	for _, v := range []int{1, 2} {
		t.Run(filepath.Base(legacyFixture(v)), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "mcp.db")
			copyFileTo(t, legacyFixture(v), path)
			s, err := db.Open(context.Background(), path)
			if err != nil {
				t.Fatal(err)
			}
			m := s.Migrated()
			s.Close()
			if m.From != v || m.To != current || m.Backup == "" {
				t.Errorf("Migrated() = %+v", m)
			}
			if got := userVersion(t, m.Backup); got != v {
				t.Errorf("the backup has version %d, want %d", got, v)
			}
			got := schemaOf(t, path)
			// An AUTOINCREMENT table of the old schema leaves SQLite's
			// sequence table behind; it cannot be dropped, and is empty.
			delete(got, "table sqlite_sequence")
			for name, sqlText := range want {
				if got[name] != sqlText {
					t.Errorf("%s differs:\nconverted: %s\n    fresh: %s", name, got[name], sqlText)
				}
			}
			for name := range got {
				if _, ok := want[name]; !ok {
					t.Errorf("%s exists only after conversion", name)
				}
			}
		})
	}
}

func legacyFixture(v int) string {
	return filepath.Join("..", "testdata", "upgrade", fmt.Sprintf("mcp-v%d.db", v))
}

// copyFileTo copies the file src to dst, private.
func copyFileTo(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
