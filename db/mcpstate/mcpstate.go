// Package mcpstate is the state of `agentgw mcp` (package mcpface) in the
// store, on either engine: the messages its accounts received, queued per
// account until an MCP client takes them, how many were dropped past the
// queue's bounds, and the MCP tasks of agent calls, each bound to its owner
// and to the XMPP task behind it.
package mcpstate

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"time"

	"agentgw/db"
	"agentgw/db/internal/storetx"
)

// The state lives in the same store as the gateway's, in tables of its own
// (mcp_message, mcp_dropped, mcp_task): `[mcp] database` may name its own
// SQLite file, or the same PostgreSQL database as `[database] url`, so
// that a restart, or another `agentgw mcp` on another machine, finds it.
//
// Every time is passed in by the caller (mcpface's clock), not read from
// db.Store.Now: the MCP face keeps its own clock for its tests.

// Store is the state of `agentgw mcp` in one db.Store.
type Store struct{ tx storetx.Store }

// Of is the state of `agentgw mcp` in s.
func Of(s *db.Store) Store { return Store{storetx.Of(s)} }

// Message is one queued message of an `agentgw mcp` account.
type Message struct {
	// ID is the message's identifier of our own, unique in the store.
	ID         string
	ReceivedAt time.Time
	// Message is the message as the MCP face encoded it (JSON); the store
	// keeps its bytes and counts them against the byte bound.
	Message []byte
}

// Task is one MCP task of an agent call and the XMPP task behind it.
type Task struct {
	ID, Owner, Account              string
	Endpoint, XMPPTaskID, RequestID string
	Version, Tool                   string
	Hash                            [32]byte // the pinned manifest's
	Status, XMPPState               string
	Revision                        int64
	Created, Updated, RetainUntil   time.Time
	TTL                             time.Duration
	Result                          []byte // set once terminal (JSON)
}

// PushMessages queues ms for account, oldest first, in one write
// transaction (one durable commit however many there are). Then it drops
// the oldest messages of account past max, and past maxBytes of stored
// messages in all (0: no byte bound), but never the newest, and adds
// their number to the account's drop count. It returns the IDs dropped,
// oldest first (ms' own included).
func (s Store) PushMessages(ctx context.Context, account string, ms []Message, max int, maxBytes int64) ([]string, error) {
	if len(ms) == 0 {
		return nil, nil
	}
	t, err := s.tx.BeginWrite(ctx)
	if err != nil {
		return nil, fmt.Errorf("db: mcp message: %w", err)
	}
	defer t.Rollback()
	for _, m := range ms {
		if _, err := t.Exec(ctx, `INSERT INTO mcp_message (account, id, received_at, message) VALUES (?, ?, ?, ?)`,
			account, m.ID, m.ReceivedAt.UnixMilli(), m.Message); err != nil {
			return nil, fmt.Errorf("db: mcp message: %w", err)
		}
	}
	if maxBytes <= 0 {
		maxBytes = math.MaxInt64
	}
	// Newest first: a row is dropped when it is past max, or when the
	// messages up to it (it included) exceed maxBytes; the newest stays.
	rows, err := t.Query(ctx, `SELECT id FROM (
		SELECT id, seq,
			ROW_NUMBER() OVER w AS n,
			SUM(length(message)) OVER w AS bytes
		FROM mcp_message WHERE account = ?
		WINDOW w AS (ORDER BY seq DESC ROWS UNBOUNDED PRECEDING)
	) AS q WHERE n > ? OR (n > 1 AND bytes > ?) ORDER BY seq`, account, max, maxBytes)
	if err != nil {
		return nil, fmt.Errorf("db: mcp message: %w", err)
	}
	var dropped []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, fmt.Errorf("db: mcp message: %w", err)
		}
		dropped = append(dropped, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("db: mcp message: %w", err)
	}
	for _, id := range dropped {
		if _, err := t.Exec(ctx, `DELETE FROM mcp_message WHERE id = ?`, id); err != nil {
			return nil, fmt.Errorf("db: mcp message: %w", err)
		}
	}
	if len(dropped) > 0 {
		if _, err := t.Exec(ctx, `INSERT INTO mcp_dropped AS d (account, n) VALUES (?, ?)
			ON CONFLICT (account) DO UPDATE SET n = d.n + excluded.n`, account, len(dropped)); err != nil {
			return nil, fmt.Errorf("db: mcp message: %w", err)
		}
	}
	if err := t.Commit(); err != nil {
		return nil, fmt.Errorf("db: mcp message: %w", err)
	}
	return dropped, nil
}

