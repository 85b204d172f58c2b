// Package db is agentgw's store: endpoints, immutable manifest versions,
// the active-version pointer and presence subscriptions, tasks, chat and
// the search index. Two engines sit behind one Store, SQLite (a path, the
// default) and PostgreSQL (a postgres:// URL); nothing outside this
// package knows which one it has. Under it: the schemas (internal/migrate),
// the PostgreSQL engine (internal/pg), the state of `agentgw mcp`
// (mcpstate) and the copy between engines (storecopy). Every exported
// method runs in one transaction of its own, at one instant (Store.Now).
// How each engine keeps the data: docs/store.md.
package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"agentgw/db/internal/migrate"
	"agentgw/db/internal/pg"
	"agentgw/internal/privfile"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// Tunables of the connection pools.
const (
	// readerConns is the number of reader connections; one more is held
	// permanently for DataVersion.
	readerConns = 4

	// readerCacheKiB bounds each reader connection's page cache, in KiB
	// (SQLite's default is 2,000). The hot reads are answered from
	// memory above the store; what a reader reads is mostly the
	// start-up's full scans (the search index, the endpoint answers),
	// whose pages would stay cached, each connection its own copy, and
	// make most of an idle gateway's anonymous memory
	// (docs/BENCHMARKS.md, "SQLite's page cache"). A page not cached is
	// read from the operating system's cache.
	readerCacheKiB = "256"

	// busyTimeoutMillis is how long a connection waits for a lock held by
	// another connection or process before failing with SQLITE_BUSY.
	busyTimeoutMillis = migrate.BusyTimeoutMillis
)

// writerDSN is the query string of every writer connection. synchronous=FULL
// because an acknowledged write must survive power loss; temp_store=MEMORY
// because the search triggers' statement journals otherwise go to temporary
// files (bulk imports were a third slower); _txlock=immediate
// because a deferred transaction that later writes can fail with
// SQLITE_BUSY without ever calling the busy handler.
//
// modernc applies busy_timeout first and the other _pragma values in
// lexicographic order on every new connection.
const writerDSN = "_pragma=busy_timeout(" + busyTimeoutMillis + ")" +
	"&_pragma=foreign_keys(1)" +
	"&_pragma=journal_mode(WAL)" +
	"&_pragma=synchronous(FULL)" +
	"&_pragma=temp_store(2)" +
	"&_txlock=immediate"

// readerDSN is the query string of every reader connection: the same pragmas
// as the writer, deferred transactions, query_only so that a read path
// can never write by mistake, and a page cache of readerCacheKiB.
const readerDSN = "_pragma=busy_timeout(" + busyTimeoutMillis + ")" +
	"&_pragma=cache_size(-" + readerCacheKiB + ")" +
	"&_pragma=foreign_keys(1)" +
	"&_pragma=journal_mode(WAL)" +
	"&_pragma=query_only(1)" +
	"&_pragma=synchronous(FULL)" +
	"&_txlock=deferred"

// Errors returned, wrapped with context, by the store's methods. Test for
// them with errors.Is.
var (
	// ErrNotFound means the endpoint or version asked for does not exist
	// (or, for ActiveVersion, is not active).
	ErrNotFound = errors.New("not found")

	// ErrConflict means a write contradicts what is stored, such as a
	// version registered again with different content.
	ErrConflict = errors.New("conflict")

	// ErrHashMismatch means an activation named a hash that is not the
	// stored hash of the version it names.
	ErrHashMismatch = errors.New("hash mismatch")
)

