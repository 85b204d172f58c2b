package mcpface

import (
	"os"
	"testing"

	"agentgw/internal/pgtest"
)

// TestMain runs the package's tests twice: on SQLite, then on PostgreSQL
// (internal/pgtest), so that the MCP face's store (db/mcpstate) is
// tested on both engines through the face itself. Tests that open their
// store at pgtest.Location run on both; set AGENTGW_TEST_ENGINE=sqlite or
// =postgres to run one pass.
func TestMain(m *testing.M) { os.Exit(pgtest.RunBoth(m)) }
