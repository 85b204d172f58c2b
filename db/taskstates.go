package db

import (
	"context"
	"fmt"
)

// TaskStates counts the stored tasks by state (for the agentgw_tasks
// metric), terminal tasks included until they are purged.
func (s *Store) TaskStates(ctx context.Context) (map[string]int, error) {
	tx, err := s.beginRead(ctx)
	if err != nil {
		return nil, fmt.Errorf("db: task states: %w", err)
	}
	defer tx.rollback()
	rows, err := tx.query(ctx, `SELECT state, count(*) FROM task GROUP BY state`)
	if err != nil {
		return nil, fmt.Errorf("db: task states: %w", err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var state string
		var n int
		if err := rows.Scan(&state, &n); err != nil {
			return nil, fmt.Errorf("db: task states: %w", err)
		}
		out[state] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("db: task states: %w", err)
	}
	return out, nil
}
