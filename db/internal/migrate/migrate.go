// Package migrate holds the schema of each of the store's engines and
// brings a database to it: schema.sql and its migrations for SQLite
// (keyed by PRAGMA user_version, the file backed up before it changes),
// schema_pg.sql and its migrations for PostgreSQL, and the conversion of
// the old `agentgw mcp` file. Only package db calls it, at Open.
package migrate

import (
	"context"
	"database/sql"
	_ "embed"
	"errors"
	"fmt"
	"os"

	_ "agentgw/db/internal/searchtext" // the SQL functions of the search triggers
)

// schema is the current schema, run on a fresh database.
//
//go:embed schema.sql
var schema string

// migrations upgrade an existing database one schema version at a time:
// migrations[i] turns version i into version i+1, and len(migrations) is the
// version this binary writes (PRAGMA user_version). The list is append-only;
// never edit an entry that has shipped. Entry 0 is never run: version 0 is an
// empty file, which gets schema.sql instead. How to change the schema, and
// why a table rebuild must keep foreign keys valid at every statement:
// docs/store.md, "Migrations".
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
	// 8 → 9: usage counters for the quotas, in place of their sums (quota.go).
	usageCounterMigration,
	// 9 → 10: consent, blocking, outbox and queue of chats (chat.go).
	chatMigration,
	// 10 → 11: task leases and signals, outbox claims: several gateways
	// on one store (lease.go).
	leaseMigration,
	// 11 → 12: the state of `agentgw mcp`, moved into the store
	// (db/mcpstate).
	mcpStateMigration,
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

// usageCounterMigration turns schema version 8 into version 9: the quota
// counters kept by triggers (quota.go), filled from the stored rows, in
// place of the task_caller index the sums read, and an index of each
// version's tasks. schema.sql holds the same tables, triggers and index;
// once shipped, never edit this.
const usageCounterMigration = `
CREATE TABLE caller_usage (
	caller   TEXT    NOT NULL PRIMARY KEY,
	finished INTEGER NOT NULL,
	bytes    INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

CREATE TABLE endpoint_count (
	jid           TEXT    NOT NULL PRIMARY KEY,
	versions      INTEGER NOT NULL,
	subscriptions INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

-- Filled from the rows stored before the counters.
INSERT INTO stat (name, value) SELECT 'subscriptions', count(*) FROM presence_subscription;
INSERT INTO caller_usage (caller, finished, bytes)
	SELECT caller, SUM(terminal), SUM(length(doc)) FROM task GROUP BY caller;
UPDATE caller_usage SET bytes = bytes +
	COALESCE((SELECT SUM(length(e.payload)) FROM task AS t JOIN task_event AS e ON e.task_id = t.id
		WHERE t.caller = caller_usage.caller), 0) +
	COALESCE((SELECT SUM(length(i.doc)) FROM task AS t JOIN task_input AS i ON i.task_id = t.id
		WHERE t.caller = caller_usage.caller), 0);
INSERT INTO endpoint_count (jid, versions, subscriptions)
	SELECT jid, SUM(v), SUM(s) FROM (
		SELECT endpoint_jid AS jid, 1 AS v, 0 AS s FROM manifest_version
		UNION ALL
		SELECT endpoint_jid, 0, 1 FROM presence_subscription)
	GROUP BY jid;
DROP INDEX task_caller;
CREATE INDEX task_version ON task (target, api_version);

CREATE TRIGGER caller_usage_task_insert AFTER INSERT ON task
BEGIN
	INSERT INTO caller_usage (caller, finished, bytes) VALUES (new.caller, new.terminal, length(new.doc))
		ON CONFLICT (caller) DO UPDATE SET finished = finished + excluded.finished, bytes = bytes + excluded.bytes;
END;

CREATE TRIGGER caller_usage_task_update AFTER UPDATE OF terminal, doc ON task
BEGIN
	UPDATE caller_usage SET finished = finished + new.terminal - old.terminal,
		bytes = bytes + length(new.doc) - length(old.doc)
		WHERE caller = new.caller;
END;

CREATE TRIGGER caller_usage_task_delete AFTER DELETE ON task
BEGIN
	UPDATE caller_usage SET finished = finished - old.terminal, bytes = bytes - length(old.doc)
		WHERE caller = old.caller;
	DELETE FROM caller_usage WHERE caller = old.caller AND finished = 0 AND bytes = 0;
END;

CREATE TRIGGER caller_usage_event_insert AFTER INSERT ON task_event
BEGIN
	UPDATE caller_usage SET bytes = bytes + length(new.payload)
		WHERE caller = (SELECT caller FROM task WHERE id = new.task_id);
END;

CREATE TRIGGER caller_usage_event_delete AFTER DELETE ON task_event
BEGIN
	UPDATE caller_usage SET bytes = bytes - length(old.payload)
		WHERE caller = (SELECT caller FROM task WHERE id = old.task_id);
END;

CREATE TRIGGER caller_usage_input_insert AFTER INSERT ON task_input
BEGIN
	UPDATE caller_usage SET bytes = bytes + length(new.doc)
		WHERE caller = (SELECT caller FROM task WHERE id = new.task_id);
END;

CREATE TRIGGER caller_usage_input_update AFTER UPDATE OF doc ON task_input
BEGIN
	UPDATE caller_usage SET bytes = bytes + length(new.doc) - length(old.doc)
		WHERE caller = (SELECT caller FROM task WHERE id = new.task_id);
END;

CREATE TRIGGER caller_usage_input_delete AFTER DELETE ON task_input
BEGIN
	UPDATE caller_usage SET bytes = bytes - length(old.doc)
		WHERE caller = (SELECT caller FROM task WHERE id = old.task_id);
END;

CREATE TRIGGER endpoint_count_version_insert AFTER INSERT ON manifest_version
BEGIN
	INSERT INTO endpoint_count (jid, versions, subscriptions) VALUES (new.endpoint_jid, 1, 0)
		ON CONFLICT (jid) DO UPDATE SET versions = versions + 1;
END;

CREATE TRIGGER endpoint_count_version_delete AFTER DELETE ON manifest_version
BEGIN
	UPDATE endpoint_count SET versions = versions - 1 WHERE jid = old.endpoint_jid;
	DELETE FROM endpoint_count WHERE jid = old.endpoint_jid AND versions = 0 AND subscriptions = 0;
END;

CREATE TRIGGER endpoint_count_subscription_insert AFTER INSERT ON presence_subscription
BEGIN
	INSERT INTO endpoint_count (jid, versions, subscriptions) VALUES (new.endpoint_jid, 0, 1)
		ON CONFLICT (jid) DO UPDATE SET subscriptions = subscriptions + 1;
	UPDATE stat SET value = value + 1 WHERE name = 'subscriptions';
END;

CREATE TRIGGER endpoint_count_subscription_delete AFTER DELETE ON presence_subscription
BEGIN
	UPDATE endpoint_count SET subscriptions = subscriptions - 1 WHERE jid = old.endpoint_jid;
	DELETE FROM endpoint_count WHERE jid = old.endpoint_jid AND versions = 0 AND subscriptions = 0;
	UPDATE stat SET value = value - 1 WHERE name = 'subscriptions';
END;
`

