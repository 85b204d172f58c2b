package storecopy

import (
	"os"
	"testing"

	"agentgw/internal/pgtest"
)

// TestMain runs the package's tests on SQLite, then on PostgreSQL
// (internal/pgtest).
func TestMain(m *testing.M) { os.Exit(pgtest.RunBoth(m)) }