// Store is agentgw's database. It is safe for concurrent use, and several
// Stores (in one or several processes) may share one file.
type Store struct {
	// path is the database file Open was given.
	path string

	// Now returns the current time. It defaults to time.Now and is read
	// once at the start of each transaction, so everything one call writes
	// carries the same instant. Set it before the Store is used.
	Now func() time.Time

	writer *sql.DB // one connection, IMMEDIATE transactions
	reader *sql.DB // readerConns+1 connections, deferred, query_only
	// lease is PostgreSQL's connection for the lease renewals, which
	// do not take the write lock (lease.go); nil on SQLite.
	lease *sql.DB

	// dataVersionMu serializes use of dataVersionConn.
	dataVersionMu sync.Mutex
	// dataVersionConn is the one connection DataVersion asks, because
	// PRAGMA data_version is only comparable on a single connection.
	dataVersionConn *sql.Conn

	// hotReads are hotReads prepared on the reader pool (see tx.go).
	hotReads map[string]*sql.Stmt

	// mem is the search index in memory (search_mem.go); sqlSearchOnly
	// turns it off (tests compare the two).
	mem           memSearch
	sqlSearchOnly bool

	// migration is what Open did to the schema.
	migration Migration

	// pg is set when the store is a PostgreSQL database (postgres.go);
	// readOpts are the options of its read transactions.
	pg       bool
	readOpts *sql.TxOptions
}

// Open opens (creating if needed) the database at path and brings its schema
// up to date. It refuses a database written by a newer binary.
//
// A path that is a postgres:// or postgresql:// URL opens that PostgreSQL
// database instead (postgres.go).
func Open(ctx context.Context, path string) (*Store, error) {
	if pg.IsURL(path) {
		return openPostgres(ctx, path)
	}
	if path == "" || strings.ContainsRune(path, '?') {
		// modernc splits the DSN at the first '?'.
		return nil, fmt.Errorf("db: open: invalid path %q", path)
	}
	if err := createPrivate(path); err != nil {
		return nil, fmt.Errorf("db: open: %w", err)
	}
	writer, err := sql.Open("sqlite", path+"?"+writerDSN)
	if err != nil {
		return nil, fmt.Errorf("db: open: %w", err)
	}
	writer.SetMaxOpenConns(1)
	writer.SetMaxIdleConns(1)
	writer.SetConnMaxLifetime(0)
	writer.SetConnMaxIdleTime(0)

	// Migrate before the readers connect: the first writer connection is
	// the one that turns a new file into a WAL database.
	migration, err := migrate.SQLite(ctx, writer, path)
	if err != nil {
		writer.Close()
		return nil, err
	}

	reader, err := sql.Open("sqlite", path+"?"+readerDSN)
	if err != nil {
		writer.Close()
		return nil, fmt.Errorf("db: open: %w", err)
	}
	reader.SetMaxOpenConns(readerConns + 1)
	reader.SetMaxIdleConns(readerConns + 1)
	reader.SetConnMaxLifetime(0)
	reader.SetConnMaxIdleTime(0)

	conn, err := reader.Conn(ctx)
	if err != nil {
		reader.Close()
		writer.Close()
		return nil, fmt.Errorf("db: open: %w", err)
	}
	hot := make(map[string]*sql.Stmt, len(hotReads))
	for _, q := range hotReads {
		st, err := reader.PrepareContext(ctx, q)
		if err != nil {
			conn.Close()
			reader.Close()
			writer.Close()
			return nil, fmt.Errorf("db: open: prepare: %w", err)
		}
		hot[q] = st
	}
	return &Store{
		path:            path,
		Now:             time.Now,
		writer:          writer,
		reader:          reader,
		dataVersionConn: conn,
		hotReads:        hot,
		migration:       migration,
	}, nil
}

// Migration says what Open did to a database's schema. From equals To when
// the schema was already current; From is 0 for a new file. Backup is the
// copy of a SQLite file taken before its schema changed, or "".
type Migration = migrate.Migration

// SchemaVersions are the schema versions this binary writes: SQLite's and
// PostgreSQL's. Gateways sharing a store may be upgraded one at a time only
// between binaries that print the same (docs/deploy.md).
func SchemaVersions() (sqlite, postgres int) { return migrate.Versions() }

// Migrated says what Open did to the schema, and where it put the backup it
// took before changing an existing one: the caller logs it.
func (s *Store) Migrated() Migration { return s.migration }

// Path returns the database file the store was opened on; for PostgreSQL,
// its URL without the password.
func (s *Store) Path() string { return s.path }

