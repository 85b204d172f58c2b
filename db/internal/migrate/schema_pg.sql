-- The current agentgw schema on PostgreSQL (postgres.go): the tables of
-- schema.sql, column for column, and the same counters kept by triggers,
-- here in PL/pgSQL. A fresh database runs this file and records
-- len(pgMigrations) in agentgw_schema; whenever it changes, append the
-- equivalent migration to pgMigrations.
--
-- Conventions: times are BIGINT unix milliseconds UTC (next_wake
-- nanoseconds); every text column is COLLATE "C", so ORDER BY jid is
-- octetwise as on SQLite (directory paging depends on byte order); 0/1
-- flags stay integers, as the Go code reads and writes them.
--
-- The search index (search_text, search_gram, search_gram_count) is kept in
-- step with active_endpoint as on SQLite, in the same transaction. Its
-- folding and grams are Go functions, so the triggers below unindex an old
-- row themselves but only note a new one in search_pending, which every
-- write transaction of the store drains before it commits (pgSyncSearch).
-- A row inserted by plain SQL outside the store is indexed by the store's
-- next write.

CREATE TABLE endpoint (
	jid        TEXT COLLATE "C" NOT NULL PRIMARY KEY CHECK (jid <> ''),
	origin     TEXT COLLATE "C" NOT NULL DEFAULT 'admin',
	created_at BIGINT NOT NULL
);

CREATE TABLE manifest_version (
	endpoint_jid TEXT COLLATE "C" NOT NULL REFERENCES endpoint (jid) ON DELETE CASCADE,
	version      TEXT COLLATE "C" NOT NULL CHECK (version <> ''),
	hash         BYTEA  NOT NULL CHECK (octet_length(hash) = 32),
	canonical    BYTEA  NOT NULL,
	name         TEXT COLLATE "C" NOT NULL,
	title        TEXT COLLATE "C" NOT NULL DEFAULT '',
	description  TEXT COLLATE "C" NOT NULL DEFAULT '',
	created_at   BIGINT NOT NULL,
	PRIMARY KEY (endpoint_jid, version)
);

CREATE TABLE active_endpoint (
	jid          TEXT COLLATE "C" NOT NULL PRIMARY KEY REFERENCES endpoint (jid) ON DELETE CASCADE,
	version      TEXT COLLATE "C" NOT NULL,
	display_name TEXT COLLATE "C" NOT NULL,
	activated_at BIGINT NOT NULL,
	FOREIGN KEY (jid, version) REFERENCES manifest_version (endpoint_jid, version)
);

CREATE TABLE stat (
	name  TEXT COLLATE "C" NOT NULL PRIMARY KEY,
	value BIGINT NOT NULL
);

INSERT INTO stat (name, value) VALUES ('active_endpoints', 0), ('subscriptions', 0);

CREATE TABLE presence_subscription (
	endpoint_jid TEXT COLLATE "C" NOT NULL REFERENCES endpoint (jid) ON DELETE CASCADE,
	subscriber   TEXT COLLATE "C" NOT NULL CHECK (subscriber <> ''),
	created_at   BIGINT NOT NULL,
	PRIMARY KEY (endpoint_jid, subscriber)
);

CREATE TABLE version_tombstone (
	endpoint_jid TEXT COLLATE "C" NOT NULL CHECK (endpoint_jid <> ''),
	version      TEXT COLLATE "C" NOT NULL CHECK (version <> ''),
	hash         BYTEA  NOT NULL CHECK (octet_length(hash) = 32),
	removed_at   BIGINT NOT NULL,
	PRIMARY KEY (endpoint_jid, version)
);

CREATE TABLE version_retention (
	endpoint_jid TEXT COLLATE "C" NOT NULL,
	version      TEXT COLLATE "C" NOT NULL,
	holder       TEXT COLLATE "C" NOT NULL CHECK (holder <> ''),
	retain_until BIGINT NOT NULL,
	PRIMARY KEY (endpoint_jid, version, holder),
	FOREIGN KEY (endpoint_jid, version) REFERENCES manifest_version (endpoint_jid, version)
);

CREATE TABLE search_text (
	jid          TEXT COLLATE "C" NOT NULL PRIMARY KEY,
	folded       TEXT COLLATE "C" NOT NULL,
	display_name TEXT COLLATE "C" NOT NULL
);

