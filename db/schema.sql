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
