-- FROZEN: schema version 11 of the agentgw database (version 10 plus the
-- task leases, signals and outbox claims of several gateways on one store),
-- exactly as it shipped: schema-v10.sql with its sample data, then the SQL
-- of migration 10 → 11 as it ran. Never edit this file: the upgrade tests
-- open it as an older binary left it.

-- Conventions: every table is STRICT, so a value of the wrong type is an
-- error rather than silently stored; times are INTEGER unix milliseconds UTC;
-- text columns use the default BINARY collation, so ORDER BY jid is octetwise
-- (never add COLLATE NOCASE: directory paging depends on byte order).

-- An endpoint is an agent's normalized bare JID. origin records who created
-- it: admin, builtin, self or mcp. It is validated in Go rather than by a
-- CHECK so that adding an origin needs no table rebuild.
CREATE TABLE endpoint (
	jid        TEXT    NOT NULL PRIMARY KEY CHECK (jid <> ''),
	origin     TEXT    NOT NULL DEFAULT 'admin',
	created_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

-- An immutable manifest version. hash is the SHA-256 of canonical, the
-- canonical manifest bytes; name, title and description are copies of
-- manifest fields kept for listings. Rows are never updated. This table keeps
-- its rowid because canonical can be a few kilobytes.
CREATE TABLE manifest_version (
	endpoint_jid TEXT    NOT NULL REFERENCES endpoint (jid) ON DELETE CASCADE,
	version      TEXT    NOT NULL CHECK (version <> ''),
	hash         BLOB    NOT NULL CHECK (length(hash) = 32),
	canonical    BLOB    NOT NULL,
	name         TEXT    NOT NULL,
	title        TEXT    NOT NULL DEFAULT '',
	description  TEXT    NOT NULL DEFAULT '',
	created_at   INTEGER NOT NULL,
	PRIMARY KEY (endpoint_jid, version)
) STRICT;

-- The active-version pointer: a row exists exactly when the endpoint is
-- active. display_name is the version's title, or its name if the title is
-- empty, copied here so a directory page reads one clustered table in jid
-- order and nothing else.
CREATE TABLE active_endpoint (
	jid          TEXT    NOT NULL PRIMARY KEY REFERENCES endpoint (jid) ON DELETE CASCADE,
	version      TEXT    NOT NULL,
	display_name TEXT    NOT NULL,
	activated_at INTEGER NOT NULL,
	FOREIGN KEY (jid, version) REFERENCES manifest_version (endpoint_jid, version)
) STRICT, WITHOUT ROWID;

-- Counters kept by triggers so that counting is O(1).
CREATE TABLE stat (
	name  TEXT    NOT NULL PRIMARY KEY,
	value INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

INSERT INTO stat (name, value) VALUES ('active_endpoints', 0);

-- Only INSERT and DELETE change the number of active endpoints. Switching to
-- another version must therefore be an UPDATE (never INSERT OR REPLACE, whose
-- implicit delete fires no DELETE trigger unless recursive_triggers is on).
CREATE TRIGGER active_endpoint_count_insert AFTER INSERT ON active_endpoint
BEGIN
	UPDATE stat SET value = value + 1 WHERE name = 'active_endpoints';
END;

CREATE TRIGGER active_endpoint_count_delete AFTER DELETE ON active_endpoint
BEGIN
	UPDATE stat SET value = value - 1 WHERE name = 'active_endpoints';
END;

-- Presence subscriptions (RFC 6121) from a subscriber's bare JID to an endpoint.
CREATE TABLE presence_subscription (
	endpoint_jid TEXT    NOT NULL REFERENCES endpoint (jid) ON DELETE CASCADE,
	subscriber   TEXT    NOT NULL CHECK (subscriber <> ''),
	created_at   INTEGER NOT NULL,
	PRIMARY KEY (endpoint_jid, subscriber)
) STRICT, WITHOUT ROWID;

-- A removed version's permanent tombstone (removal.go). It has no foreign key:
-- it outlives the version and the endpoint. Registering that version again is
-- allowed only with this hash (a restore).
CREATE TABLE version_tombstone (
	endpoint_jid TEXT    NOT NULL CHECK (endpoint_jid <> ''),
	version      TEXT    NOT NULL CHECK (version <> ''),
	hash         BLOB    NOT NULL CHECK (length(hash) = 32),
	removed_at   INTEGER NOT NULL,
	PRIMARY KEY (endpoint_jid, version)
) STRICT, WITHOUT ROWID;

-- Holds on a version by the tasks and results that depend on it: removal is
-- refused while a hold lasts beyond now. The foreign key has no ON DELETE, so
-- the database itself refuses to drop a version some hold still names;
-- removal prunes lapsed holds first.
CREATE TABLE version_retention (
	endpoint_jid TEXT    NOT NULL,
	version      TEXT    NOT NULL,
	holder       TEXT    NOT NULL CHECK (holder <> ''),
	retain_until INTEGER NOT NULL,
	PRIMARY KEY (endpoint_jid, version, holder),
	FOREIGN KEY (endpoint_jid, version) REFERENCES manifest_version (endpoint_jid, version)
) STRICT, WITHOUT ROWID;

-- The search index (search.go, package search: XEP-0055). search_text holds
-- each active endpoint's localpart, manifest name and title, folded for
-- case-insensitive matching and joined by U+001F, and a copy of its
-- display_name, so that checking and listing a match reads one row;
-- search_gram holds every
-- distinct substring of one to three characters of each field, keyed so that
-- the postings of a gram are in jid order, the order search pages in;
-- search_gram_count holds the number of postings of each gram. The triggers
-- keep them in step with active_endpoint on every write path; they call the
-- agentgw_search_* functions the db package registers with the driver.
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

-- A version switch is an UPDATE (see the counter triggers): reindex.
-- display_name only ever changes with the version; it is named so that the
-- copy cannot go stale.
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

-- Deactivation, and a cascade from a deleted endpoint.
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

-- Tasks (task.go; package task defines them, package taskd runs them). doc is
-- the whole task as the task layer encodes it; the other columns are what
-- tasks are looked up by, kept in step with doc by every write. (target,
-- caller, request_id) is the admission replay record. next_wake is in unix
-- NANOseconds, since deadlines compare exactly: the deadline or input expiry
-- while the task runs, the purge time once it is terminal (task_purge). A
-- task row holds its pinned version (the foreign key) from admission until
-- it is purged with its events and input records.
-- These tables keep their rowid: doc and payload can be large.
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

-- A caller's tasks, for its quotas (quota.go): finished tasks and stored
-- bytes are counted over this index at each new admission.
CREATE INDEX task_caller ON task (caller);

-- Lifecycle events, one per revision after 0.
CREATE TABLE task_event (
	task_id  TEXT    NOT NULL REFERENCES task (id) ON DELETE CASCADE,
	revision INTEGER NOT NULL CHECK (revision > 0),
	event_id TEXT    NOT NULL,
	type     TEXT    NOT NULL,
	payload  BLOB    NOT NULL,
	PRIMARY KEY (task_id, revision)
) STRICT;

-- Input records: identity and disposition of every input request of a task.
CREATE TABLE task_input (
	task_id    TEXT NOT NULL REFERENCES task (id) ON DELETE CASCADE,
	request_id TEXT NOT NULL,
	doc        BLOB NOT NULL,
	PRIMARY KEY (task_id, request_id)
) STRICT;

-- Imports of mcp endpoints (mcp.go): per manifest version an import of the
-- MCP server's tool list yielded, the tools it left out with their reasons
-- (a JSON array of {"tool","reason"}), when an import last yielded it after
-- another, and whether it is the endpoint's latest import (one per endpoint,
-- by the partial unique index). A row goes with its version.
CREATE TABLE mcp_import (
	endpoint_jid TEXT    NOT NULL,
	version      TEXT    NOT NULL,
	skipped      TEXT    NOT NULL,
	imported_at  INTEGER NOT NULL,
	latest       INTEGER NOT NULL CHECK (latest IN (0, 1)),
	PRIMARY KEY (endpoint_jid, version),
	FOREIGN KEY (endpoint_jid, version) REFERENCES manifest_version (endpoint_jid, version) ON DELETE CASCADE
) STRICT, WITHOUT ROWID;

CREATE UNIQUE INDEX mcp_import_latest ON mcp_import (endpoint_jid) WHERE latest = 1;

-- The search index's generation (search_mem.go): every change of
-- search_text moves it on, so that a copy of the index held in memory knows
-- with one primary-key read that it is stale, whichever process made the
-- change.
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

-- Process groups of runtime processes (process.go): one row per exec tool or
-- stdio MCP server group started and not yet known to have ended, so that a
-- restart after a crash kills what the previous run left running.
CREATE TABLE runtime_process (
	pgid        INTEGER NOT NULL PRIMARY KEY CHECK (pgid > 0),
	boot_id     TEXT    NOT NULL,
	start_ticks INTEGER NOT NULL CHECK (start_ticks >= 0),
	owner_pid   INTEGER NOT NULL,
	owner_start INTEGER NOT NULL CHECK (owner_start >= 0),
	recorded_at INTEGER NOT NULL
) STRICT;

-- Sample data.

INSERT INTO endpoint (jid, origin, created_at) VALUES
	('weather@agents.example', 'self', 1700000000000),
	('echo@agents.example', 'builtin', 1700000200000);

INSERT INTO manifest_version (endpoint_jid, version, hash, canonical, name, title, description, created_at)
VALUES ('weather@agents.example', '1.0.0', X'A99636143EC8CB4E04B2692B194BBB785E30FF27982112D437E4731EA306E2AE',
	CAST('{"jid":"weather@agents.example","name":"weather","version":"1.0.0"}' AS BLOB),
	'weather', 'Weather', 'Forecasts.', 1700000000000);
INSERT INTO manifest_version (endpoint_jid, version, hash, canonical, name, title, description, created_at)
VALUES ('weather@agents.example', '1.1.0', X'7A92B20423CFC7EDF714EC4480E24FAAB2F6AC6C3309E9C5A11703781EC3A5F5',
	CAST('{"jid":"weather@agents.example","name":"weather","version":"1.1.0"}' AS BLOB),
	'weather', 'Weather Station', 'Forecasts and alerts.', 1700000100000);
INSERT INTO manifest_version (endpoint_jid, version, hash, canonical, name, title, description, created_at)
VALUES ('echo@agents.example', '0.1.0', X'8A89AD5527F99DEE151E413377A5F5589D39595E970407746276E8E2DA5647B2',
	CAST('{"jid":"echo@agents.example","name":"echo","version":"0.1.0"}' AS BLOB),
	'echo', '', 'Echoes its input.', 1700000200000);

INSERT INTO active_endpoint (jid, version, display_name, activated_at)
VALUES ('weather@agents.example', '1.1.0', 'Weather Station', 1700000300000);

INSERT INTO presence_subscription (endpoint_jid, subscriber, created_at) VALUES
	('weather@agents.example', 'alice@example.com', 1700000400000),
	('weather@agents.example', 'bob@example.com', 1700000500000);

-- Tasks of two callers, for the usage counters the next version fills:
-- alice has one terminal task with two events and an input record and one
-- running task; carol one running task.
INSERT INTO task (id, caller, target, request_id, api_version, state, terminal, revision, next_wake, doc) VALUES
	('t1', 'alice@example.com/a', 'weather@agents.example', 'r1', '1.1.0', 'completed', 1, 2, 1700000900000000000, CAST('0123456789' AS BLOB)),
	('t2', 'alice@example.com/a', 'weather@agents.example', 'r2', '1.1.0', 'running', 0, 1, 1700000900000000000, CAST('01234' AS BLOB)),
	('t3', 'carol@example.com/c', 'weather@agents.example', 'r1', '1.1.0', 'running', 0, 0, 1700000900000000000, CAST('012' AS BLOB));
INSERT INTO task_event (task_id, revision, event_id, type, payload) VALUES
	('t1', 1, 'e1', 'running', CAST('{}' AS BLOB)),
	('t1', 2, 'e2', 'completed', CAST('{"a":1}' AS BLOB));
INSERT INTO task_input (task_id, request_id, doc) VALUES
	('t1', 'in1', CAST('abcd' AS BLOB));

-- Migration 8 → 9 (db/migrate.go usageCounterMigration), as it ran.
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

-- 9 → 10: the chat tables.

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


-- 10 → 11: task leases and signals, outbox claims.

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

PRAGMA user_version = 11;