CREATE TABLE search_gram (
	gram TEXT COLLATE "C" NOT NULL,
	jid  TEXT COLLATE "C" NOT NULL,
	PRIMARY KEY (gram, jid)
);

CREATE TABLE search_gram_count (
	gram TEXT COLLATE "C" NOT NULL PRIMARY KEY,
	n    BIGINT NOT NULL
);

-- An endpoint's postings, for unindexing it.
CREATE INDEX search_gram_jid ON search_gram (jid);

-- The endpoints whose search rows the current transaction must write.
CREATE TABLE search_pending (
	jid TEXT COLLATE "C" NOT NULL PRIMARY KEY
);

CREATE TABLE task (
	id          TEXT COLLATE "C" NOT NULL PRIMARY KEY CHECK (id <> ''),
	caller      TEXT COLLATE "C" NOT NULL,
	target      TEXT COLLATE "C" NOT NULL,
	request_id  TEXT COLLATE "C" NOT NULL,
	api_version TEXT COLLATE "C" NOT NULL,
	state       TEXT COLLATE "C" NOT NULL,
	terminal    BIGINT NOT NULL CHECK (terminal IN (0, 1)),
	revision    BIGINT NOT NULL CHECK (revision >= 0),
	next_wake   BIGINT NOT NULL,
	doc         BYTEA  NOT NULL,
	UNIQUE (target, caller, request_id),
	FOREIGN KEY (target, api_version) REFERENCES manifest_version (endpoint_jid, version)
);

CREATE INDEX task_purge ON task (next_wake) WHERE terminal = 1;
CREATE INDEX task_version ON task (target, api_version);

CREATE TABLE task_event (
	task_id  TEXT COLLATE "C" NOT NULL REFERENCES task (id) ON DELETE CASCADE,
	revision BIGINT NOT NULL CHECK (revision > 0),
	event_id TEXT COLLATE "C" NOT NULL,
	type     TEXT COLLATE "C" NOT NULL,
	payload  BYTEA  NOT NULL,
	PRIMARY KEY (task_id, revision)
);

CREATE TABLE task_input (
	task_id    TEXT COLLATE "C" NOT NULL REFERENCES task (id) ON DELETE CASCADE,
	request_id TEXT COLLATE "C" NOT NULL,
	doc        BYTEA NOT NULL,
	PRIMARY KEY (task_id, request_id)
);

CREATE TABLE mcp_import (
	endpoint_jid TEXT COLLATE "C" NOT NULL,
	version      TEXT COLLATE "C" NOT NULL,
	skipped      TEXT COLLATE "C" NOT NULL,
	imported_at  BIGINT NOT NULL,
	latest       BIGINT NOT NULL CHECK (latest IN (0, 1)),
	PRIMARY KEY (endpoint_jid, version),
	FOREIGN KEY (endpoint_jid, version) REFERENCES manifest_version (endpoint_jid, version) ON DELETE CASCADE
);

CREATE UNIQUE INDEX mcp_import_latest ON mcp_import (endpoint_jid) WHERE latest = 1;

CREATE TABLE search_generation (
	id BIGINT NOT NULL PRIMARY KEY CHECK (id = 1),
	n  BIGINT NOT NULL
);

INSERT INTO search_generation (id, n) VALUES (1, 0);

-- The store's generation (Store.DataVersion): every write transaction
-- moves it on before it commits, so that a change by any gateway is seen
-- by the others with one primary-key read.
CREATE TABLE store_generation (
	id BIGINT NOT NULL PRIMARY KEY CHECK (id = 1),
	n  BIGINT NOT NULL
);

INSERT INTO store_generation (id, n) VALUES (1, 0);

CREATE TABLE runtime_process (
	pgid        BIGINT NOT NULL PRIMARY KEY CHECK (pgid > 0),
	boot_id     TEXT COLLATE "C" NOT NULL,
	start_ticks BIGINT NOT NULL CHECK (start_ticks >= 0),
	owner_pid   BIGINT NOT NULL,
	owner_start BIGINT NOT NULL CHECK (owner_start >= 0),
	recorded_at BIGINT NOT NULL
);

CREATE TABLE caller_usage (
	caller   TEXT COLLATE "C" NOT NULL PRIMARY KEY,
	finished BIGINT NOT NULL,
	bytes    BIGINT NOT NULL
);

