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
// Every migration is in this file, in order: the longer ones as the
// constants below the list. To change the schema: edit schema.sql, append
// the migration here, and add a frozen copy of the previous schema with
// data to testdata/ plus a row to the upgrade test's table.
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
	// 8 → 9: consent, blocking, outbox and queue of chats (chat.go).
	chatMigration,
}

// searchIndexMigration turns schema version 2 into version 3: it creates the
// search index and indexes the endpoints already active. It has shipped:
// never edit it; schema.sql holds the same tables and triggers.
const searchIndexMigration = `
CREATE TABLE search_text (
	jid          TEXT NOT NULL PRIMARY KEY,
	folded       TEXT NOT NULL,
	display_name TEXT NOT NULL
) STRICT, WITHOUT ROWID;

CREATE TABLE search_gram (
	gram TEXT NOT NULL,
	jid  TEXT NOT NULL,
	PRIMARY KEY (gram, jid)
) STRICT, WITHOUT ROWID;

CREATE TABLE search_gram_count (
	gram TEXT    NOT NULL PRIMARY KEY,
	n    INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

CREATE TRIGGER search_index_insert AFTER INSERT ON active_endpoint
BEGIN
	INSERT INTO search_text (jid, folded, display_name)
		SELECT new.jid, agentgw_search_text(new.jid, m.name, m.title), new.display_name
		FROM manifest_version AS m
		WHERE m.endpoint_jid = new.jid AND m.version = new.version;
	INSERT INTO search_gram (gram, jid)
		SELECT g.value, new.jid
		FROM search_text AS t, json_each(agentgw_search_grams(t.folded)) AS g
		WHERE t.jid = new.jid;
	INSERT INTO search_gram_count (gram, n)
		SELECT g.value, 1
		FROM search_text AS t, json_each(agentgw_search_grams(t.folded)) AS g
		WHERE t.jid = new.jid
		ON CONFLICT (gram) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER search_index_update AFTER UPDATE OF version, display_name ON active_endpoint
BEGIN
	DELETE FROM search_gram WHERE jid = old.jid AND gram IN
		(SELECT g.value FROM search_text AS t, json_each(agentgw_search_grams(t.folded)) AS g
		 WHERE t.jid = old.jid);
	UPDATE search_gram_count SET n = n - 1 WHERE gram IN
		(SELECT g.value FROM search_text AS t, json_each(agentgw_search_grams(t.folded)) AS g
		 WHERE t.jid = old.jid);
	DELETE FROM search_gram_count WHERE n = 0 AND gram IN
		(SELECT g.value FROM search_text AS t, json_each(agentgw_search_grams(t.folded)) AS g
		 WHERE t.jid = old.jid);
	DELETE FROM search_text WHERE jid = old.jid;
	INSERT INTO search_text (jid, folded, display_name)
		SELECT new.jid, agentgw_search_text(new.jid, m.name, m.title), new.display_name
		FROM manifest_version AS m
		WHERE m.endpoint_jid = new.jid AND m.version = new.version;
	INSERT INTO search_gram (gram, jid)
		SELECT g.value, new.jid
		FROM search_text AS t, json_each(agentgw_search_grams(t.folded)) AS g
		WHERE t.jid = new.jid;
	INSERT INTO search_gram_count (gram, n)
		SELECT g.value, 1
		FROM search_text AS t, json_each(agentgw_search_grams(t.folded)) AS g
		WHERE t.jid = new.jid
		ON CONFLICT (gram) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER search_index_delete AFTER DELETE ON active_endpoint
BEGIN
	DELETE FROM search_gram WHERE jid = old.jid AND gram IN
		(SELECT g.value FROM search_text AS t, json_each(agentgw_search_grams(t.folded)) AS g
		 WHERE t.jid = old.jid);
	UPDATE search_gram_count SET n = n - 1 WHERE gram IN
		(SELECT g.value FROM search_text AS t, json_each(agentgw_search_grams(t.folded)) AS g
		 WHERE t.jid = old.jid);
	DELETE FROM search_gram_count WHERE n = 0 AND gram IN
		(SELECT g.value FROM search_text AS t, json_each(agentgw_search_grams(t.folded)) AS g
		 WHERE t.jid = old.jid);
	DELETE FROM search_text WHERE jid = old.jid;
END;

INSERT INTO search_text (jid, folded, display_name)
	SELECT a.jid, agentgw_search_text(a.jid, m.name, m.title), a.display_name
	FROM active_endpoint AS a
	JOIN manifest_version AS m ON m.endpoint_jid = a.jid AND m.version = a.version;

INSERT INTO search_gram (gram, jid)
	SELECT g.value, t.jid
	FROM search_text AS t, json_each(agentgw_search_grams(t.folded)) AS g;

INSERT INTO search_gram_count (gram, n)
	SELECT gram, count(*) FROM search_gram GROUP BY gram;
`

