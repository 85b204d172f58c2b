package db

import (
	"context"
	"database/sql"
	_ "embed"
	"fmt"
)

// schema is the current schema, run on a fresh database.
//
//go:embed schema.sql
var schema string

// migrations upgrade an existing database one schema version at a time:
// migrations[i] turns version i into version i+1, and len(migrations) is the
// version this binary writes (PRAGMA user_version). The list is append-only;
// never edit an entry that has shipped. Entry 0 is never run: version 0 is an
// empty file, which gets schema.sql instead.
//
// To change the schema: edit schema.sql, append the migration here, and add a
// frozen copy of the previous schema with data to testdata/ plus a row to the
// upgrade test's table.
//
// A migration runs inside a transaction, where PRAGMA foreign_keys cannot be
// changed; a table rebuild must keep foreign keys valid at every statement.
// They are checked before the upgrade commits.
var migrations = []string{
	"", // 0 → 1: the first schema, created by schema.sql
	// 1 → 2: version tombstones and retention holds (removal.go).
	`CREATE TABLE version_tombstone (
		endpoint_jid TEXT    NOT NULL CHECK (endpoint_jid <> ''),
		version      TEXT    NOT NULL CHECK (version <> ''),
		hash         BLOB    NOT NULL CHECK (length(hash) = 32),
		removed_at   INTEGER NOT NULL,
		PRIMARY KEY (endpoint_jid, version)
	) STRICT, WITHOUT ROWID;
	CREATE TABLE version_retention (
		endpoint_jid TEXT    NOT NULL,
		version      TEXT    NOT NULL,
		holder       TEXT    NOT NULL CHECK (holder <> ''),
		retain_until INTEGER NOT NULL,
		PRIMARY KEY (endpoint_jid, version, holder),
		FOREIGN KEY (endpoint_jid, version) REFERENCES manifest_version (endpoint_jid, version)
	) STRICT, WITHOUT ROWID;`,
	// 2 → 3: the search index, filled from the active endpoints (search.go).
	searchIndexMigration,
	// 3 → 4: tasks, their events and input records (task.go).
	taskMigration,
	// 4 → 5: the imports of mcp endpoints (mcp.go).
	mcpImportMigration,
	// 5 → 6: the search index's generation counter (search_mem.go).
	searchGenerationMigration,
	// 6 → 7: the process groups of runtime processes (process.go).
	processMigration,
	// 7 → 8: a caller's tasks, for its quotas (quota.go).
	`CREATE INDEX task_caller ON task (caller);`,
}

// migrate brings the database behind writer to len(migrations). It holds the
// write lock from the moment it reads user_version, so two processes opening
// the same new file cannot both create the schema.
func migrate(ctx context.Context, writer *sql.DB) error {
	tx, err := writer.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("db: migrate: %w", err)
	}
	defer tx.Rollback()

	var version int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return fmt.Errorf("db: migrate: read schema version: %w", err)
	}
	current := len(migrations)
	switch {
	case version == current:
		return nil
	case version > current:
		return fmt.Errorf("db: database schema version %d is newer than this binary supports (%d)", version, current)
	case version == 0:
		if _, err := tx.ExecContext(ctx, schema); err != nil {
			return fmt.Errorf("db: migrate: create schema: %w", err)
		}
	default:
		for i := version; i < current; i++ {
			if _, err := tx.ExecContext(ctx, migrations[i]); err != nil {
				return fmt.Errorf("db: migrate: schema version %d to %d: %w", i, i+1, err)
			}
		}
		if err := checkForeignKeys(ctx, tx); err != nil {
			return err
		}
	}

	// PRAGMA takes no bound parameters; current is our own integer.
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", current)); err != nil {
		return fmt.Errorf("db: migrate: set schema version: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("db: migrate: %w", err)
	}
	return nil
}

// checkForeignKeys fails if the migrated data violates a foreign key.
func checkForeignKeys(ctx context.Context, tx *sql.Tx) error {
	rows, err := tx.QueryContext(ctx, "PRAGMA foreign_key_check")
	if err != nil {
		return fmt.Errorf("db: migrate: foreign key check: %w", err)
	}
	defer rows.Close()
	if rows.Next() {
		var table string
		var rowid sql.NullInt64
		var parent string
		var fkid int
		if err := rows.Scan(&table, &rowid, &parent, &fkid); err != nil {
			return fmt.Errorf("db: migrate: foreign key check: %w", err)
		}
		return fmt.Errorf("db: migrate: foreign key violation in table %s referencing %s", table, parent)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("db: migrate: foreign key check: %w", err)
	}
	return nil
}
