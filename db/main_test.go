package db_test

import (
	"os"
	"testing"

	"agentgw/internal/pgtest"
)

// TestMain runs the package's tests twice: on SQLite, then on PostgreSQL
// (internal/pgtest: AGENTGW_TEST_POSTGRES, or a throwaway cluster when the
// postgresql package is installed). Tests that open their store with
// newStore or newLocation run on both; those about SQLite's file, pragmas,
// plans and migrations skip the second pass (sqliteOnly). Set
// AGENTGW_TEST_ENGINE=sqlite or =postgres to run one pass.
func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		// A helper process of the pass that started it.
		os.Exit(m.Run())
	}
	os.Exit(pgtest.RunBoth(m))
}

// onPostgres reports whether this is the PostgreSQL pass.
func onPostgres() bool { return pgtest.OnPostgres() }

// sqliteOnly skips t in the PostgreSQL pass, saying why.
func sqliteOnly(t testing.TB, why string) {
	t.Helper()
	pgtest.SQLiteOnly(t, why)
}