// taskMigration turns schema version 3 into version 4: the task tables.
// schema.sql holds the same tables; once shipped, never edit this.
const taskMigration = `
CREATE TABLE task (
	id          TEXT    NOT NULL PRIMARY KEY CHECK (id <> ''),
	caller      TEXT    NOT NULL,
	target      TEXT    NOT NULL,
	request_id  TEXT    NOT NULL,
	api_version TEXT    NOT NULL,
	state       TEXT    NOT NULL,
	terminal    INTEGER NOT NULL CHECK (terminal IN (0, 1)),
	revision    INTEGER NOT NULL CHECK (revision >= 0),
	next_wake   INTEGER NOT NULL,
	doc         BLOB    NOT NULL,
	-- The replay record. target first, so that a version's or an
	-- endpoint's tasks are found by prefix (versionRetained).
	UNIQUE (target, caller, request_id),
	-- A task holds the version it pinned until it is purged: the row
	-- itself is the hold, checked on insert, and the database refuses to
	-- delete a version a task still names.
	FOREIGN KEY (target, api_version) REFERENCES manifest_version (endpoint_jid, version)
) STRICT;

-- Only settled tasks are indexed, for the purge: an admission, and every
-- transition of a running task, then writes no index page for it. The
-- restart scan of unsettled tasks reads the table once, at start.
CREATE INDEX task_purge ON task (next_wake) WHERE terminal = 1;

CREATE TABLE task_event (
	task_id  TEXT    NOT NULL REFERENCES task (id) ON DELETE CASCADE,
	revision INTEGER NOT NULL CHECK (revision > 0),
	event_id TEXT    NOT NULL,
	type     TEXT    NOT NULL,
	payload  BLOB    NOT NULL,
	PRIMARY KEY (task_id, revision)
) STRICT;

CREATE TABLE task_input (
	task_id    TEXT NOT NULL REFERENCES task (id) ON DELETE CASCADE,
	request_id TEXT NOT NULL,
	doc        BLOB NOT NULL,
	PRIMARY KEY (task_id, request_id)
) STRICT;
`

// mcpImportMigration turns schema version 4 into version 5: the imports
// of mcp endpoints. schema.sql holds the same table; once shipped, never
// edit this.
const mcpImportMigration = `
CREATE TABLE mcp_import (
	endpoint_jid TEXT    NOT NULL,
	version      TEXT    NOT NULL,
	skipped      TEXT    NOT NULL,
	imported_at  INTEGER NOT NULL,
	latest       INTEGER NOT NULL CHECK (latest IN (0, 1)),
	PRIMARY KEY (endpoint_jid, version),
	FOREIGN KEY (endpoint_jid, version) REFERENCES manifest_version (endpoint_jid, version) ON DELETE CASCADE
) STRICT, WITHOUT ROWID;
CREATE UNIQUE INDEX mcp_import_latest ON mcp_import (endpoint_jid) WHERE latest = 1;`

// searchGenerationMigration turns schema version 5 into version 6. It has
// shipped: never edit it; schema.sql holds the same table and triggers.
const searchGenerationMigration = `
CREATE TABLE search_generation (
	id INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
	n  INTEGER NOT NULL
) STRICT;

INSERT INTO search_generation (id, n) VALUES (1, 0);

CREATE TRIGGER search_generation_insert AFTER INSERT ON search_text
BEGIN
	UPDATE search_generation SET n = n + 1 WHERE id = 1;
END;

CREATE TRIGGER search_generation_update AFTER UPDATE ON search_text
BEGIN
	UPDATE search_generation SET n = n + 1 WHERE id = 1;
END;

CREATE TRIGGER search_generation_delete AFTER DELETE ON search_text
BEGIN
	UPDATE search_generation SET n = n + 1 WHERE id = 1;
END;
`

// processMigration turns schema version 6 into version 7: the process
// groups of runtime processes. schema.sql holds the same table; once
// shipped, never edit this.
const processMigration = `
CREATE TABLE runtime_process (
	pgid        INTEGER NOT NULL PRIMARY KEY CHECK (pgid > 0),
	boot_id     TEXT    NOT NULL,
	start_ticks INTEGER NOT NULL CHECK (start_ticks >= 0),
	owner_pid   INTEGER NOT NULL,
	owner_start INTEGER NOT NULL CHECK (owner_start >= 0),
	recorded_at INTEGER NOT NULL
) STRICT;
`

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
