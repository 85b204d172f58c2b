package mcpface

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"agentgw/db"
	"agentgw/db/mcpstate"
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

// row is r as the store keeps it.
func (r TaskRecord) row() mcpstate.Task {
	return mcpstate.Task{ID: r.ID, Owner: r.Owner, Account: r.Account, Endpoint: r.Endpoint, XMPPTaskID: r.XMPPTaskID,
		RequestID: r.RequestID, Version: r.Version, Tool: r.Tool, Hash: r.Hash, Status: r.Status, XMPPState: r.XMPPState,
		Revision: r.Revision, Created: r.Created, Updated: r.Updated, RetainUntil: r.RetainUntil, TTL: r.TTL, Result: r.Result}
}

// taskRecord is the stored row t.
func taskRecord(t mcpstate.Task) TaskRecord {
	return TaskRecord{ID: t.ID, Owner: t.Owner, Account: t.Account, Endpoint: t.Endpoint, XMPPTaskID: t.XMPPTaskID,
		RequestID: t.RequestID, Version: t.Version, Tool: t.Tool, Hash: t.Hash, Status: t.Status, XMPPState: t.XMPPState,
		Revision: t.Revision, Created: t.Created, Updated: t.Updated, RetainUntil: t.RetainUntil, TTL: t.TTL,
		Result: json.RawMessage(t.Result)}
}

func taskRecords(ts []mcpstate.Task, err error) ([]TaskRecord, error) {
	if err != nil {
		return nil, err
	}
	out := make([]TaskRecord, len(ts))
	for i, t := range ts {
		out[i] = taskRecord(t)
	}
	return out, nil
}

// CreateTask stores a new task, and deletes those past their retention.
func (s *Store) CreateTask(ctx context.Context, r TaskRecord) error {
	if err := s.state.CreateTask(ctx, r.row(), s.Now()); err != nil {
		return fmt.Errorf("store task: %w", err)
	}
	return nil
}

// UpdateTask records a task's state, and its result once terminal (nil
// keeps the stored one).
func (s *Store) UpdateTask(ctx context.Context, id, status, xmppState string, revision int64, result json.RawMessage) error {
	if err := s.state.UpdateTask(ctx, id, status, xmppState, revision, result, s.Now()); err != nil {
		return fmt.Errorf("update task: %w", err)
	}
	return nil
}

// Task returns the task id of owner in account, unless it expired (past its
// retention). It only reads: CreateTask deletes the expired tasks, so that
// tasks/get and the waits of tasks/result and tasks/cancel, which read
// once a second, never write.
func (s *Store) Task(ctx context.Context, account, owner, id string) (TaskRecord, error) {
	t, err := s.state.Task(ctx, account, owner, id, s.Now())
	if errors.Is(err, db.ErrNotFound) {
		return TaskRecord{}, ErrNoTask
	}
	if err != nil {
		return TaskRecord{}, err
	}
	return taskRecord(t), nil
}

// Tasks lists the tasks of owner in account, oldest first, at most max.
func (s *Store) Tasks(ctx context.Context, account, owner string, max int) ([]TaskRecord, error) {
	return taskRecords(s.state.Tasks(ctx, account, owner, max, s.Now()))
}

// UnsettledTasks lists the tasks of account not settled yet: they are
// followed again after a restart.
func (s *Store) UnsettledTasks(ctx context.Context, account string) ([]TaskRecord, error) {
	return taskRecords(s.state.UnsettledTasks(ctx, account, s.Now()))
}
