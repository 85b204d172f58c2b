// Package storetx gives the store's own subpackages (db/mcpstate,
// db/storecopy) the transactions of a db.Store, and nothing else does:
// their queries are written once, in SQLite's dialect, and db runs them
// on the engine it has, rewritten for PostgreSQL there. Package db sets
// Of when it loads.
package storetx

import (
	"context"
	"database/sql"
)

// Tx is one transaction of a store, as db's own methods run them: every
// call in one transaction, read at one instant.
type Tx interface {
	Exec(ctx context.Context, query string, args ...any) (sql.Result, error)
	Query(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRow(ctx context.Context, query string, args ...any) *sql.Row
	// Commit commits; Rollback aborts unless committed (defer it).
	Commit() error
	Rollback()
	// ResetIdentities moves every identity column's sequence past the
	// rows written with explicit values (a copy); nothing on SQLite.
	ResetIdentities(ctx context.Context) error
}

// Store is the transactions of one store.
type Store interface {
	// BeginRead starts a read transaction: one snapshot.
	BeginRead(ctx context.Context) (Tx, error)
	// BeginWrite starts a write transaction, serialized with every
	// other writer of the store.
	BeginWrite(ctx context.Context) (Tx, error)
}

// Of returns the transactions of store, which must be a *db.Store.
var Of func(store any) Store
