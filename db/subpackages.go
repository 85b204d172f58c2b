package db

import (
	"context"
	"database/sql"

	"agentgw/db/internal/pg"
	"agentgw/db/internal/storetx"
)

// The transactions of a Store for the packages under db that keep state
// of their own in it (db/mcpstate) or move it (db/storecopy), through
// db/internal/storetx: nothing outside db sees them.

func init() {
	storetx.Of = func(store any) storetx.Store { return subStore{store.(*Store)} }
}

type subStore struct{ s *Store }

func (s subStore) BeginRead(ctx context.Context) (storetx.Tx, error) {
	t, err := s.s.beginRead(ctx)
	if err != nil {
		return nil, err
	}
	return subTx{t}, nil
}

func (s subStore) BeginWrite(ctx context.Context) (storetx.Tx, error) {
	t, err := s.s.beginWrite(ctx)
	if err != nil {
		return nil, err
	}
	return subTx{t}, nil
}

type subTx struct{ t *txn }

func (t subTx) Exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return t.t.exec(ctx, query, args...)
}

func (t subTx) Query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return t.t.query(ctx, query, args...)
}

func (t subTx) QueryRow(ctx context.Context, query string, args ...any) *sql.Row {
	return t.t.queryRow(ctx, query, args...)
}

func (t subTx) Commit() error { return t.t.commit() }
func (t subTx) Rollback()     { t.t.rollback() }

// ResetIdentities moves PostgreSQL's identity sequences past the copied
// rows; SQLite's INTEGER PRIMARY KEY needs nothing.
func (t subTx) ResetIdentities(ctx context.Context) error {
	if !t.t.pg {
		return nil
	}
	return pg.ResetIdentities(ctx, t.t.pgq())
}
