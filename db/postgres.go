package db

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

	"agentgw/db/internal/migrate"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
)

// PostgreSQL, the store's second engine. Open takes a postgres:// or
// postgresql:// URL instead of a path; everything above this package uses
// the same Store and methods on either engine.
//
// The queries of the store are written once, in SQLite's dialect, and
// pgQuery rewrites each for PostgreSQL (placeholders and a few functions);
// the schema is schema_pg.sql (db/internal/migrate), with the counters
// kept by PL/pgSQL triggers. What SQLite's single writer gave, PostgreSQL gets from one
// transaction-scoped advisory lock that every write transaction takes
// first (pgLockWrites): writes of every process on the database run one at
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
//     commits (pgSyncSearch).
//   - DataVersion is store_generation, which every write transaction moves
//     on before it commits.
//   - Check asks the server for nothing beyond a round trip, and Backup
//     refuses: PostgreSQL is backed up with its own tools (pg_dump).

// pgWriteLock is the key of the advisory lock that serializes the store's
// write transactions ("agentgw" in ASCII).
const pgWriteLock = 0x6167656e74677700

// isPostgresURL reports whether name is a PostgreSQL URL rather than a path.
func isPostgresURL(name string) bool {
	return strings.HasPrefix(name, "postgres://") || strings.HasPrefix(name, "postgresql://")
}

// RedactURL returns rawURL with its password, if any, replaced by xxxxx,
// for logs and errors. A URL that does not parse is returned as
// "postgres://(unparsable URL)", since it may hold a password anywhere. A
// store name that is not a PostgreSQL URL (a SQLite path) is returned as
// it is.
func RedactURL(rawURL string) string {
	if !isPostgresURL(rawURL) {
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

// pgPassword returns the password rawURL holds, or "".
func pgPassword(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return ""
	}
	if p, ok := u.User.Password(); ok {
		return p
	}
	return u.Query().Get("password")
}

// pgOpenError is the error of a failed Open, named by the redacted URL and
// with the password scrubbed from whatever the driver said.
func pgOpenError(rawURL string, err error) error {
	msg := err.Error()
	if p := pgPassword(rawURL); p != "" {
		msg = strings.ReplaceAll(msg, p, "xxxxx")
	}
	return fmt.Errorf("db: open %s: %s", RedactURL(rawURL), msg)
}

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
	cfg, err := pgx.ParseConfig(rawURL)
	if err != nil {
		return nil, pgOpenError(rawURL, errors.New("invalid URL"))
	}
	// An acknowledged write must survive a crash of the server.
	cfg.RuntimeParams["synchronous_commit"] = "on"
	cfg.RuntimeParams["application_name"] = "agentgw"
	// A write waits for the write lock as long as SQLite's busy timeout,
	// then fails Transient (55P03), to be retried.
	cfg.RuntimeParams["lock_timeout"] = busyTimeoutMillis + "ms"
	writer := stdlib.OpenDB(*cfg)
	writer.SetMaxOpenConns(pgWriterConns)
	writer.SetMaxIdleConns(pgWriterConns)
	migration, err := migrate.Postgres(ctx, writer, pgLockWrites)
	if err != nil {
		writer.Close()
		return nil, pgOpenError(rawURL, err)
	}
	rcfg := cfg.Copy()
	// A read path can never write by mistake, as with query_only on SQLite.
	rcfg.RuntimeParams["default_transaction_read_only"] = "on"
	reader := stdlib.OpenDB(*rcfg)
	reader.SetMaxOpenConns(pgReaderConns)
	reader.SetMaxIdleConns(pgReaderConns)
	// Connect the readers now, as SQLite's are opened at Open: the first
	// stanzas then pay no connection set-up.
	if err := pgWarm(ctx, reader, pgReaderConns); err != nil {
		reader.Close()
		writer.Close()
		return nil, pgOpenError(rawURL, err)
	}
	return &Store{
		path:      RedactURL(rawURL),
		Now:       time.Now,
		writer:    writer,
		reader:    reader,
		migration: migration,
		pg:        true,
		readOpts:  &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true},
	}, nil
}

// pgWarm opens n connections of pool and leaves them idle in it.
func pgWarm(ctx context.Context, pool *sql.DB, n int) error {
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

// pgLockWrites takes the store's write lock for the rest of tx.
func pgLockWrites(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(pgWriteLock))
	return err
}

