// Package pg is what PostgreSQL needs as the store's engine, below
// package db: its connections, the rewrite of the store's queries from
// SQLite's dialect, the write lock, the search rows it fills before each
// commit, and its faults. Only db uses it; db's users never learn which
// engine they have.
package pg

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"agentgw/db/internal/searchtext"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
)

// writeLock is the key of the advisory lock that serializes the store's
// write transactions ("agentgw" in ASCII).
const writeLock = 0x6167656e74677700

// IsURL reports whether name is a PostgreSQL URL rather than a path.
func IsURL(name string) bool {
	return strings.HasPrefix(name, "postgres://") || strings.HasPrefix(name, "postgresql://")
}

// Redact returns rawURL with its password, if any, replaced by xxxxx,
// for logs and errors. A URL that does not parse is returned as
// "postgres://(unparsable URL)", since it may hold a password anywhere. A
// store name that is not a PostgreSQL URL (a SQLite path) is returned as
// it is.
func Redact(rawURL string) string {
	if !IsURL(rawURL) {
		return rawURL
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return "postgres://(unparsable URL)"
	}
	q := u.Query()
	if q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// password returns the password rawURL holds, or "".
func password(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return ""
	}
	if p, ok := u.User.Password(); ok {
		return p
	}
	return u.Query().Get("password")
}

// OpenError is the error of a failed db.Open, named by the redacted URL and
// with the password scrubbed from whatever the driver said.
func OpenError(rawURL string, err error) error {
	msg := err.Error()
	if p := password(rawURL); p != "" {
		msg = strings.ReplaceAll(msg, p, "xxxxx")
	}
	return fmt.Errorf("db: open %s: %s", Redact(rawURL), msg)
}

// ConnectTimeout bounds one attempt to connect, from the dial to the end
// of the startup exchange, when the URL gives no connect_timeout: without
// it, a server that accepts but never answers (stopped, or a half-open
// path) would hold a gateway at start, or a request, for good.
const ConnectTimeout = 10 * time.Second

// Pools opens the writer and reader pools of the database at rawURL (no
// connection yet): every connection commits durably (an acknowledged
// write must survive a crash of the server) and waits lockTimeoutMillis
// for the write lock; the readers cannot write, as with query_only on
// SQLite. lease is one connection for the writes that do not take the
// write lock (the lease renewals, db/lease.go).
func Pools(rawURL, lockTimeoutMillis string, writerConns, readerConns int) (writer, reader, lease *sql.DB, err error) {
	cfg, err := pgx.ParseConfig(rawURL)
	if err != nil {
		return nil, nil, nil, errors.New("invalid URL")
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = ConnectTimeout
	}
	cfg.RuntimeParams["synchronous_commit"] = "on"
	cfg.RuntimeParams["application_name"] = "agentgw"
	cfg.RuntimeParams["lock_timeout"] = lockTimeoutMillis + "ms"
	writer = stdlib.OpenDB(*cfg)
	writer.SetMaxOpenConns(writerConns)
	writer.SetMaxIdleConns(writerConns)
	rcfg := cfg.Copy()
	rcfg.RuntimeParams["default_transaction_read_only"] = "on"
	reader = stdlib.OpenDB(*rcfg)
	reader.SetMaxOpenConns(readerConns)
	reader.SetMaxIdleConns(readerConns)
	lease = stdlib.OpenDB(*cfg.Copy())
	lease.SetMaxOpenConns(1)
	lease.SetMaxIdleConns(1)
	return writer, reader, lease, nil
}

// Warm opens n connections of pool and leaves them idle in it.
func Warm(ctx context.Context, pool *sql.DB, n int) error {
	conns := make([]*sql.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range n {
		c, err := pool.Conn(ctx)
		if err != nil {
			return err
		}
		conns = append(conns, c)
		if err := c.PingContext(ctx); err != nil {
			return err
		}
	}
	return nil
}

// LockWrites takes the store's write lock for the rest of tx.
func LockWrites(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(writeLock))
	return err
}

// Querier runs a transaction's statements: a *sql.Tx, or the *sql.Conn of
// a transaction begun with BeginLocked.
type Querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// beginLocked begins a transaction and takes the write lock in it. With
// no arguments pgx sends it with the simple protocol, as one message.
var beginLocked = fmt.Sprintf("BEGIN; SELECT pg_advisory_xact_lock(%d)", int64(writeLock))

