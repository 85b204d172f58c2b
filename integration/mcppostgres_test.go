package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"agentgw/internal/pgtest"
)

// mcpOnPostgres is an account whose `agentgw mcp` keeps its state in a
// PostgreSQL database of its own ([mcp] database = a postgres:// URL).
func mcpOnPostgres(t *testing.T) *mcpAccount {
	t.Helper()
	need(t)
	// accept_from = "anyone": the tests' sender is a stranger.
	return newMCPAccountWith(t, "", "anyone", fmt.Sprintf("database = %q", pgtest.URL(t)))
}

// elsewhere is a's configuration copied to a directory of its own, as on
// another machine: the same account and database URL, no file of a's.
func elsewhere(t *testing.T, a *mcpAccount) *mcpAccount {
	t.Helper()
	b := &mcpAccount{jid: a.jid, dir: t.TempDir()}
	for _, name := range []string{"mcp.toml", "account.password", "full.token", "send.token"} {
		raw, err := os.ReadFile(filepath.Join(a.dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(b.dir, name), raw, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	b.config = filepath.Join(b.dir, "mcp.toml")
	return b
}

// noStoreFile fails t if dir holds a SQLite file: the state is in
// PostgreSQL.
func noStoreFile(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".db") || strings.Contains(e.Name(), ".db-") {
			t.Errorf("%s: a store file beside the configuration", e.Name())
		}
	}
}

// TestMCPStateOnPostgres: with [mcp] database a postgres:// URL, what
// `agentgw mcp` keeps outlives it, and another copy of it, started from
// another directory (another machine) on the same database, finds it: an
// unread message, and an extension task waiting for input, which the
// other copy completes.
func TestMCPStateOnPostgres(t *testing.T) {
	onePass(t)
	need(t)
	t.Run("unread messages", func(t *testing.T) {
		a := mcpOnPostgres(t)
		m := startMCPStdio(t, a)
		dave := remoteUser(t, "dave")
		sendRaw(t, dave, `<message type="chat" to="`+a.jid+`"><body>kept in postgres</body></message>`)
		mustSucceed(t, m.ClientSession, "WaitForMessage", map[string]any{"TimeoutSeconds": 60})
		m.Close()
		b := elsewhere(t, a)
		m2 := startMCPStdio(t, b)
		if r := mustSucceed(t, m2.ClientSession, "PopMessage", nil); r["Body"] != "kept in postgres" {
			t.Fatalf("on the other copy: %v", r)
		}
		m2.Close()
		noStoreFile(t, a.dir)
		noStoreFile(t, b.dir)
	})
	t.Run("tasks", func(t *testing.T) {
		withTaskEndpoints(t)
		a := mcpOnPostgres(t)
		var b *mcpAccount
		extTaskRestart(t, a, func(a *mcpAccount) *mcpAccount {
			b = elsewhere(t, a)
			return b
		})
		noStoreFile(t, a.dir)
		noStoreFile(t, b.dir)
	})
}
