package db

import (
	"context"
	"database/sql"
	"fmt"

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

// ResetIdentities moves every identity column's sequence past the rows
// copied with explicit values, so that the next insert does not collide
// with them. SQLite's INTEGER PRIMARY KEY needs nothing.
func (t subTx) ResetIdentities(ctx context.Context) error {
	if !t.t.pg {
		return nil
	}
	rows, err := t.t.tx.QueryContext(ctx, `SELECT table_name, column_name FROM information_schema.columns
		WHERE table_schema = current_schema() AND is_identity = 'YES'`)
	if err != nil {
		return err
	}
	var idents [][2]string
	for rows.Next() {
		var tc [2]string
		if err := rows.Scan(&tc[0], &tc[1]); err != nil {
			rows.Close()
			return err
		}
		idents = append(idents, tc)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, tc := range idents {
		q := `SELECT setval(pg_get_serial_sequence($1, $2), coalesce((SELECT max(` + tc[1] + `) FROM ` + tc[0] + `), 0) + 1, false)`
		if _, err := t.t.tx.ExecContext(ctx, q, tc[0], tc[1]); err != nil {
			return fmt.Errorf("%s.%s: %w", tc[0], tc[1], err)
		}
	}
	return nil
}
