package mcpface

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"agentgw/wire"
)

// ErrNoTask is returned for an unknown, foreign or expired MCP task.
var ErrNoTask = errors.New("mcpface: no such task")

// TaskRecord is one MCP task and the XMPP task behind it.
type TaskRecord struct {
	ID, Owner, Account              string
	Endpoint, XMPPTaskID, RequestID string
	Version, Tool                   string
	Hash                            wire.Hash // the pinned manifest's
	Status, XMPPState               string
	Revision                        int64
	Created, Updated, RetainUntil   time.Time
	TTL                             time.Duration
	Result                          json.RawMessage // set once terminal
}

const taskColumns = "id, owner, account, endpoint, xmpp_task_id, request_id, version, hash, tool, status, xmpp_state, revision, created_at, updated_at, retain_until, ttl_ms, result"

func scanTask(sc interface{ Scan(...any) error }) (TaskRecord, error) {
	var r TaskRecord
	var created, updated, retain, ttl int64
	var result sql.NullString
	var hash []byte
	err := sc.Scan(&r.ID, &r.Owner, &r.Account, &r.Endpoint, &r.XMPPTaskID, &r.RequestID, &r.Version, &hash, &r.Tool,
		&r.Status, &r.XMPPState, &r.Revision, &created, &updated, &retain, &ttl, &result)
	copy(r.Hash[:], hash) // 32 bytes: the column's CHECK
	r.Created, r.Updated, r.RetainUntil = time.UnixMilli(created), time.UnixMilli(updated), time.UnixMilli(retain)
	r.TTL = time.Duration(ttl) * time.Millisecond
	if result.Valid {
		r.Result = json.RawMessage(result.String)
	}
	return r, err
}

// CreateTask stores a new task, and deletes those past their retention.
func (s *Store) CreateTask(ctx context.Context, r TaskRecord) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	// The tasks past their retention go here, on the one write that adds
	// a task, so that the table holds no more than the live ones.
	if _, err := tx.ExecContext(ctx, "DELETE FROM mcp_task WHERE retain_until < ?", s.Now().UnixMilli()); err != nil {
		return fmt.Errorf("store task: %w", err)
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO mcp_task ("+taskColumns+") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)",
		r.ID, r.Owner, r.Account, r.Endpoint, r.XMPPTaskID, r.RequestID, r.Version, r.Hash[:], r.Tool, r.Status, r.XMPPState, r.Revision,
		r.Created.UnixMilli(), r.Updated.UnixMilli(), r.RetainUntil.UnixMilli(), r.TTL.Milliseconds()); err != nil {
		return fmt.Errorf("store task: %w", err)
	}
	return tx.Commit()
}

// UpdateTask records a task's state, and its result once terminal (nil
// keeps the stored one).
func (s *Store) UpdateTask(ctx context.Context, id, status, xmppState string, revision int64, result json.RawMessage) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	q := "UPDATE mcp_task SET status = ?, xmpp_state = ?, revision = max(revision, ?), updated_at = ? WHERE id = ? AND result IS NULL"
	args := []any{status, xmppState, revision, s.Now().UnixMilli(), id}
	if result != nil {
		q = "UPDATE mcp_task SET status = ?, xmpp_state = ?, revision = max(revision, ?), updated_at = ?, result = ? WHERE id = ? AND result IS NULL"
		args = []any{status, xmppState, revision, s.Now().UnixMilli(), string(result), id}
	}
	if _, err := tx.ExecContext(ctx, q, args...); err != nil {
		return fmt.Errorf("update task: %w", err)
	}
	return tx.Commit()
}

// Task returns the task id of owner in account, unless it expired (past its
// retention). It only reads: CreateTask deletes the expired tasks, so that
// tasks/get and the waits of tasks/result and tasks/cancel, which read
// once a second, never write.
func (s *Store) Task(ctx context.Context, account, owner, id string) (TaskRecord, error) {
	r, err := scanTask(s.db.QueryRowContext(ctx, "SELECT "+taskColumns+" FROM mcp_task WHERE id = ? AND owner = ? AND account = ? AND retain_until >= ?",
		id, owner, account, s.Now().UnixMilli()))
	if errors.Is(err, sql.ErrNoRows) {
		return TaskRecord{}, ErrNoTask
	}
	if err != nil {
		return TaskRecord{}, err
	}
	return r, nil
}

// Tasks lists the tasks of owner in account, oldest first, at most max.
func (s *Store) Tasks(ctx context.Context, account, owner string, max int) ([]TaskRecord, error) {
	return s.queryTasks(ctx, "SELECT "+taskColumns+" FROM mcp_task WHERE owner = ? AND account = ? AND retain_until >= ? ORDER BY created_at, id LIMIT ?", owner, account, s.Now().UnixMilli(), max)
}

// UnsettledTasks lists the tasks of account not settled yet: they are
// followed again after a restart.
func (s *Store) UnsettledTasks(ctx context.Context, account string) ([]TaskRecord, error) {
	return s.queryTasks(ctx, "SELECT "+taskColumns+" FROM mcp_task WHERE account = ? AND result IS NULL AND retain_until >= ? ORDER BY created_at", account, s.Now().UnixMilli())
}

func (s *Store) queryTasks(ctx context.Context, q string, args ...any) ([]TaskRecord, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []TaskRecord
	for rows.Next() {
		r, err := scanTask(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, tx.Commit()
}
