package mcpface

import (
	"context"
	"crypto/rand"
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"agentgw/db"
	"agentgw/internal/privfile"
	"agentgw/wire"

	"modernc.org/sqlite"
)

// storeDSN is the query string of the store's one connection: WAL with
// synchronous=FULL, since a message the server delivered is acknowledged
// to nobody else and must survive a crash; a busy timeout for a second
// process on the same file; immediate write transactions.
const storeDSN = "_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_txlock=immediate"

// storeSchema is the schema of the store, kept by db's migration runner under
// db's rules: Create is the current schema, run on an empty file;
// storeMigrations[i] turns version i into i+1 (PRAGMA user_version),
// append-only, and entry 0 is never run. Every table of this database is
// created here and nowhere else. To change it: edit storeCreate, append the
// migration, and add a file the previous version wrote to testdata/upgrade
// (mcp-vN.db) with a test that opens it.
var storeSchema = db.Schema{Name: "mcp store", Create: storeCreate, Migrations: storeMigrations}

// storeMigrations: the shipped ones are frozen, never edit them.
var storeMigrations = []string{
	"", // 0 → 1: the queue, created by storeCreate
	// 1 → 2: the MCP tasks of agent calls (taskstore.go).
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
	// 2 → 3: a task's manifest hash as its 32 bytes, as db/ keeps hashes.
	taskHashMigration,
}

// taskHashMigration turns version 2 into version 3: mcp_task rebuilt with
// hash a 32-byte BLOB, decoded from the Base64 stored before. A hash that
// does not decode fails the migration, which leaves the file unchanged.
const taskHashMigration = `
CREATE TABLE mcp_task_v3 (
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
CREATE INDEX mcp_task_by_owner ON mcp_task (owner, created_at);
`

// storeCreate is the current schema (version len(storeMigrations)): the
// tables the migrations above make, as they make them
// (TestStoreCreateMatchesMigrations).
const storeCreate = `
CREATE TABLE message (
	seq         INTEGER PRIMARY KEY AUTOINCREMENT,
	account     TEXT    NOT NULL CHECK (account <> ''),
	id          TEXT    NOT NULL UNIQUE CHECK (id <> ''),
	received_at INTEGER NOT NULL,
	message     TEXT    NOT NULL
) STRICT;
CREATE INDEX message_by_account ON message (account, seq);
CREATE TABLE dropped (
	account TEXT    PRIMARY KEY,
	count   INTEGER NOT NULL
) STRICT;
-- The MCP tasks of agent calls (docs/mcp.md, "MCP Tasks"), each bound to
-- its owner (the caller) and to the XMPP task behind it, so that tasks/get
-- and tasks/result work after a restart.
CREATE TABLE mcp_task (
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
CREATE INDEX mcp_task_by_owner ON mcp_task (owner, created_at);
`

// sqlFuncHashFromBase64 is the SQL function taskHashMigration calls:
// agentgw_hash_from_base64(text) is the 32 bytes the padded standard
// Base64 text encodes, or an error.
const sqlFuncHashFromBase64 = "agentgw_hash_from_base64"

func init() {
	sqlite.MustRegisterDeterministicScalarFunction(sqlFuncHashFromBase64, 1,
		func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
			s, ok := args[0].(string)
			if !ok {
				return nil, fmt.Errorf("%s: not a text", sqlFuncHashFromBase64)
			}
			h, err := wire.ParseHashBase64(s)
			if err != nil {
				return nil, fmt.Errorf("%s(%q): %w", sqlFuncHashFromBase64, s, err)
			}
			return h[:], nil
		})
}

// ErrNotFound is returned for an unknown message id.
var ErrNotFound = errors.New("mcpface: no such message")

// Store is the received-message queue of `agentgw mcp`, in its own SQLite
// file: per account, oldest first, bounded. Its exported methods each own
// one transaction.
type Store struct {
	db *sql.DB
	// migration is what OpenStore did to the schema.
	migration db.Migration
	// Now is the clock; tests may replace it.
	Now func() time.Time
}

