package db

import (
	"context"
	"database/sql"
	"time"

	"agentgw/db/internal/migrate"
	"agentgw/db/internal/pg"
)

// PostgreSQL, the store's second engine. Open takes a postgres:// or
// postgresql:// URL instead of a path; everything above this package uses
// the same Store and methods on either engine.
//
// The queries of the store are written once, in SQLite's dialect, and
// db/internal/pg rewrites each for PostgreSQL (placeholders and a few
// functions); the schema is schema_pg.sql (db/internal/migrate), with the
// counters kept by PL/pgSQL triggers. What SQLite's single writer gave,
// PostgreSQL gets from one transaction-scoped advisory lock that every
// write transaction takes first (pg.LockWrites): writes of every process on the database run one at
// a time, as IMMEDIATE transactions do on one SQLite file, so a
// read-then-write never races another writer and no write transaction can
// fail on a serialization conflict. Reads run in REPEATABLE READ READ ONLY
// transactions, one snapshot per call, as SQLite's deferred ones do.
//
// Commits are durable before a call returns: every connection sets
// synchronous_commit=on, whatever the server's default. A write waits for
// the write lock at most lock_timeout, SQLite's busy timeout (10 s), and
// then fails Transient, as SQLITE_BUSY does. It needs PostgreSQL 13 or
// newer (pg_current_xact_id_if_assigned).
//
// What differs:
//   - The search index's folding and grams are Go functions, which
//     PostgreSQL cannot call from a trigger: the triggers on
//     active_endpoint note the changed endpoints in search_pending, and
//     every write transaction redoes their search rows just before it
//     commits (pg.BeforeCommit).
//   - DataVersion is store_generation, which every write transaction moves
//     on before it commits.
//   - Check asks the server for nothing beyond a round trip, and Backup
//     refuses: PostgreSQL is backed up with its own tools (pg_dump).

// Tunables of the PostgreSQL pools.
const (
	// pgWriterConns is the size of the writer pool. Writes run one at a
	// time under the write lock in any case; one connection keeps this
	// process's writers queued in the pool rather than on the server,
	// as with SQLite's one writer connection.
	pgWriterConns = 1
	// pgReaderConns is the size of the reader pool.
	pgReaderConns = readerConns + 1
)

// openPostgres opens the PostgreSQL database at rawURL and brings its schema
// up to date.
func openPostgres(ctx context.Context, rawURL string) (*Store, error) {
	// A write waits for the write lock as long as SQLite's busy timeout,
	// then fails Transient (55P03), to be retried.
	writer, reader, err := pg.Pools(rawURL, busyTimeoutMillis, pgWriterConns, pgReaderConns)
	if err != nil {
		return nil, pg.OpenError(rawURL, err)
	}
	migration, err := migrate.Postgres(ctx, writer, pg.LockWrites)
	if err != nil {
		reader.Close()
		writer.Close()
		return nil, pg.OpenError(rawURL, err)
	}
	// Connect the readers now, as SQLite's are opened at Open: the first
	// stanzas then pay no connection set-up.
	if err := pg.Warm(ctx, reader, pgReaderConns); err != nil {
		reader.Close()
		writer.Close()
		return nil, pg.OpenError(rawURL, err)
	}
	return &Store{
		path:      pg.Redact(rawURL),
		Now:       time.Now,
		writer:    writer,
		reader:    reader,
		migration: migration,
		pg:        true,
		readOpts:  &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true},
	}, nil
}

// RedactURL returns rawURL with its password, if any, replaced by xxxxx,
// for logs and errors. A URL that does not parse is returned as
// "postgres://(unparsable URL)", since it may hold a password anywhere. A
// store name that is not a PostgreSQL URL (a SQLite path) is returned as
// it is.
func RedactURL(rawURL string) string { return pg.Redact(rawURL) }

// pgQuery is query rewritten for PostgreSQL; pgArgs are its arguments, the
// directory's upper bound spelled as PostgreSQL takes it.
func pgQuery(query string) string { return pg.Query(query) }
func pgArgs(args []any) []any     { return pg.Args(args, noUpperBound) }