CREATE TABLE endpoint_count (
	jid           TEXT COLLATE "C" NOT NULL PRIMARY KEY,
	versions      BIGINT NOT NULL,
	subscriptions BIGINT NOT NULL
);

CREATE TABLE chat_contact (
	endpoint_jid TEXT COLLATE "C" NOT NULL CHECK (endpoint_jid <> ''),
	peer         TEXT COLLATE "C" NOT NULL CHECK (peer <> ''),
	handle       TEXT COLLATE "C" NOT NULL UNIQUE CHECK (handle <> ''),
	last_inbound BIGINT NOT NULL,
	blocked      BIGINT NOT NULL CHECK (blocked IN (0, 1)),
	PRIMARY KEY (endpoint_jid, peer)
);

CREATE TABLE chat_outbox (
	seq          BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
	endpoint_jid TEXT COLLATE "C" NOT NULL CHECK (endpoint_jid <> ''),
	recipient    TEXT COLLATE "C" NOT NULL CHECK (recipient <> ''),
	peer         TEXT COLLATE "C" NOT NULL CHECK (peer <> ''),
	origin_id    TEXT COLLATE "C" NOT NULL UNIQUE CHECK (origin_id <> ''),
	type         TEXT COLLATE "C" NOT NULL,
	body         TEXT COLLATE "C" NOT NULL,
	lang         TEXT COLLATE "C" NOT NULL,
	reply_to     TEXT COLLATE "C" NOT NULL,
	reply_id     TEXT COLLATE "C" NOT NULL,
	created_at   BIGINT NOT NULL
);

CREATE TABLE chat_queue (
	seq          BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
	endpoint_jid TEXT COLLATE "C" NOT NULL CHECK (endpoint_jid <> ''),
	id           TEXT COLLATE "C" NOT NULL UNIQUE CHECK (id <> ''),
	sender       TEXT COLLATE "C" NOT NULL CHECK (sender <> ''),
	recipient    TEXT COLLATE "C" NOT NULL,
	type         TEXT COLLATE "C" NOT NULL,
	body         TEXT COLLATE "C" NOT NULL,
	subject      TEXT COLLATE "C" NOT NULL,
	thread       TEXT COLLATE "C" NOT NULL,
	parent       TEXT COLLATE "C" NOT NULL,
	lang         TEXT COLLATE "C" NOT NULL,
	stanza_id    TEXT COLLATE "C" NOT NULL,
	received_at  BIGINT NOT NULL
);

CREATE INDEX chat_queue_endpoint ON chat_queue (endpoint_jid, seq);

-- The state of `agentgw mcp` (mcpstate.go), as on SQLite.
CREATE TABLE mcp_message (
	seq         BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
	account     TEXT COLLATE "C" NOT NULL CHECK (account <> ''),
	id          TEXT COLLATE "C" NOT NULL UNIQUE CHECK (id <> ''),
	received_at BIGINT NOT NULL,
	message     BYTEA  NOT NULL
);

CREATE INDEX mcp_message_account ON mcp_message (account, seq);

CREATE TABLE mcp_dropped (
	account TEXT COLLATE "C" NOT NULL PRIMARY KEY,
	n       BIGINT NOT NULL
);

CREATE TABLE mcp_task (
	id           TEXT COLLATE "C" NOT NULL PRIMARY KEY CHECK (id <> ''),
	owner        TEXT COLLATE "C" NOT NULL CHECK (owner <> ''),
	account      TEXT COLLATE "C" NOT NULL,
	endpoint     TEXT COLLATE "C" NOT NULL,
	xmpp_task_id TEXT COLLATE "C" NOT NULL,
	request_id   TEXT COLLATE "C" NOT NULL,
	version      TEXT COLLATE "C" NOT NULL,
	hash         BYTEA  NOT NULL CHECK (octet_length(hash) = 32),
	tool         TEXT COLLATE "C" NOT NULL,
	status       TEXT COLLATE "C" NOT NULL,
	xmpp_state   TEXT COLLATE "C" NOT NULL,
	revision     BIGINT NOT NULL,
	created_at   BIGINT NOT NULL,
	updated_at   BIGINT NOT NULL,
	retain_until BIGINT NOT NULL,
	ttl_ms       BIGINT NOT NULL,
	result       TEXT COLLATE "C"
);

CREATE INDEX mcp_task_owner ON mcp_task (owner, created_at);

-- The triggers. Row-level AFTER triggers run at the end of their statement,
-- in the statement's transaction, as SQLite's do.

