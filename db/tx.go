package db

import (
	"context"
	"database/sql"
	"time"

	"agentgw/db/internal/pg"
)

// txn is one transaction of the store, in the manner of WTF Dial's Tx: the
// SQL transaction, the instant it runs at (read once from Store.Now) and the
// statements it has prepared.
//
// Each distinct query is prepared once per transaction. With modernc,
// parsing and planning a short statement costs more than running it, and a
// bulk import runs the same few statements for every row: preparing per call
// made ImportVersions about 2.5 times slower. Statements are not shared across
// transactions: preparing on a pool while holding its only writer
// connection would deadlock.
type txn struct {
	tx *sql.Tx
	// conn is set instead of tx on a PostgreSQL write transaction, which
	// is begun by hand with its write lock in one round trip
	// (pg.BeginLocked); done once it is committed or rolled back.
	conn  *sql.Conn
	done  bool
	now   time.Time
	stmts map[string]*sql.Stmt // by query text; closed with tx
	// hot holds the reader pool's statements prepared at Open (reads
	// only; nil for writes).
	hot map[string]*sql.Stmt
	// committed, if set, runs after a successful commit.
	committed func()
	// pg is set on PostgreSQL: queries are written in SQLite's dialect
	// and rewritten for PostgreSQL (postgres.go), and not prepared per
	// transaction (pgx caches its prepared statements per connection).
	pg bool
	// write is set on a PostgreSQL write transaction: its commit first
	// brings the search index up to date and moves the store's
	// generation on (postgres.go).
	write bool
	// ctx is the context of a PostgreSQL write transaction, for the
	// statements its commit runs first.
	ctx context.Context
}

// newTxn wraps tx of store s.
func (s *Store) newTxn(tx *sql.Tx, now time.Time) *txn {
	return &txn{tx: tx, now: now, stmts: make(map[string]*sql.Stmt), pg: s.pg}
}

// hotReads are the queries that run for nearly every stanza. They are
// prepared on the reader pool once, at Open, and a reader transaction binds
// them with Tx.StmtContext, which database/sql answers from the statement it
// already prepared on that connection: no parsing per call. Preparing at Open
// (not lazily) matters: a pool prepare needs a free connection, and lazily
// every reader could be inside a transaction waiting for one.
//
// They are all listed here, in one place: the endpoint reads of disco#info
// and of a named version (endpoint.go, summary.go), the directory pages (directory.go), the
// search pages (search.go: preparing one costs three to five times what
// running it does), the search index's generation (search_mem.go), and the
// caller's task reads of every task command, task-state and task-result
// (task.go) and of every admission under a quota (quota.go).
var hotReads = []string{
	activeSummaryQuery, versionQuery,
	directoryCountAll, directoryCountScoped,
	directoryAscAll, directoryDescAll, directoryAscScoped, directoryDescScoped,
	searchGramCounts, searchCountAll, searchCountSample, searchAscAll, searchDescAll,
	searchCountScoped, searchAscScoped, searchDescScoped,
	searchGenerationQuery,
	sqlCallerTask, sqlCallerUsage,
}

// hotRow runs one of hotReads outside a transaction, on the reader pool.
func (s *Store) hotRow(ctx context.Context, query string, args ...any) *sql.Row {
	if s.pg {
		return s.reader.QueryRowContext(ctx, pgQuery(query), pgArgs(args)...)
	}
	return s.hotReads[query].QueryRowContext(ctx, args...)
}

// pgq is what a PostgreSQL transaction runs its statements on.
func (t *txn) pgq() pg.Querier {
	if t.conn != nil {
		return t.conn
	}
	return t.tx
}

// stmt returns query prepared for this transaction.
func (t *txn) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	if st, ok := t.stmts[query]; ok {
		return st, nil
	}
	if ps, ok := t.hot[query]; ok {
		st := t.tx.StmtContext(ctx, ps)
		t.stmts[query] = st
		return st, nil
	}
	st, err := t.tx.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	t.stmts[query] = st
	return st, nil
}

// exec runs a statement that returns no rows.
func (t *txn) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if t.pg {
		return t.pgq().ExecContext(ctx, pgQuery(query), pgArgs(args)...)
	}
	st, err := t.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

// query runs a statement that returns rows.
func (t *txn) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if t.pg {
		return t.pgq().QueryContext(ctx, pgQuery(query), pgArgs(args)...)
	}
	st, err := t.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

// queryRow runs a statement that returns at most one row.
func (t *txn) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	if t.pg {
		return t.pgq().QueryRowContext(ctx, pgQuery(query), pgArgs(args)...)
	}
	st, err := t.stmt(ctx, query)
	if err != nil {
		// A *sql.Row cannot carry an error of ours; running the query
		// unprepared fails the same way and reports it from Scan.
		return t.tx.QueryRowContext(ctx, query, args...)
	}
	return st.QueryRowContext(ctx, args...)
}

// commit commits the transaction, closing its statements.
func (t *txn) commit() error {
	if t.pg && t.write {
		if err := pg.BeforeCommit(t.ctx, t.pgq()); err != nil {
			return err
		}
	}
	if t.conn != nil {
		if t.done {
			return sql.ErrTxDone
		}
		if err := pg.Commit(t.ctx, t.conn); err != nil {
			return err
		}
		t.done = true
		t.conn.Close()
	} else if err := t.tx.Commit(); err != nil {
		return err
	}
	if t.committed != nil {
		t.committed()
	}
	return nil
}

// rollback aborts the transaction unless it was committed. Every method
// defers it, so its error (sql.ErrTxDone after a commit) is of no interest.
func (t *txn) rollback() {
	if t.conn == nil {
		t.tx.Rollback()
		return
	}
	if !t.done {
		t.done = true
		pg.Rollback(t.conn)
	}
}
