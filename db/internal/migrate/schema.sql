-- The current agentgw database schema. A fresh database runs this file and
-- sets PRAGMA user_version to len(migrations); an existing one runs the
-- missing entries of migrations instead (see migrate.go). Whenever this file
-- changes, append the equivalent migration and freeze a copy of the old
-- schema under testdata/.
--
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

-- A version's tasks: whether any task still holds it (versionRetained), and
-- the foreign key's check when a version is deleted, in O(log n) where the
-- replay record's (target, …) prefix read every task of the endpoint.
CREATE INDEX task_version ON task (target, api_version);


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

-- Leases (lease.go): the gateway that holds each task that is not
-- terminal, until when (milliseconds). A holder renews its leases; once one
-- has lapsed, any gateway may claim the task by a conditional UPDATE and
-- recover it. The row goes when the task settles.
CREATE TABLE task_lease (
	task_id     TEXT    NOT NULL PRIMARY KEY REFERENCES task (id) ON DELETE CASCADE,
	holder      TEXT    NOT NULL,
	lease_until INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

CREATE INDEX task_lease_until ON task_lease (lease_until);
CREATE INDEX task_lease_holder ON task_lease (holder);

-- Signals (lease.go): an accepted cancel or input that a gateway other than
-- the holder committed, for the holder to hand to the execution. Keyed by
-- the revision of the step that accepted it.
CREATE TABLE task_signal (
	task_id  TEXT    NOT NULL REFERENCES task (id) ON DELETE CASCADE,
	revision INTEGER NOT NULL,
	kind     TEXT    NOT NULL CHECK (kind IN ('input', 'cancel')),
	payload  BLOB    NOT NULL,
	PRIMARY KEY (task_id, revision)
) STRICT, WITHOUT ROWID;

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

-- Usage counters for the quotas (quota.go), kept by the triggers below in
-- the transaction of every write that changes what they count, so that an
-- admission, a registration or a subscription reads one row instead of
-- summing the principal's history. caller_usage holds, per caller with
-- stored tasks, its terminal tasks and the bytes of its task documents,
-- event payloads and input records; endpoint_count holds, per endpoint, its
-- stored versions and presence subscriptions; stat 'subscriptions' the
-- store's subscriptions. A row whose counts fall to zero is deleted.
-- Store.CheckCounters compares them with the sums (serve, at start).
--
-- A task's caller never changes, and a task is deleted only by
-- TaskTx.PurgeTask, after its events and input records, so that their
-- triggers still find the caller.
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

INSERT INTO stat (name, value) VALUES ('subscriptions', 0);

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

-- The Human Messaging profile (chat.go): consent and XEP-0191 blocking per
-- endpoint and peer, the outbox of messages endpoints send (kept until sent,
-- at least once), and the queue of messages waiting for MCP clients.
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

-- Claims on outbox messages (lease.go): the gateway sending a message, until
-- when (milliseconds). A claim that lapsed may be taken by another gateway.
CREATE TABLE chat_outbox_claim (
	seq         INTEGER NOT NULL PRIMARY KEY REFERENCES chat_outbox (seq) ON DELETE CASCADE,
	holder      TEXT    NOT NULL,
	claim_until INTEGER NOT NULL
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

-- The state of `agentgw mcp` (mcpstate.go): the messages its accounts
-- received, queued per account until an MCP client takes them (message
-- is the MCP face's JSON, as bytes), the count of those dropped past the
-- queue's bounds, and the MCP tasks of agent calls, each bound to its
-- owner (the caller) and to the XMPP task behind it, so that tasks/get
-- and tasks/result work after a restart.
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
