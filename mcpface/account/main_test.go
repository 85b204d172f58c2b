package account

import (
	"os"
	"testing"
	"time"

	"agentgw/internal/pgtest"
	"agentgw/internal/testwait"
)

// TestMain runs the package's tests twice: on SQLite, then on PostgreSQL
// (internal/pgtest), so that the message queue (db/mcpstate.go) is
// tested on both engines. Tests that open their store at pgtest.Location
// run on both; set AGENTGW_TEST_ENGINE=sqlite or =postgres to run one
// pass.
func TestMain(m *testing.M) { os.Exit(pgtest.RunBoth(m)) }

func waitFor(t *testing.T, what string, check func() bool) {
	t.Helper()
	testwait.Until(t, 10*time.Second, what, check)
}