// BeginLocked begins a write transaction on conn, which must be outside
// one, and takes the store's write lock in it: one round trip, where
// sql.DB.BeginTx and LockWrites take two. End it with Commit or Rollback.
func BeginLocked(ctx context.Context, conn *sql.Conn) error {
	_, err := conn.ExecContext(ctx, beginLocked)
	return err
}

// Commit commits the transaction begun on conn by BeginLocked. Every
// write transaction runs BeforeCommit first, whose statement fails in a
// transaction that a failed statement aborted (25P02), so COMMIT never
// meets one (it would roll it back and answer as if it had succeeded).
func Commit(ctx context.Context, conn *sql.Conn) error {
	_, err := conn.ExecContext(ctx, "COMMIT")
	return err
}

// rollbackWait bounds Rollback's ROLLBACK, which runs after the caller's
// context may have ended.
const rollbackWait = 5 * time.Second

// Rollback ends the transaction begun on conn by BeginLocked, if it is
// still open, and returns conn to its pool. A connection left inside a
// transaction (the ROLLBACK failed) is dropped by the pool, not reused:
// pgx's ResetSession refuses it.
func Rollback(conn *sql.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), rollbackWait)
	defer cancel()
	conn.ExecContext(ctx, "ROLLBACK")
	conn.Close()
}

// Generation reads store_generation, the store's DataVersion.
func Generation(ctx context.Context, reader *sql.DB) (int64, error) {
	var v int64
	if err := reader.QueryRowContext(ctx, `SELECT n FROM store_generation WHERE id = 1`).Scan(&v); err != nil {
		return 0, fmt.Errorf("db: data version: %w", err)
	}
	return v, nil
}

// BeforeCommit runs at the end of every write transaction: it moves the
// store's generation on and redoes the search rows of the endpoints the
// transaction changed.
func BeforeCommit(ctx context.Context, q Querier) error {
	if err := syncSearch(ctx, q); err != nil {
		return fmt.Errorf("search index, store generation: %w", err)
	}
	return nil
}

// syncSearch finishes for every endpoint in search_pending what SQLite's
// search_index_* triggers do: each one that is active and not indexed (the
// triggers have unindexed the old row) is indexed from its active version.
// It costs the same few statements for one endpoint or an import of many,
// and one when the transaction changed no endpoint.
//
// That one statement also moves the store's generation on, if the
// transaction wrote: only then, as PRAGMA data_version only moves with a
// commit that changed the file. Whether it wrote does not depend on the
// order of the two: a pending row, whose deletion would make it a writer,
// is one this transaction wrote (every write transaction empties the
// table before it commits).
func syncSearch(ctx context.Context, q Querier) error {
	rows, err := q.QueryContext(ctx, `WITH pending AS (DELETE FROM search_pending RETURNING jid),
		generation AS (UPDATE store_generation SET n = n + 1
			WHERE id = 1 AND pg_current_xact_id_if_assigned() IS NOT NULL)
		SELECT a.jid, m.name, m.title, a.display_name
		FROM pending AS p
		JOIN active_endpoint AS a ON a.jid = p.jid
		JOIN manifest_version AS m ON m.endpoint_jid = a.jid AND m.version = a.version
		WHERE NOT EXISTS (SELECT 1 FROM search_text AS t WHERE t.jid = a.jid)`)
	if err != nil {
		return err
	}
	var jids, folded, names, gramJIDs, grams []string
	counts := map[string]int64{}
	for rows.Next() {
		var jid, name, title, display string
		if err := rows.Scan(&jid, &name, &title, &display); err != nil {
			rows.Close()
			return err
		}
		f := searchtext.Text(jid, name, title)
		jids, folded, names = append(jids, jid), append(folded, f), append(names, display)
		for _, g := range searchtext.Grams(f) {
			grams, gramJIDs = append(grams, g), append(gramJIDs, jid)
			counts[g]++
		}
	}
	if err := rows.Close(); err != nil {
		return err
	}
	if len(jids) == 0 {
		return nil
	}
	if _, err := q.ExecContext(ctx, `INSERT INTO search_text (jid, folded, display_name)
		SELECT * FROM unnest($1::text[], $2::text[], $3::text[])`, jids, folded, names); err != nil {
		return err
	}
	if _, err := q.ExecContext(ctx, `INSERT INTO search_gram (gram, jid)
		SELECT * FROM unnest($1::text[], $2::text[])`, grams, gramJIDs); err != nil {
		return err
	}
	distinct := make([]string, 0, len(counts))
	ns := make([]int64, 0, len(counts))
	for g, n := range counts {
		distinct, ns = append(distinct, g), append(ns, n)
	}
	_, err = q.ExecContext(ctx, `INSERT INTO search_gram_count AS c (gram, n)
		SELECT * FROM unnest($1::text[], $2::bigint[])
		ON CONFLICT (gram) DO UPDATE SET n = c.n + excluded.n`, distinct, ns)
	return err
}

