package db

import (
	"context"
	"database/sql"
)

// Test hooks: these are compiled only into this package's tests.

// ReaderConns is the size of the reader pool, without the DataVersion
// connection.
const ReaderConns = readerConns

// SchemaVersion is the schema version this binary writes.
func SchemaVersion() int { v, _ := SchemaVersions(); return v }

// Q returns query, written for SQLite, in the store's dialect.
func Q(s *Store, query string) string {
	if s.pg {
		return pgQuery(query)
	}
	return query
}

// OnPostgres reports whether s is a PostgreSQL store.
func OnPostgres(s *Store) bool { return s.pg }

// WriterPool returns the store's writer pool.
func WriterPool(s *Store) *sql.DB { return s.writer }

// ReaderPool returns the store's reader pool.
func ReaderPool(s *Store) *sql.DB { return s.reader }

// DirectoryQueries are the directory page and count queries, for plan checks.
var DirectoryQueries = map[string]string{
	"count-all":   directoryCountAll,
	"count-scope": directoryCountScoped,
	"asc-all":     directoryAscAll,
	"desc-all":    directoryDescAll,
	"asc-scope":   directoryAscScoped,
	"desc-scope":  directoryDescScoped,
}

// WriteTx is a write transaction of a store, for tests of the write lock.
type WriteTx struct{ t *txn }

// BeginWrite starts a write transaction of s, for tests of the write lock.
func BeginWrite(ctx context.Context, s *Store) (WriteTx, error) {
	t, err := s.beginWriteTx(ctx)
	if err != nil {
		return WriteTx{}, err
	}
	return WriteTx{t}, nil
}

// Rollback aborts tx.
func Rollback(tx WriteTx) { tx.t.rollback() }