CREATE FUNCTION active_endpoint_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP = 'INSERT' THEN
		UPDATE stat SET value = value + 1 WHERE name = 'active_endpoints';
	ELSIF TG_OP = 'DELETE' THEN
		UPDATE stat SET value = value - 1 WHERE name = 'active_endpoints';
	END IF;
	IF TG_OP IN ('UPDATE', 'DELETE') THEN
		-- Unindex the old row here, from its stored postings, so that a
		-- delete by any writer (a cascade, plain SQL) needs no Go.
		UPDATE search_gram_count AS c SET n = c.n - 1
			FROM search_gram AS g WHERE g.jid = OLD.jid AND c.gram = g.gram;
		DELETE FROM search_gram_count WHERE n = 0
			AND gram IN (SELECT gram FROM search_gram WHERE jid = OLD.jid);
		DELETE FROM search_gram WHERE jid = OLD.jid;
		DELETE FROM search_text WHERE jid = OLD.jid;
	END IF;
	IF TG_OP IN ('INSERT', 'UPDATE') THEN
		INSERT INTO search_pending (jid) VALUES (NEW.jid) ON CONFLICT DO NOTHING;
	END IF;
	RETURN NULL;
END $$;

CREATE TRIGGER active_endpoint_insert AFTER INSERT ON active_endpoint
	FOR EACH ROW EXECUTE FUNCTION active_endpoint_changed();
CREATE TRIGGER active_endpoint_update AFTER UPDATE OF version, display_name ON active_endpoint
	FOR EACH ROW EXECUTE FUNCTION active_endpoint_changed();
CREATE TRIGGER active_endpoint_delete AFTER DELETE ON active_endpoint
	FOR EACH ROW EXECUTE FUNCTION active_endpoint_changed();

CREATE FUNCTION search_text_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	UPDATE search_generation SET n = n + 1 WHERE id = 1;
	RETURN NULL;
END $$;

CREATE TRIGGER search_generation_change AFTER INSERT OR UPDATE OR DELETE ON search_text
	FOR EACH ROW EXECUTE FUNCTION search_text_changed();

CREATE FUNCTION task_usage() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP = 'INSERT' THEN
		INSERT INTO caller_usage AS u (caller, finished, bytes) VALUES (NEW.caller, NEW.terminal, octet_length(NEW.doc))
			ON CONFLICT (caller) DO UPDATE SET finished = u.finished + excluded.finished, bytes = u.bytes + excluded.bytes;
	ELSIF TG_OP = 'UPDATE' THEN
		UPDATE caller_usage SET finished = finished + NEW.terminal - OLD.terminal,
			bytes = bytes + octet_length(NEW.doc) - octet_length(OLD.doc)
			WHERE caller = NEW.caller;
	ELSE
		UPDATE caller_usage SET finished = finished - OLD.terminal, bytes = bytes - octet_length(OLD.doc)
			WHERE caller = OLD.caller;
		DELETE FROM caller_usage WHERE caller = OLD.caller AND finished = 0 AND bytes = 0;
	END IF;
	RETURN NULL;
END $$;

CREATE TRIGGER caller_usage_task_insert AFTER INSERT ON task
	FOR EACH ROW EXECUTE FUNCTION task_usage();
CREATE TRIGGER caller_usage_task_update AFTER UPDATE OF terminal, doc ON task
	FOR EACH ROW EXECUTE FUNCTION task_usage();
CREATE TRIGGER caller_usage_task_delete AFTER DELETE ON task
	FOR EACH ROW EXECUTE FUNCTION task_usage();

-- task_event.payload and task_input.doc: bytes of the task's caller.
CREATE FUNCTION task_part_usage() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
	delta BIGINT := 0;
	tid   TEXT;
BEGIN
	IF TG_TABLE_NAME = 'task_event' THEN
		IF TG_OP <> 'DELETE' THEN delta := delta + octet_length(NEW.payload); tid := NEW.task_id; END IF;
		IF TG_OP <> 'INSERT' THEN delta := delta - octet_length(OLD.payload); tid := OLD.task_id; END IF;
	ELSE
		IF TG_OP <> 'DELETE' THEN delta := delta + octet_length(NEW.doc); tid := NEW.task_id; END IF;
		IF TG_OP <> 'INSERT' THEN delta := delta - octet_length(OLD.doc); tid := OLD.task_id; END IF;
	END IF;
	UPDATE caller_usage SET bytes = bytes + delta
		WHERE caller = (SELECT caller FROM task WHERE id = tid);
	RETURN NULL;
