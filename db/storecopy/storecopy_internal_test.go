package storecopy

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"agentgw/db"
	"agentgw/db/internal/storetx"
	"agentgw/internal/pgtest"
)

// TestCopyCoversSchema: every table of the schema is either copied or
// derived, so that a table added later cannot be left behind by Copy
// unnoticed.
func TestCopyCoversSchema(t *testing.T) {
	ctx := context.Background()
	s, err := db.Open(ctx, pgtest.Location(t, filepath.Join(t.TempDir(), "gw.db")))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	q := `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`
	if pgtest.OnPostgres() {
		q = `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`
	}
	tx, err := storetx.Of(s).BeginRead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	rows, err := tx.Query(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		n++
		if !slices.Contains(copyTables, name) && !slices.Contains(derivedTables, name) {
			t.Errorf("table %s is neither in copyTables nor in derivedTables (storecopy.go)", name)
		}
	}
	if err := rows.Err(); err != nil || n < len(copyTables) {
		t.Fatalf("%d tables listed, %v", n, err)
	}
}