// Stored is a queued message with our own identifier.
type Stored struct {
	ID         string
	ReceivedAt time.Time
	Message    MessageResponse
}

// OpenStore opens or creates the store at path.
// The file and its -wal and -shm are private (mode 0600), and an existing
// one that group or others may read is refused: it holds every received
// message and every agent task result.
func OpenStore(ctx context.Context, path string) (*Store, error) {
	if path == "" || strings.ContainsRune(path, '?') {
		// modernc splits the DSN at the first '?'.
		return nil, fmt.Errorf("open message store: invalid path %q", path)
	}
	if err := privfile.Database(path); err != nil {
		return nil, fmt.Errorf("open message store: %w", err)
	}
	sqldb, err := sql.Open("sqlite", path+"?"+storeDSN)
	if err != nil {
		return nil, fmt.Errorf("open message store: %w", err)
	}
	sqldb.SetMaxOpenConns(1)
	s := &Store{db: sqldb, Now: time.Now}
	if s.migration, err = storeSchema.Migrate(ctx, sqldb, path); err != nil {
		sqldb.Close()
		return nil, fmt.Errorf("open message store %s: %w", path, err)
	}
	return s, nil
}

// Migrated says what OpenStore did to the schema: Backup names the copy
// taken before an existing store was migrated.
func (s *Store) Migrated() db.Migration { return s.migration }

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// newID returns a fresh message identifier of our own.
func newID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Push queues m for account under a fresh ID, then drops the oldest
// messages past max; it returns the stored message and the IDs dropped.
func (s *Store) Push(ctx context.Context, account string, m MessageResponse, max int) (Stored, []string, error) {
	st, dropped, err := s.PushBatch(ctx, account, []MessageResponse{m}, max, 0)
	if err != nil {
		return Stored{}, nil, err
	}
	return st[0], dropped, nil
}

// PushBatch queues ms for account, oldest first, under fresh IDs, in one
// transaction (one fsync however many there are). Then it drops the oldest
// messages of account past max, and past maxBytes of stored messages in
// all (0: no byte bound), but never the newest. It returns the messages
// stored (dropped ones included) and the IDs dropped, oldest first.
func (s *Store) PushBatch(ctx context.Context, account string, ms []MessageResponse, max int, maxBytes int64) ([]Stored, []string, error) {
	if len(ms) == 0 {
		return nil, nil, nil
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, nil, err
	}
	defer tx.Rollback()
	now := s.Now()
	out := make([]Stored, len(ms))
	for i, m := range ms {
		st := Stored{ID: newID(), ReceivedAt: now, Message: m}
		raw, err := json.Marshal(m)
		if err != nil {
			return nil, nil, err
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO message (account, id, received_at, message) VALUES (?, ?, ?, ?)",
			account, st.ID, st.ReceivedAt.UnixMilli(), string(raw)); err != nil {
			return nil, nil, fmt.Errorf("store message: %w", err)
		}
		out[i] = st
	}
	if maxBytes <= 0 {
		maxBytes = math.MaxInt64
	}
	// Newest first: a row is dropped when it is past max, or when the
	// messages up to it (it included) exceed maxBytes; the newest stays.
	rows, err := tx.QueryContext(ctx, `SELECT id FROM (
		SELECT id, seq,
			ROW_NUMBER() OVER w AS n,
			SUM(length(CAST(message AS BLOB))) OVER w AS bytes
		FROM message WHERE account = ?
		WINDOW w AS (ORDER BY seq DESC ROWS UNBOUNDED PRECEDING)
	) WHERE n > ? OR (n > 1 AND bytes > ?) ORDER BY seq`, account, max, maxBytes)
	if err != nil {
		return nil, nil, err
	}
	var dropped []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, nil, err
		}
		dropped = append(dropped, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	for _, id := range dropped {
		if _, err := tx.ExecContext(ctx, "DELETE FROM message WHERE id = ?", id); err != nil {
			return nil, nil, err
		}
	}
	if len(dropped) > 0 {
		if _, err := tx.ExecContext(ctx, `INSERT INTO dropped (account, count) VALUES (?, ?)
			ON CONFLICT (account) DO UPDATE SET count = count + excluded.count`, account, len(dropped)); err != nil {
			return nil, nil, err
		}
	}
	return out, dropped, tx.Commit()
}