// QueuedBytes returns the bytes of the queued messages of account as
// stored, and how many there are.
func (s Store) QueuedBytes(ctx context.Context, account string) (bytes int64, n int, err error) {
	t, err := s.tx.BeginRead(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("db: mcp message: %w", err)
	}
	defer t.Rollback()
	if err := t.QueryRow(ctx, `SELECT COALESCE(SUM(length(message)), 0), COUNT(*) FROM mcp_message WHERE account = ?`,
		account).Scan(&bytes, &n); err != nil {
		return 0, 0, fmt.Errorf("db: mcp message: %w", err)
	}
	return bytes, n, t.Commit()
}

const (
	mcpOldestMessage = `SELECT id, received_at, message FROM mcp_message WHERE account = ? ORDER BY seq LIMIT 1`
	mcpMessageByID   = `SELECT id, received_at, message FROM mcp_message WHERE account = ? AND id = ?`
)

// Message returns the message id of account, or its oldest when id is
// empty; db.ErrNotFound if there is none.
func (s Store) Message(ctx context.Context, account, id string) (Message, error) {
	t, err := s.tx.BeginRead(ctx)
	if err != nil {
		return Message{}, fmt.Errorf("db: mcp message: %w", err)
	}
	defer t.Rollback()
	m, err := getMessage(ctx, t, account, id)
	if err != nil {
		return Message{}, err
	}
	return m, t.Commit()
}

// TakeMessage returns and removes the message id of account (its oldest
// when id is empty); db.ErrNotFound if there is none.
func (s Store) TakeMessage(ctx context.Context, account, id string) (Message, error) {
	t, err := s.tx.BeginWrite(ctx)
	if err != nil {
		return Message{}, fmt.Errorf("db: mcp message: %w", err)
	}
	defer t.Rollback()
	m, err := getMessage(ctx, t, account, id)
	if err != nil {
		return Message{}, err
	}
	if _, err := t.Exec(ctx, `DELETE FROM mcp_message WHERE id = ?`, m.ID); err != nil {
		return Message{}, fmt.Errorf("db: mcp message: %w", err)
	}
	if err := t.Commit(); err != nil {
		return Message{}, fmt.Errorf("db: mcp message: %w", err)
	}
	return m, nil
}

func getMessage(ctx context.Context, t storetx.Tx, account, id string) (Message, error) {
	var row *sql.Row
	if id == "" {
		row = t.QueryRow(ctx, mcpOldestMessage, account)
	} else {
		row = t.QueryRow(ctx, mcpMessageByID, account, id)
	}
	m, err := scanMessage(row)
	if errors.Is(err, sql.ErrNoRows) {
		return Message{}, fmt.Errorf("db: mcp message: %w", db.ErrNotFound)
	}
	if err != nil {
		return Message{}, fmt.Errorf("db: mcp message: %w", err)
	}
	return m, nil
}

func scanMessage(row interface{ Scan(...any) error }) (Message, error) {
	var m Message
	var at int64
	if err := row.Scan(&m.ID, &at, &m.Message); err != nil {
		return Message{}, err
	}
	m.ReceivedAt = time.UnixMilli(at)
	return m, nil
}