// pgGeneration reads store_generation.
func (s *Store) pgGeneration(ctx context.Context) (int64, error) {
	var v int64
	if err := s.reader.QueryRowContext(ctx, `SELECT n FROM store_generation WHERE id = 1`).Scan(&v); err != nil {
		return 0, fmt.Errorf("db: data version: %w", err)
	}
	return v, nil
}

// pgBeforeCommit runs at the end of every PostgreSQL write transaction:
// it redoes the search rows of the endpoints the transaction changed and
// moves the store's generation on.
func (t *txn) pgBeforeCommit(ctx context.Context) error {
	if err := pgSyncSearch(ctx, t.tx); err != nil {
		return fmt.Errorf("search index: %w", err)
	}
	// Only a transaction that wrote moves it on, as PRAGMA data_version
	// only moves with a commit that changed the file.
	if _, err := t.tx.ExecContext(ctx, `UPDATE store_generation SET n = n + 1
		WHERE id = 1 AND pg_current_xact_id_if_assigned() IS NOT NULL`); err != nil {
		return fmt.Errorf("store generation: %w", err)
	}
	return nil
}

// pgSyncSearch finishes for every endpoint in search_pending what SQLite's
// search_index_* triggers do: each one that is active and not indexed (the
// triggers have unindexed the old row) is indexed from its active version.
// It costs the same few statements for one endpoint or an import of many.
func pgSyncSearch(ctx context.Context, tx *sql.Tx) error {
	rows, err := tx.QueryContext(ctx, `WITH pending AS (DELETE FROM search_pending RETURNING jid)
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
		f := searchText(jid, name, title)
		jids, folded, names = append(jids, jid), append(folded, f), append(names, display)
		for _, g := range textGrams(f) {
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
	if _, err := tx.ExecContext(ctx, `INSERT INTO search_text (jid, folded, display_name)
		SELECT * FROM unnest($1::text[], $2::text[], $3::text[])`, jids, folded, names); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO search_gram (gram, jid)
		SELECT * FROM unnest($1::text[], $2::text[])`, grams, gramJIDs); err != nil {
		return err
	}
	distinct := make([]string, 0, len(counts))
	ns := make([]int64, 0, len(counts))
	for g, n := range counts {
		distinct, ns = append(distinct, g), append(ns, n)
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO search_gram_count AS c (gram, n)
		SELECT * FROM unnest($1::text[], $2::bigint[])
		ON CONFLICT (gram) DO UPDATE SET n = c.n + excluded.n`, distinct, ns)
	return err
}

// pgQueries caches pgQuery's rewrites, by the SQLite text.
var pgQueries sync.Map

// pgQuery returns query, written for SQLite, rewritten for PostgreSQL:
// placeholders ? and ?N become $N, and the few SQLite spellings the store
// uses become PostgreSQL's.
func pgQuery(query string) string {
	if q, ok := pgQueries.Load(query); ok {
		return q.(string)
	}
	q := pgRewrite(query)
	pgQueries.Store(query, q)
	return q
}

// pgSpellings are the SQLite spellings pgRewrite replaces, in order.
var pgSpellings = strings.NewReplacer(
	// json_each(?) over a JSON array of strings, read as s.value.
	"json_each(?)", "json_array_elements_text(CAST(? AS text)::json)",
	// PostgreSQL allows no ON clause on a CROSS JOIN; the join order it
	// pins on SQLite is the planner's business here.
	"CROSS JOIN", "JOIN",
	"instr(", "strpos(",
	"LIMIT -1", "LIMIT ALL",
	"length(", "octet_length(",
)

// pgRewrite is pgQuery without the cache.
func pgRewrite(query string) string {
	query = pgSpellings.Replace(query)
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

// pgUpperBound stands for noUpperBound on PostgreSQL, which refuses text
// that is not UTF-8: U+10FFFF, the greatest code point, is a noncharacter
// that no JID holds (PRECIS disallows it), so twice over it sorts, bytewise,
// after every stored JID.
const pgUpperBound = "\U0010FFFF\U0010FFFF"

// pgArgs returns args with noUpperBound replaced by pgUpperBound.
func pgArgs(args []any) []any {
	for i, a := range args {
		if a == noUpperBound {
			args[i] = pgUpperBound
		}
	}
	return args
}

// pgCode returns the SQLSTATE of err, or "".
func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// pgTransient reports whether err is a PostgreSQL fault that may clear on
// its own: a lost or refused connection, a serialization failure or
// deadlock, a server shutting down or out of resources.
func pgTransient(err error) bool {
	code := pgCode(err)
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