// chatMigration creates the state of the Human Messaging profile (package
// chat): who wrote to an endpoint and whether a bounce stopped it writing
// back (consent and XEP-0191), the messages an endpoint sends until they
// are sent (the outbox), and the messages that wait for an endpoint's MCP
// clients (the queue). None of it is a task: chats never touch the task
// tables. schema.sql holds the same tables; once shipped, never edit this.
const chatMigration = `
CREATE TABLE chat_contact (
	endpoint_jid TEXT    NOT NULL CHECK (endpoint_jid <> ''),
	peer         TEXT    NOT NULL CHECK (peer <> ''),
	handle       TEXT    NOT NULL UNIQUE CHECK (handle <> ''),
	last_inbound INTEGER NOT NULL,
	blocked      INTEGER NOT NULL CHECK (blocked IN (0, 1)),
	PRIMARY KEY (endpoint_jid, peer)
) STRICT, WITHOUT ROWID;

CREATE TABLE chat_outbox (
	seq          INTEGER PRIMARY KEY,
	endpoint_jid TEXT    NOT NULL CHECK (endpoint_jid <> ''),
	recipient    TEXT    NOT NULL CHECK (recipient <> ''),
	peer         TEXT    NOT NULL CHECK (peer <> ''),
	origin_id    TEXT    NOT NULL UNIQUE CHECK (origin_id <> ''),
	type         TEXT    NOT NULL,
	body         TEXT    NOT NULL,
	lang         TEXT    NOT NULL,
	reply_to     TEXT    NOT NULL,
	reply_id     TEXT    NOT NULL,
	created_at   INTEGER NOT NULL
) STRICT;

CREATE TABLE chat_queue (
	seq          INTEGER PRIMARY KEY,
	endpoint_jid TEXT    NOT NULL CHECK (endpoint_jid <> ''),
	id           TEXT    NOT NULL UNIQUE CHECK (id <> ''),
	sender       TEXT    NOT NULL CHECK (sender <> ''),
	recipient    TEXT    NOT NULL,
	type         TEXT    NOT NULL,
	body         TEXT    NOT NULL,
	subject      TEXT    NOT NULL,
	thread       TEXT    NOT NULL,
	parent       TEXT    NOT NULL,
	lang         TEXT    NOT NULL,
	stanza_id    TEXT    NOT NULL,
	received_at  INTEGER NOT NULL
) STRICT;

CREATE INDEX chat_queue_endpoint ON chat_queue (endpoint_jid, seq);
`

