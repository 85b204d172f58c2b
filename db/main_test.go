package db_test

import (
	"fmt"
	"os"
	"testing"

	"agentgw/internal/pgtest"
)

// engineEnv is set to "postgres" for the second pass of TestMain.
const engineEnv = "AGENTGW_DB_TEST_ENGINE"

// TestMain runs the package's tests twice: on SQLite, then on PostgreSQL
// (internal/pgtest: AGENTGW_TEST_POSTGRES, or a throwaway cluster when the
// postgresql package is installed). Tests that open their store with
// newStore or newLocation run on both; those about SQLite's file, pragmas
// and migrations skip the second pass (sqliteOnly). Set
// AGENTGW_DB_TEST_ENGINE=sqlite or =postgres to run one pass.
func TestMain(m *testing.M) {
	only := os.Getenv(engineEnv)
	if os.Getenv(helperEnv) != "" {
		// A helper process of the pass that started it.
		os.Exit(m.Run())
	}
	code := 0
	if only == "" || only == "sqlite" {
		os.Setenv(engineEnv, "sqlite")
		code = m.Run()
	}
	if only == "" || only == "postgres" {
		if ok, why := pgtest.Available(); ok {
			fmt.Println("--- db tests on PostgreSQL")
			os.Setenv(engineEnv, "postgres")
			if c := m.Run(); c != 0 {
				code = c
			}
		} else if os.Getenv("AGENTGW_REQUIRE_SERVERS") != "" {
			fmt.Println("no PostgreSQL:", why)
			code = 1
		} else {
			fmt.Println("--- db tests on PostgreSQL skipped:", why)
		}
	}
	pgtest.Stop()
	os.Exit(code)
}

// onPostgres reports whether this is the PostgreSQL pass.
func onPostgres() bool { return os.Getenv(engineEnv) == "postgres" }

// sqliteOnly skips t in the PostgreSQL pass, saying why.
func sqliteOnly(t testing.TB, why string) {
	t.Helper()
	if onPostgres() {
		t.Skip("SQLite only: " + why)
	}
}
