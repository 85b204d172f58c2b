package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// TaskByRequest reads the task that caller admitted at target under
// requestID (the admission replay record) on the reader pool, or returns
// ErrNotFound. Ad-hoc command sessions find their task by it.
func (s *Store) TaskByRequest(ctx context.Context, caller, target, requestID string) (TaskRecord, error) {
	tx, err := s.beginRead(ctx)
	if err != nil {
		return TaskRecord{}, fmt.Errorf("db: task by request: %w", err)
	}
	defer tx.rollback()
	rec, err := scanTask(tx.queryRow(ctx, sqlTaskByRequest, caller, target, requestID))
	if err != nil {
		return TaskRecord{}, err
	}
	if err := tx.commit(); err != nil {
		return TaskRecord{}, fmt.Errorf("db: task by request: %w", err)
	}
	return rec, nil
}

// sqlLastEventOfType reads a task's latest event of one type, walking the
// primary key backwards.
const sqlLastEventOfType = `SELECT task_id, revision, event_id, type, payload FROM task_event
	WHERE task_id = ? AND type = ? ORDER BY revision DESC LIMIT 1`

// LastTaskEvent reads the latest event of type typ of a task on the reader
// pool, or returns ErrNotFound when it has none.
func (s *Store) LastTaskEvent(ctx context.Context, id, typ string) (TaskEvent, error) {
	tx, err := s.beginRead(ctx)
	if err != nil {
		return TaskEvent{}, fmt.Errorf("db: last task event: %w", err)
	}
	defer tx.rollback()
	var ev TaskEvent
	err = tx.queryRow(ctx, sqlLastEventOfType, id, typ).Scan(&ev.TaskID, &ev.Revision, &ev.ID, &ev.Type, &ev.Payload)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return TaskEvent{}, fmt.Errorf("db: last task event: %w", ErrNotFound)
	case err != nil:
		return TaskEvent{}, fmt.Errorf("db: last task event: %w", err)
	}
	return ev, tx.commit()
}