// leaseMigration turns schema version 10 into version 11: the lease by
// which one gateway holds each task that is not terminal, the signals
// (cancel, input) another gateway leaves for the holder, and the claims on
// outbox messages (lease.go). The tasks already unsettled get a lapsed
// lease with no holder, so the next start takes them up as before.
// schema.sql holds the same tables; once shipped, never edit this.
const leaseMigration = `
CREATE TABLE task_lease (
	task_id     TEXT    NOT NULL PRIMARY KEY REFERENCES task (id) ON DELETE CASCADE,
	holder      TEXT    NOT NULL,
	lease_until INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

CREATE INDEX task_lease_until ON task_lease (lease_until);
CREATE INDEX task_lease_holder ON task_lease (holder);

CREATE TABLE task_signal (
	task_id  TEXT    NOT NULL REFERENCES task (id) ON DELETE CASCADE,
	revision INTEGER NOT NULL,
	kind     TEXT    NOT NULL CHECK (kind IN ('input', 'cancel')),
	payload  BLOB    NOT NULL,
	PRIMARY KEY (task_id, revision)
) STRICT, WITHOUT ROWID;

CREATE TABLE chat_outbox_claim (
	seq         INTEGER NOT NULL PRIMARY KEY REFERENCES chat_outbox (seq) ON DELETE CASCADE,
	holder      TEXT    NOT NULL,
	claim_until INTEGER NOT NULL
) STRICT;

INSERT INTO task_lease (task_id, holder, lease_until) SELECT id, '', 0 FROM task WHERE terminal = 0;
`

// mcpStateMigration turns schema version 11 into version 12: the state of
// `agentgw mcp` (db/mcpstate), which had a SQLite file and schema of its
// own before (legacy.go turns such a file into a store). schema.sql
// holds the same tables; once shipped, never edit this.
const mcpStateMigration = `
CREATE TABLE mcp_message (
	seq         INTEGER PRIMARY KEY,
	account     TEXT    NOT NULL CHECK (account <> ''),
	id          TEXT    NOT NULL UNIQUE CHECK (id <> ''),
	received_at INTEGER NOT NULL,
	message     BLOB    NOT NULL
) STRICT;

CREATE INDEX mcp_message_account ON mcp_message (account, seq);

CREATE TABLE mcp_dropped (
	account TEXT    NOT NULL PRIMARY KEY,
	n       INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

CREATE TABLE mcp_task (
	id           TEXT    NOT NULL PRIMARY KEY CHECK (id <> ''),
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

CREATE INDEX mcp_task_owner ON mcp_task (owner, created_at);
`

// Migration says what Open did to a database's schema. From equals To when
// the schema was already current; From is 0 for a new file.
type Migration struct {
	From, To int
	// Backup is the copy of the database taken before an existing schema
	// was migrated (<db>.pre-<To>, see migrate), or "" when none was
	// needed.
	Backup string
}

// maxBackupSuffix bounds the names migrate tries for its backup: <db>.pre-N,
// then <db>.pre-N.1 up to <db>.pre-N.<maxBackupSuffix>.
const maxBackupSuffix = 99

// Schema is one SQLite database's schema, as the one migration runner
// (Schema.Migrate) keeps it: the gateway's (schema.sql and migrations
// above; the files they name are package db's).
type Schema struct {
	// Name names the database in errors ("db", "mcp store").
	Name string
	// Create is the current schema, run on an empty file (version 0).
	Create string
	// Migrations[i] turns version i into version i+1, and len(Migrations)
	// is the version this binary writes (PRAGMA user_version). The list is
	// append-only; never edit an entry that has shipped. Entry 0 is never
	// run (version 0 gets Create), so it is "".
	Migrations []string
}

// gatewaySchema is the gateway's database.
var gatewaySchema = Schema{Name: "db", Create: schema, Migrations: migrations}

// SQLite brings the store's SQLite database at path, behind writer (its
// first connection, which makes a new file a WAL database), to the current
// schema: a file of the old `agentgw mcp` store is converted (legacy.go),
// any other migrated by Schema.Migrate.
func SQLite(ctx context.Context, writer *sql.DB, path string) (Migration, error) {
	migration, legacy, err := convertLegacyMCP(ctx, writer, path)
	if err == nil && !legacy {
		migration, err = gatewaySchema.Migrate(ctx, writer, path)
	}
	return migration, err
}