// Close closes the database. Calls in progress finish first.
func (s *Store) Close() error {
	var err error
	if s.dataVersionConn != nil {
		s.dataVersionMu.Lock()
		err = s.dataVersionConn.Close()
		s.dataVersionMu.Unlock()
	}
	for _, st := range s.hotReads {
		err = errors.Join(err, st.Close())
	}
	if s.lease != nil {
		err = errors.Join(err, s.lease.Close())
	}
	return errors.Join(err, s.reader.Close(), s.writer.Close())
}

// DataVersion returns a number that changes whenever a connection other than
// the store's own observer connection, including this Store's writer and any
// other process, commits to the database. Poll it to notice edits made by
// another process (the CLI changing endpoints while serve runs): when the
// value differs from the last one seen, reload.
//
// PRAGMA data_version is only meaningful when compared on one connection, so
// the store holds one reader connection for it. It is not run inside a
// transaction, since a transaction would pin the snapshot being observed.
//
// On PostgreSQL it is the store's generation, which every write
// transaction moves on (postgres.go).
func (s *Store) DataVersion(ctx context.Context) (int64, error) {
	if s.pg {
		return pg.Generation(ctx, s.reader)
	}
	s.dataVersionMu.Lock()
	defer s.dataVersionMu.Unlock()
	var v int64
	if err := s.dataVersionConn.QueryRowContext(ctx, "PRAGMA data_version").Scan(&v); err != nil {
		return 0, fmt.Errorf("db: data version: %w", err)
	}
	return v, nil
}

// beginWrite starts an IMMEDIATE transaction on the writer connection,
// reading the clock once for it.
func (s *Store) beginWrite(ctx context.Context) (*txn, error) {
	if memoryOnly(ctx) {
		return nil, ErrWouldBlock
	}
	t, err := s.beginWriteTx(ctx)
	if err != nil {
		return nil, err
	}
	// Any write may have changed the directory: the next search checks
	// the search generation (search_mem.go).
	t.committed = s.mem.markDirty
	return t, nil
}

// beginWriteTx starts a write transaction: IMMEDIATE on SQLite's one
// writer connection; on PostgreSQL, one that first takes the store's write
// lock (postgres.go), so that writers run one at a time as on SQLite.
func (s *Store) beginWriteTx(ctx context.Context) (*txn, error) {
	if s.pg {
		conn, err := s.writer.Conn(ctx)
		if err != nil {
			return nil, err
		}
		if err := pg.BeginLocked(ctx, conn); err != nil {
			pg.Rollback(conn)
			return nil, err
		}
		t := s.newTxn(nil, s.Now().UTC())
		t.conn, t.write, t.ctx = conn, true, ctx
		return t, nil
	}
	tx, err := s.writer.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	return s.newTxn(tx, s.Now().UTC()), nil
}

// beginRead starts a deferred transaction on a reader connection, so that
// every query of one call sees the same snapshot.
func (s *Store) beginRead(ctx context.Context) (*txn, error) {
	if memoryOnly(ctx) {
		return nil, ErrWouldBlock
	}
	tx, err := s.reader.BeginTx(ctx, s.readOpts)
	if err != nil {
		return nil, err
	}
	t := s.newTxn(tx, s.Now().UTC())
	t.hot = s.hotReads
	return t, nil
}

// millis converts t to the stored representation.
func millis(t time.Time) int64 {
	return t.UnixMilli()
}

// fromMillis converts a stored time back to a UTC time.Time.
func fromMillis(ms int64) time.Time {
	return time.UnixMilli(ms).UTC()
}

// scanHash copies a stored 32-byte hash into an array.
func scanHash(b []byte) ([32]byte, error) {
	var h [32]byte
	if len(b) != len(h) {
		return h, fmt.Errorf("stored hash has %d bytes", len(b))
	}
	copy(h[:], b)
	return h, nil
}

// createPrivate creates the database file with mode 0600 if it does not
// exist yet (SQLite gives its -wal and -shm the database's mode), and
// refuses an existing database file that group or others may read: the
// database holds every caller's arguments and results.
func createPrivate(path string) error { return privfile.Database(path) }
