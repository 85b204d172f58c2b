package migrate

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/base64"
	"fmt"

	"modernc.org/sqlite"
)

// Before schema version 12, `agentgw mcp` kept its state in a SQLite file
// and schema of its own (`[mcp] database`, agentgw-mcp.db by default):
// tables message, dropped and mcp_task, at PRAGMA user_version 1 to 3 of
// that schema. Open turns such a file into a store in place, in one
// transaction, after a backup: the old schema is brought to its last
// version, its rows move to the store's mcp_* tables (package db/mcpstate), and
// the old tables go. The file then is a store like any other, whose
// gateway tables are empty.

// legacyMCPMigrations are the old store's migrations, frozen as they
// shipped: legacyMCPMigrations[i] turns its version i into i+1.
var legacyMCPMigrations = []string{
	"", // 0 → 1: the queue, created by the old binary
	// 1 → 2: the MCP tasks of agent calls.
	`CREATE TABLE mcp_task (
		id           TEXT    PRIMARY KEY CHECK (id <> ''),
		owner        TEXT    NOT NULL CHECK (owner <> ''),
		account      TEXT    NOT NULL,
		endpoint     TEXT    NOT NULL,
		xmpp_task_id TEXT    NOT NULL,
		request_id   TEXT    NOT NULL,
		version      TEXT    NOT NULL,
		hash         TEXT    NOT NULL,
		tool         TEXT    NOT NULL,
		status       TEXT    NOT NULL,
		xmpp_state   TEXT    NOT NULL,
		revision     INTEGER NOT NULL,
		created_at   INTEGER NOT NULL,
		updated_at   INTEGER NOT NULL,
		retain_until INTEGER NOT NULL,
		ttl_ms       INTEGER NOT NULL,
		result       TEXT
	) STRICT;
	CREATE INDEX mcp_task_by_owner ON mcp_task (owner, created_at);`,
	// 2 → 3: a task's manifest hash as its 32 bytes.
	`CREATE TABLE mcp_task_v3 (
		id           TEXT    PRIMARY KEY CHECK (id <> ''),
		owner        TEXT    NOT NULL CHECK (owner <> ''),
		account      TEXT    NOT NULL,
		endpoint     TEXT    NOT NULL,
		xmpp_task_id TEXT    NOT NULL,
		request_id   TEXT    NOT NULL,
		version      TEXT    NOT NULL,
		hash         BLOB    NOT NULL CHECK (length(hash) = 32),
		tool         TEXT    NOT NULL,
		status       TEXT    NOT NULL,
		xmpp_state   TEXT    NOT NULL,
		revision     INTEGER NOT NULL,
		created_at   INTEGER NOT NULL,
		updated_at   INTEGER NOT NULL,
		retain_until INTEGER NOT NULL,
		ttl_ms       INTEGER NOT NULL,
		result       TEXT
	) STRICT;
	INSERT INTO mcp_task_v3 SELECT id, owner, account, endpoint, xmpp_task_id, request_id, version,
		agentgw_hash_from_base64(hash), tool, status, xmpp_state, revision, created_at, updated_at,
		retain_until, ttl_ms, result FROM mcp_task;
	DROP TABLE mcp_task;
	ALTER TABLE mcp_task_v3 RENAME TO mcp_task;
	CREATE INDEX mcp_task_by_owner ON mcp_task (owner, created_at);`,
}

// legacyMCPMoveAside renames the old store's tables (version 3) out of the
// way of the schema, which has an mcp_task of its own.
const legacyMCPMoveAside = `
DROP INDEX message_by_account;
DROP INDEX mcp_task_by_owner;
ALTER TABLE message RENAME TO legacy_mcp_message;
ALTER TABLE dropped RENAME TO legacy_mcp_dropped;
ALTER TABLE mcp_task RENAME TO legacy_mcp_task;
`

// legacyMCPTaskColumns are the columns of the old store's mcp_task (version
// 3), which the schema's mcp_task has too.
const legacyMCPTaskColumns = "id, owner, account, endpoint, xmpp_task_id, request_id, version, hash, tool, status, xmpp_state, revision, created_at, updated_at, retain_until, ttl_ms, result"