// Version is the schema version this binary writes.
func (s Schema) Version() int { return len(s.Migrations) }

// Migrate brings the database at path, behind writer, to s.Version(). It
// holds the write lock from the moment it reads user_version (writer must
// begin its transactions IMMEDIATE and hold one connection), so two
// processes opening the same new file cannot both create the schema. A
// database of a newer version is refused, with both versions in the error.
//
// Before it changes an existing schema it backs the database up, as
// `agentgw backup` would, to path.pre-<the new version> (or the first of
// path.pre-<version>.1, .2, … that does not exist, since an earlier copy may
// hold older data): the backup reads the committed, unmigrated state, which
// the write lock keeps unchanged. A failed backup stops the migration.
func (s Schema) Migrate(ctx context.Context, writer *sql.DB, path string) (Migration, error) {
	if len(s.Migrations) == 0 || s.Migrations[0] != "" {
		// A programming error: the convention is the same for every schema.
		panic(s.Name + ": migrations[0] must be \"\" (version 0 is an empty file, which gets Create)")
	}
	tx, err := writer.BeginTx(ctx, nil)
	if err != nil {
		return Migration{}, fmt.Errorf("%s: migrate: %w", s.Name, err)
	}
	defer tx.Rollback()

	var version int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return Migration{}, fmt.Errorf("%s: migrate: read schema version: %w", s.Name, err)
	}
	current := s.Version()
	done := Migration{From: version, To: current}
	switch {
	case version == current:
		return done, nil
	case version > current:
		return Migration{}, fmt.Errorf("%s: database schema version %d is newer than this binary supports (%d)", s.Name, version, current)
	case version == 0:
		if _, err := tx.ExecContext(ctx, s.Create); err != nil {
			return Migration{}, fmt.Errorf("%s: migrate: create schema: %w", s.Name, err)
		}
	default:
		if done.Backup, err = preMigrationBackup(ctx, s.Name, path, current); err != nil {
			return Migration{}, err
		}
		for i := version; i < current; i++ {
			if _, err := tx.ExecContext(ctx, s.Migrations[i]); err != nil {
				return Migration{}, fmt.Errorf("%s: migrate: schema version %d to %d: %w (the database is unchanged; a copy is at %s)", s.Name, i, i+1, err, done.Backup)
			}
		}
		if err := checkForeignKeys(ctx, s.Name, tx); err != nil {
			return Migration{}, err
		}
	}

	// PRAGMA takes no bound parameters; current is our own integer.
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", current)); err != nil {
		return Migration{}, fmt.Errorf("%s: migrate: set schema version: %w", s.Name, err)
	}
	if err := tx.Commit(); err != nil {
		return Migration{}, fmt.Errorf("%s: migrate: %w", s.Name, err)
	}
	return done, nil
}

// preMigrationBackup copies the database at path before its migration to
// schema version to, and returns the copy's name.
func preMigrationBackup(ctx context.Context, name, path string, to int) (string, error) {
	base := fmt.Sprintf("%s.pre-%d", path, to)
	for n := 0; n <= maxBackupSuffix; n++ {
		dest := base
		if n > 0 {
			dest = fmt.Sprintf("%s.%d", base, n)
		}
		if _, err := os.Lstat(dest); err == nil {
			continue
		} else if !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("%s: migrate: backup: %w", name, err)
		}
		if err := BackupFile(ctx, path, dest); err != nil {
			return "", fmt.Errorf("%s: migrate: backup before schema version %d: %w", name, to, err)
		}
		return dest, nil
	}
	return "", fmt.Errorf("%s: migrate: backup: %s and %s.1 to .%d all exist: move old backups away", name, base, base, maxBackupSuffix)
}

// checkForeignKeys fails if the migrated data violates a foreign key.
func checkForeignKeys(ctx context.Context, name string, tx *sql.Tx) error {
	rows, err := tx.QueryContext(ctx, "PRAGMA foreign_key_check")
	if err != nil {
		return fmt.Errorf("%s: migrate: foreign key check: %w", name, err)
	}
	defer rows.Close()
	if rows.Next() {
		var table string
		var rowid sql.NullInt64
		var parent string
		var fkid int
		if err := rows.Scan(&table, &rowid, &parent, &fkid); err != nil {
			return fmt.Errorf("%s: migrate: foreign key check: %w", name, err)
		}
		return fmt.Errorf("%s: migrate: foreign key violation in table %s referencing %s", name, table, parent)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("%s: migrate: foreign key check: %w", name, err)
	}
	return nil
}

// Versions are the schema versions this binary writes: SQLite's and
// PostgreSQL's.
func Versions() (sqlite, postgres int) { return len(migrations), len(pgMigrations) }