// Messages returns the queued messages of account, oldest first.
func (s Store) Messages(ctx context.Context, account string) ([]Message, error) {
	t, err := s.tx.BeginRead(ctx)
	if err != nil {
		return nil, fmt.Errorf("db: mcp message: %w", err)
	}
	defer t.Rollback()
	rows, err := t.Query(ctx, `SELECT id, received_at, message FROM mcp_message WHERE account = ? ORDER BY seq`, account)
	if err != nil {
		return nil, fmt.Errorf("db: mcp message: %w", err)
	}
	defer rows.Close()
	var out []Message
	for rows.Next() {
		m, err := scanMessage(rows)
		if err != nil {
			return nil, fmt.Errorf("db: mcp message: %w", err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("db: mcp message: %w", err)
	}
	return out, t.Commit()
}

// Dropped returns how many messages of account were dropped past the
// queue's bounds since the store was created.
func (s Store) Dropped(ctx context.Context, account string) (int64, error) {
	t, err := s.tx.BeginRead(ctx)
	if err != nil {
		return 0, fmt.Errorf("db: mcp message: %w", err)
	}
	defer t.Rollback()
	var n int64
	err = t.QueryRow(ctx, `SELECT n FROM mcp_dropped WHERE account = ?`, account).Scan(&n)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("db: mcp message: %w", err)
	}
	return n, t.Commit()
}

const mcpTaskColumns = "id, owner, account, endpoint, xmpp_task_id, request_id, version, hash, tool, status, xmpp_state, revision, created_at, updated_at, retain_until, ttl_ms, result"

func scanTask(sc interface{ Scan(...any) error }) (Task, error) {
	var r Task
	var created, updated, retain, ttl int64
	var result sql.NullString
	var hash []byte
	if err := sc.Scan(&r.ID, &r.Owner, &r.Account, &r.Endpoint, &r.XMPPTaskID, &r.RequestID, &r.Version, &hash, &r.Tool,
		&r.Status, &r.XMPPState, &r.Revision, &created, &updated, &retain, &ttl, &result); err != nil {
		return Task{}, err
	}
	copy(r.Hash[:], hash) // 32 bytes: the column's CHECK
	r.Created, r.Updated, r.RetainUntil = time.UnixMilli(created), time.UnixMilli(updated), time.UnixMilli(retain)
	r.TTL = time.Duration(ttl) * time.Millisecond
	if result.Valid {
		r.Result = []byte(result.String)
	}
	return r, nil
}

// CreateTask stores a new MCP task, and deletes those whose retention
// ended before now.
func (s Store) CreateTask(ctx context.Context, r Task, now time.Time) error {
	t, err := s.tx.BeginWrite(ctx)
	if err != nil {
		return fmt.Errorf("db: mcp task: %w", err)
	}
	defer t.Rollback()
	// The tasks past their retention go here, on the one write that adds
	// a task, so that the table holds no more than the live ones.
	if _, err := t.Exec(ctx, `DELETE FROM mcp_task WHERE retain_until < ?`, now.UnixMilli()); err != nil {
		return fmt.Errorf("db: mcp task: %w", err)
	}
	if _, err := t.Exec(ctx, `INSERT INTO mcp_task (`+mcpTaskColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)`,
		r.ID, r.Owner, r.Account, r.Endpoint, r.XMPPTaskID, r.RequestID, r.Version, r.Hash[:], r.Tool, r.Status, r.XMPPState, r.Revision,
		r.Created.UnixMilli(), r.Updated.UnixMilli(), r.RetainUntil.UnixMilli(), r.TTL.Milliseconds()); err != nil {
		return fmt.Errorf("db: mcp task: %w", err)
	}
	if err := t.Commit(); err != nil {
		return fmt.Errorf("db: mcp task: %w", err)
	}
	return nil
}

// UpdateTask records an unsettled task's state at now, its revision
// never going back, and its result once terminal (nil keeps it
// unsettled). A settled task is left as it is.
func (s Store) UpdateTask(ctx context.Context, id, status, xmppState string, revision int64, result []byte, now time.Time) error {
	t, err := s.tx.BeginWrite(ctx)
	if err != nil {
		return fmt.Errorf("db: mcp task: %w", err)
	}
	defer t.Rollback()
	// Numbered parameters throughout: ?1 appears twice.
	q := `UPDATE mcp_task SET status = ?2, xmpp_state = ?3, revision = CASE WHEN revision > ?1 THEN revision ELSE ?1 END,
		updated_at = ?4 WHERE id = ?5 AND result IS NULL`
	args := []any{revision, status, xmppState, now.UnixMilli(), id}
	if result != nil {
		q = `UPDATE mcp_task SET status = ?2, xmpp_state = ?3, revision = CASE WHEN revision > ?1 THEN revision ELSE ?1 END,
			updated_at = ?4, result = ?6 WHERE id = ?5 AND result IS NULL`
		args = append(args, string(result))
	}
	if _, err := t.Exec(ctx, q, args...); err != nil {
		return fmt.Errorf("db: mcp task: %w", err)
	}
	if err := t.Commit(); err != nil {
		return fmt.Errorf("db: mcp task: %w", err)
	}
	return nil
}

// Task returns the task id of owner in account, unless its retention
// ended before now; db.ErrNotFound otherwise. It only reads: CreateTask
// deletes the expired tasks, so that the polls of tasks/get, tasks/result
// and tasks/cancel never write.
func (s Store) Task(ctx context.Context, account, owner, id string, now time.Time) (Task, error) {
	t, err := s.tx.BeginRead(ctx)
	if err != nil {
		return Task{}, fmt.Errorf("db: mcp task: %w", err)
	}
	defer t.Rollback()
	r, err := scanTask(t.QueryRow(ctx, `SELECT `+mcpTaskColumns+` FROM mcp_task
		WHERE id = ? AND owner = ? AND account = ? AND retain_until >= ?`, id, owner, account, now.UnixMilli()))
	if errors.Is(err, sql.ErrNoRows) {
		return Task{}, fmt.Errorf("db: mcp task: %w", db.ErrNotFound)
	}
	if err != nil {
		return Task{}, fmt.Errorf("db: mcp task: %w", err)
	}
	return r, t.Commit()
}

// Tasks lists the tasks of owner in account retained at now, oldest
// first, at most max.
func (s Store) Tasks(ctx context.Context, account, owner string, max int, now time.Time) ([]Task, error) {
	return s.queryTasks(ctx, `SELECT `+mcpTaskColumns+` FROM mcp_task
		WHERE owner = ? AND account = ? AND retain_until >= ? ORDER BY created_at, id LIMIT ?`, owner, account, now.UnixMilli(), max)
}

// UnsettledTasks lists the tasks of account retained at now and not
// settled yet, oldest first: `agentgw mcp` follows them again after a
// restart.
func (s Store) UnsettledTasks(ctx context.Context, account string, now time.Time) ([]Task, error) {
	return s.queryTasks(ctx, `SELECT `+mcpTaskColumns+` FROM mcp_task
		WHERE account = ? AND result IS NULL AND retain_until >= ? ORDER BY created_at, id`, account, now.UnixMilli())
}

func (s Store) queryTasks(ctx context.Context, q string, args ...any) ([]Task, error) {
	t, err := s.tx.BeginRead(ctx)
	if err != nil {
		return nil, fmt.Errorf("db: mcp task: %w", err)
	}
	defer t.Rollback()
	rows, err := t.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("db: mcp task: %w", err)
	}
	defer rows.Close()
	var out []Task
	for rows.Next() {
		r, err := scanTask(rows)
		if err != nil {
			return nil, fmt.Errorf("db: mcp task: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("db: mcp task: %w", err)
	}
	return out, t.Commit()
}
