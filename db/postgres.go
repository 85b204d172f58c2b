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
// the same Store and methods on either engine. The queries are SQLite's,
// rewritten by db/internal/pg; one transaction-scoped advisory lock
// (pg.BeginLocked; pg.LockWrites for migrations) runs the writes of every
// process one at a time, as one SQLite file's writer does; commits are
// durable (synchronous_commit=on).
// What differs from SQLite, and why: docs/store.md, "PostgreSQL".

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
	writer, reader, lease, err := pg.Pools(rawURL, busyTimeoutMillis, pgWriterConns, pgReaderConns)
	if err != nil {
		return nil, pg.OpenError(rawURL, err)
	}
	fail := func(err error) (*Store, error) {
		lease.Close()
		reader.Close()
		writer.Close()
		return nil, pg.OpenError(rawURL, err)
	}
	migration, err := migrate.Postgres(ctx, writer, pg.LockWrites)
	if err != nil {
		return fail(err)
	}
	// Connect the readers now, as SQLite's are opened at Open: the first
	// stanzas then pay no connection set-up.
	if err := pg.Warm(ctx, reader, pgReaderConns); err != nil {
		return fail(err)
	}
	return &Store{
		path:      pg.Redact(rawURL),
		Now:       time.Now,
		writer:    writer,
		reader:    reader,
		lease:     lease,
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