// legacyMCPMoveIn moves the old rows into the schema's tables, and drops
// the old tables.
const legacyMCPMoveIn = `
INSERT INTO mcp_message (seq, account, id, received_at, message)
	SELECT seq, account, id, received_at, CAST(message AS BLOB) FROM legacy_mcp_message;
INSERT INTO mcp_dropped (account, n) SELECT account, count FROM legacy_mcp_dropped;
INSERT INTO mcp_task (` + legacyMCPTaskColumns + `) SELECT ` + legacyMCPTaskColumns + ` FROM legacy_mcp_task;
DROP TABLE legacy_mcp_message;
DROP TABLE legacy_mcp_dropped;
DROP TABLE legacy_mcp_task;
`

// sqlFuncHashFromBase64 is the SQL function the old migration 2 → 3
// calls: agentgw_hash_from_base64(text) is the 32 bytes the padded
// standard Base64 text encodes, or an error.
const sqlFuncHashFromBase64 = "agentgw_hash_from_base64"

func init() {
	sqlite.MustRegisterDeterministicScalarFunction(sqlFuncHashFromBase64, 1,
		func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
			s, ok := args[0].(string)
			if !ok {
				return nil, fmt.Errorf("%s: not a text", sqlFuncHashFromBase64)
			}
			raw, err := base64.StdEncoding.Strict().DecodeString(s)
			if err != nil || len(raw) != 32 {
				return nil, fmt.Errorf("%s(%q): not the Base64 of a SHA-256 digest", sqlFuncHashFromBase64, s)
			}
			return raw, nil
		})
}

// convertLegacyMCP turns the old `agentgw mcp` store at path, behind
// writer, into a store of the current schema, and reports whether it was
// one. Like Schema.Migrate it holds the write lock from the moment it
// reads user_version, and backs the file up first (path.pre-<version>).
func convertLegacyMCP(ctx context.Context, writer *sql.DB, path string) (Migration, bool, error) {
	const name = "mcp store"
	tx, err := writer.BeginTx(ctx, nil)
	if err != nil {
		return Migration{}, false, fmt.Errorf("%s: migrate: %w", name, err)
	}
	defer tx.Rollback()
	var version, queue, gateway int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return Migration{}, false, fmt.Errorf("%s: migrate: read schema version: %w", name, err)
	}
	if err := tx.QueryRowContext(ctx, `SELECT
		count(*) FILTER (WHERE name IN ('message', 'dropped')),
		count(*) FILTER (WHERE name = 'endpoint')
		FROM sqlite_master WHERE type = 'table'`).Scan(&queue, &gateway); err != nil {
		return Migration{}, false, fmt.Errorf("%s: migrate: %w", name, err)
	}
	if queue != 2 || gateway != 0 || version < 1 {
		return Migration{}, false, nil
	}
	if version > len(legacyMCPMigrations) {
		return Migration{}, true, fmt.Errorf("%s: database schema version %d is newer than this binary supports (%d)", name, version, len(legacyMCPMigrations))
	}
	current := gatewaySchema.Version()
	done := Migration{From: version, To: current}
	if done.Backup, err = preMigrationBackup(ctx, name, path, current); err != nil {
		return Migration{}, true, err
	}
	fail := func(step string, err error) (Migration, bool, error) {
		return Migration{}, true, fmt.Errorf("%s: migrate: %s: %w (the database is unchanged; a copy is at %s)", name, step, err, done.Backup)
	}
	for i := version; i < len(legacyMCPMigrations); i++ {
		if _, err := tx.ExecContext(ctx, legacyMCPMigrations[i]); err != nil {
			return fail(fmt.Sprintf("old schema version %d to %d", i, i+1), err)
		}
	}
	for _, step := range []struct{ what, sql string }{
		{"move the old tables aside", legacyMCPMoveAside},
		{"create schema", schema},
		{"move the rows in", legacyMCPMoveIn},
		{"set schema version", fmt.Sprintf("PRAGMA user_version = %d", current)},
	} {
		if _, err := tx.ExecContext(ctx, step.sql); err != nil {
			return fail(step.what, err)
		}
	}
	if err := checkForeignKeys(ctx, name, tx); err != nil {
		return Migration{}, true, err
	}
	if err := tx.Commit(); err != nil {
		return fail("commit", err)
	}
	return done, true, nil
}
