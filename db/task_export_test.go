package db

import (
	"database/sql"
	"errors"
	"fmt"
)

// Statements and TaskTx methods that only tests use.
const (
	sqlPinnable = `SELECT 1 FROM manifest_version AS m JOIN active_endpoint AS a ON a.jid = m.endpoint_jid
		WHERE m.endpoint_jid = ? AND m.version = ?`
	sqlInsertTask = `INSERT INTO task (id, caller, target, request_id, api_version, state, terminal, revision, next_wake, doc)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
)

// Pinnable returns ErrNotFound unless the endpoint is active and has the
// version: what an invocation may pin (AdmitNew checks the same).
func (t *TaskTx) Pinnable(endpoint, version string) error {
	var one int
	err := t.tx.queryRow(t.ctx, sqlPinnable, endpoint, version).Scan(&one)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("db: %s has no version %s or is not active: %w", endpoint, version, ErrNotFound)
	case err != nil:
		return fmt.Errorf("db: pinnable: %w", err)
	}
	return nil
}

// InsertTask inserts a new task. The row itself holds the version it
// pinned (Target, APIVersion) until the task is purged, so that the version
// cannot be removed while the task or its replay record exists; no separate
// hold row is written, which keeps an admission to the fewest B-tree pages
// (each one is a write-ahead-log frame in the fsync). A version that is
// not registered fails the foreign key, a plain error. Production admits
// with AdmitNew; tests insert fixtures, and check the foreign key, with
// this.
func (t *TaskTx) InsertTask(rec TaskRecord) error {
	if _, err := t.tx.exec(t.ctx, sqlInsertTask, rec.ID, rec.Caller, rec.Target, rec.RequestID, rec.APIVersion,
		rec.State, boolInt(rec.Terminal), rec.Revision, rec.NextWake.UnixNano(), rec.Doc); err != nil {
		return fmt.Errorf("db: insert task: %w", err)
	}
	return nil
}

// QueueLen is the number of closures waiting for the group committer,
// besides the batch being committed.
func QueueLen(c *GroupCommitter) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.queue)
}
