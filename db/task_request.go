package db

import (
	"context"
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