// ResetIdentities moves every identity column's sequence past the rows
// tx wrote with explicit values (db/storecopy), so that the next insert
// does not collide with them.
func ResetIdentities(ctx context.Context, tx Querier) error {
	rows, err := tx.QueryContext(ctx, `SELECT table_name, column_name FROM information_schema.columns
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
		if _, err := tx.ExecContext(ctx, q, tc[0], tc[1]); err != nil {
			return fmt.Errorf("%s.%s: %w", tc[0], tc[1], err)
		}
	}
	return nil
}

// queries caches Query's rewrites, by the SQLite text.
var queries sync.Map

// Query returns query, written for SQLite, rewritten for PostgreSQL:
// placeholders ? and ?N become $N, and the few SQLite spellings the store
// uses become PostgreSQL's.
func Query(query string) string {
	if q, ok := queries.Load(query); ok {
		return q.(string)
	}
	q := rewrite(query)
	queries.Store(query, q)
	return q
}

// spellings are the SQLite spellings rewrite replaces, in order.
var spellings = strings.NewReplacer(
	// json_each(?) over a JSON array of strings, read as s.value.
	"json_each(?)", "json_array_elements_text(CAST(? AS text)::json)",
	// PostgreSQL allows no ON clause on a CROSS JOIN; the join order it
	// pins on SQLite is the planner's business here.
	"CROSS JOIN", "JOIN",
	"instr(", "strpos(",
	"LIMIT -1", "LIMIT ALL",
	"length(", "octet_length(",
)

// rewrite is pgQuery without the cache.
func rewrite(query string) string {
	query = spellings.Replace(query)
	var b strings.Builder
	b.Grow(len(query) + 16)
	next := 0
	inString := false
	for i := 0; i < len(query); i++ {
		c := query[i]
		switch {
		case c == '\'':
			inString = !inString
			b.WriteByte(c)
		case c == '?' && !inString:
			j := i + 1
			for j < len(query) && query[j] >= '0' && query[j] <= '9' {
				j++
			}
			if j > i+1 {
				b.WriteByte('$')
				b.WriteString(query[i+1 : j])
				i = j - 1
				continue
			}
			next++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(next))
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// upperBound stands for db's bound above every JID on PostgreSQL, which refuses text
// that is not UTF-8: U+10FFFF, the greatest code point, is a noncharacter
// that no JID holds (PRECIS disallows it), so twice over it sorts, bytewise,
// after every stored JID.
const upperBound = "\U0010FFFF\U0010FFFF"

// Args returns args with noUpperBound, db's bound above every JID (a
// byte that is not UTF-8), replaced by upperBound.
func Args(args []any, noUpperBound string) []any {
	for i, a := range args {
		if a == noUpperBound {
			args[i] = upperBound
		}
	}
	return args
}

// Code returns the SQLSTATE of err, or "".
func Code(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// Transient reports whether err is a PostgreSQL fault that may clear on
// its own: a lost or refused connection, a serialization failure or
// deadlock, a server shutting down or out of resources.
func Transient(err error) bool {
	code := Code(err)
	switch {
	case code == "":
		// A connection refused, lost or timed out: the write did not
		// happen, or (lost during the commit) its outcome is unknown, and
		// every store write is safe to run again (an admission replays).
		var ce *pgconn.ConnectError
		var ne net.Error
		return errors.As(err, &ce) || errors.As(err, &ne) || pgconn.SafeToRetry(err) || pgconn.Timeout(err) ||
			errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone)
	case strings.HasPrefix(code, "08"), // connection exception
		strings.HasPrefix(code, "40"),  // serialization failure, deadlock
		strings.HasPrefix(code, "53"),  // insufficient resources (53100: disk full)
		strings.HasPrefix(code, "57P"), // admin or crash shutdown, cannot connect now
		code == "55P03":                // lock_not_available: the write lock's lock_timeout
		return true
	}
	return false
}