// QueuedBytes returns the bytes of the messages of account as stored,
// and how many there are.
func (s *Store) QueuedBytes(ctx context.Context, account string) (bytes int64, n int, err error) {
	err = s.db.QueryRowContext(ctx, "SELECT COALESCE(SUM(length(CAST(message AS BLOB))), 0), COUNT(*) FROM message WHERE account = ?", account).Scan(&bytes, &n)
	return bytes, n, err
}

// Oldest returns the oldest message of account without removing it;
// ErrNotFound if there is none.
func (s *Store) Oldest(ctx context.Context, account string) (Stored, error) {
	return s.get(ctx, "SELECT id, received_at, message FROM message WHERE account = ? ORDER BY seq LIMIT 1", account)
}

// Get returns the message id of account; ErrNotFound if it is not queued.
func (s *Store) Get(ctx context.Context, account, id string) (Stored, error) {
	return s.get(ctx, "SELECT id, received_at, message FROM message WHERE account = ? AND id = ?", account, id)
}

func (s *Store) get(ctx context.Context, query string, args ...any) (Stored, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return Stored{}, err
	}
	defer tx.Rollback()
	st, err := scanStored(tx.QueryRowContext(ctx, query, args...))
	if err != nil {
		return Stored{}, err
	}
	return st, tx.Commit()
}

func scanStored(row interface{ Scan(...any) error }) (Stored, error) {
	var st Stored
	var at int64
	var raw string
	if err := row.Scan(&st.ID, &at, &raw); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return Stored{}, ErrNotFound
		}
		return Stored{}, err
	}
	st.ReceivedAt = time.UnixMilli(at)
	if err := json.Unmarshal([]byte(raw), &st.Message); err != nil {
		return Stored{}, fmt.Errorf("message %s: %w", st.ID, err)
	}
	return st, nil
}

// Take returns and removes the message id of account (the oldest when id
// is empty); ErrNotFound if there is none.
func (s *Store) Take(ctx context.Context, account, id string) (Stored, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return Stored{}, err
	}
	defer tx.Rollback()
	var st Stored
	if id == "" {
		st, err = scanStored(tx.QueryRowContext(ctx, "SELECT id, received_at, message FROM message WHERE account = ? ORDER BY seq LIMIT 1", account))
	} else {
		st, err = scanStored(tx.QueryRowContext(ctx, "SELECT id, received_at, message FROM message WHERE account = ? AND id = ?", account, id))
	}
	if err != nil {
		return Stored{}, err
	}
	if _, err := tx.ExecContext(ctx, "DELETE FROM message WHERE id = ?", st.ID); err != nil {
		return Stored{}, err
	}
	return st, tx.Commit()
}

// List returns the queued messages of account, oldest first.
func (s *Store) List(ctx context.Context, account string) ([]Stored, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, "SELECT id, received_at, message FROM message WHERE account = ? ORDER BY seq", account)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Stored
	for rows.Next() {
		st, err := scanStored(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, tx.Commit()
}

// Dropped returns how many messages of account were dropped past the
// bound since the store was created.
func (s *Store) Dropped(ctx context.Context, account string) (int64, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	var n int64
	err = tx.QueryRowContext(ctx, "SELECT count FROM dropped WHERE account = ?", account).Scan(&n)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, err
	}
	return n, tx.Commit()
}