END $$;

CREATE TRIGGER caller_usage_event_insert AFTER INSERT ON task_event
	FOR EACH ROW EXECUTE FUNCTION task_part_usage();
CREATE TRIGGER caller_usage_event_delete AFTER DELETE ON task_event
	FOR EACH ROW EXECUTE FUNCTION task_part_usage();
CREATE TRIGGER caller_usage_input_insert AFTER INSERT ON task_input
	FOR EACH ROW EXECUTE FUNCTION task_part_usage();
CREATE TRIGGER caller_usage_input_update AFTER UPDATE OF doc ON task_input
	FOR EACH ROW EXECUTE FUNCTION task_part_usage();
CREATE TRIGGER caller_usage_input_delete AFTER DELETE ON task_input
	FOR EACH ROW EXECUTE FUNCTION task_part_usage();

CREATE FUNCTION version_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP = 'INSERT' THEN
		INSERT INTO endpoint_count AS c (jid, versions, subscriptions) VALUES (NEW.endpoint_jid, 1, 0)
			ON CONFLICT (jid) DO UPDATE SET versions = c.versions + 1;
	ELSE
		UPDATE endpoint_count SET versions = versions - 1 WHERE jid = OLD.endpoint_jid;
		DELETE FROM endpoint_count WHERE jid = OLD.endpoint_jid AND versions = 0 AND subscriptions = 0;
	END IF;
	RETURN NULL;
END $$;

CREATE TRIGGER endpoint_count_version_insert AFTER INSERT ON manifest_version
	FOR EACH ROW EXECUTE FUNCTION version_count();
CREATE TRIGGER endpoint_count_version_delete AFTER DELETE ON manifest_version
	FOR EACH ROW EXECUTE FUNCTION version_count();

CREATE FUNCTION subscription_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP = 'INSERT' THEN
		INSERT INTO endpoint_count AS c (jid, versions, subscriptions) VALUES (NEW.endpoint_jid, 0, 1)
			ON CONFLICT (jid) DO UPDATE SET subscriptions = c.subscriptions + 1;
		UPDATE stat SET value = value + 1 WHERE name = 'subscriptions';
	ELSE
		UPDATE endpoint_count SET subscriptions = subscriptions - 1 WHERE jid = OLD.endpoint_jid;
		DELETE FROM endpoint_count WHERE jid = OLD.endpoint_jid AND versions = 0 AND subscriptions = 0;
		UPDATE stat SET value = value - 1 WHERE name = 'subscriptions';
	END IF;
	RETURN NULL;
END $$;

CREATE TRIGGER endpoint_count_subscription_insert AFTER INSERT ON presence_subscription
	FOR EACH ROW EXECUTE FUNCTION subscription_count();
CREATE TRIGGER endpoint_count_subscription_delete AFTER DELETE ON presence_subscription
	FOR EACH ROW EXECUTE FUNCTION subscription_count();

-- Several gateways on one store (lease.go; SQLite's leaseMigration): the
-- lease by which one gateway holds each task that is not terminal, the
-- signals (cancel, input) another gateway leaves for the holder, and the
-- claims on outbox messages.
CREATE TABLE task_lease (
	task_id     TEXT COLLATE "C" NOT NULL PRIMARY KEY REFERENCES task (id) ON DELETE CASCADE,
	holder      TEXT COLLATE "C" NOT NULL,
	lease_until BIGINT NOT NULL
);

CREATE INDEX task_lease_until ON task_lease (lease_until);
CREATE INDEX task_lease_holder ON task_lease (holder);

CREATE TABLE task_signal (
	task_id  TEXT COLLATE "C" NOT NULL REFERENCES task (id) ON DELETE CASCADE,
	revision BIGINT NOT NULL,
	kind     TEXT NOT NULL CHECK (kind IN ('input', 'cancel')),
	payload  BYTEA NOT NULL,
	PRIMARY KEY (task_id, revision)
);

CREATE TABLE chat_outbox_claim (
	seq         BIGINT NOT NULL PRIMARY KEY REFERENCES chat_outbox (seq) ON DELETE CASCADE,
	holder      TEXT COLLATE "C" NOT NULL,
	claim_until BIGINT NOT NULL
);
