package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Tasks (package task, run by package taskd): the durable record of every
// admitted invocation, its lifecycle events and its input records.
//
// The task layer keeps each task as one opaque document (Doc) beside the
// columns the store looks tasks up by: ID; caller, target and request ID
// (the admission replay record, unique); and whether the task is terminal
// with its next wake-up, which is the deadline or input expiry while it
// runs and the purge time once it has settled. Events are keyed by (task,
// revision), input records by (task, input request ID). Every task write
// runs in a GroupCommitter closure (groupcommit.go), through TaskTx.

// TaskRecord is one stored task. Doc is the task layer's document; the
// other fields are the columns it is looked up by, kept in step with Doc
// by every write.
type TaskRecord struct {
	// ID is the task ID.
	ID string
	// Caller, Target and RequestID make up the admission replay record.
	Caller, Target, RequestID string
	// APIVersion is the pinned version of Target, which the task retains.
	APIVersion string
	// State is the task state; Terminal reports that it is final.
	State    string
	Terminal bool
	// Revision is the current revision.
	Revision int64
	// NextWake is when the task next needs attention: its deadline or
	// input expiry while it runs, its purge time once terminal. It is
	// stored at nanosecond resolution, since deadlines compare exactly.
	NextWake time.Time
	// Doc is the whole task as the task layer encodes it.
	Doc []byte
}

// TaskEvent is one lifecycle event of a task.
type TaskEvent struct {
	TaskID   string
	Revision int64
	// ID is the event ID; Type the event type; Payload its JSON object.
	ID, Type string
	Payload  []byte
}

// TaskInput is one input record of a task, keyed by its request ID.
type TaskInput struct {
	TaskID, RequestID string
	// Doc is the record as the task layer encodes it.
	Doc []byte
}

// The statements of task writes. They are prepared once on the writer pool
// when a GroupCommitter starts, so a commit of one closure does not parse
// them again.
const (
	sqlSavepoint = "SAVEPOINT task_op"
	sqlRelease   = "RELEASE task_op"
	sqlRollback  = "ROLLBACK TO task_op"
	// sqlReleaseNext releases one closure's savepoint and makes the
	// next's, in one message (PostgreSQL's simple protocol: no arguments).
	sqlReleaseNext = sqlRelease + "; " + sqlSavepoint

	sqlTaskByID = `SELECT id, caller, target, request_id, api_version, state, terminal, revision, next_wake, doc
		FROM task WHERE id = ?`
	sqlCallerTask = `SELECT id, caller, target, request_id, api_version, state, terminal, revision, next_wake, doc
		FROM task WHERE id = ? AND caller = ? AND target = ?`
	sqlTaskByRequest = `SELECT id, caller, target, request_id, api_version, state, terminal, revision, next_wake, doc
		FROM task WHERE caller = ? AND target = ? AND request_id = ?`
	sqlAdmission = `SELECT EXISTS (SELECT 1 FROM manifest_version AS m JOIN active_endpoint AS a ON a.jid = m.endpoint_jid
			WHERE m.endpoint_jid = ?1 AND m.version = ?2),
		t.id, t.caller, t.target, t.request_id, t.api_version, t.state, t.terminal, t.revision, t.next_wake, t.doc
		FROM (SELECT 1) AS one LEFT JOIN task AS t ON t.caller = ?3 AND t.target = ?1 AND t.request_id = ?4`
	sqlAdmitNew = `INSERT INTO task (id, caller, target, request_id, api_version, state, terminal, revision, next_wake, doc)
		SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10
		WHERE EXISTS (SELECT 1 FROM manifest_version AS m JOIN active_endpoint AS a ON a.jid = m.endpoint_jid
			WHERE m.endpoint_jid = ?3 AND m.version = ?5)
		ON CONFLICT (target, caller, request_id) DO NOTHING`
	sqlUpdateTask = `UPDATE task SET state = ?, terminal = ?, revision = ?, next_wake = ?, doc = ?
		WHERE id = ?`
	sqlInsertEvent = `INSERT INTO task_event (task_id, revision, event_id, type, payload)
		VALUES (?, ?, ?, ?, ?)`
	sqlPutInput = `INSERT INTO task_input (task_id, request_id, doc) VALUES (?, ?, ?)
		ON CONFLICT (task_id, request_id) DO UPDATE SET doc = excluded.doc`
	sqlInputByID     = `SELECT doc FROM task_input WHERE task_id = ? AND request_id = ?`
	sqlPurgeableTask = `SELECT target, api_version FROM task WHERE id = ? AND terminal = 1 AND next_wake <= ?`
	sqlDeleteEvents  = `DELETE FROM task_event WHERE task_id = ?`
	sqlDeleteInputs  = `DELETE FROM task_input WHERE task_id = ?`
	sqlDeleteTask    = `DELETE FROM task WHERE id = ?`
	sqlLiveTasks     = `SELECT id, caller, target, request_id, api_version, state, terminal, revision, next_wake, doc
		FROM task WHERE terminal = 0 ORDER BY next_wake`
	sqlDueForPurge = `SELECT id FROM task WHERE terminal = 1 AND next_wake <= ? ORDER BY next_wake LIMIT ?`
	sqlTaskEvents  = `SELECT task_id, revision, event_id, type, payload FROM task_event
		WHERE task_id = ? ORDER BY revision`
)

// taskWrites are prepared on the writer pool by every GroupCommitter.
var taskWrites = []string{
	sqlSavepoint, sqlRelease, sqlRollback,
	sqlTaskByID, sqlTaskByRequest, sqlAdmission, sqlAdmitNew,
	sqlUpdateTask, sqlInsertEvent, sqlPutInput, sqlInputByID,
	sqlPurgeableTask, sqlDeleteEvents, sqlDeleteInputs, sqlDeleteTask,
	sqlCallerUsage,
	sqlHold, sqlLeaseHolder, sqlDropLease, sqlPutSignal,
	sqlLapsed, sqlClaimLapsed, sqlClaimFrom, sqlHeldBy, sqlHolders,
}

// CallerUsage reads caller's usage in the commit (quota.go): one row, and
// it sees the admissions committed before it in the same batch.
func (t *TaskTx) CallerUsage(caller string) (CallerUsage, error) {
	var u CallerUsage
	if err := t.tx.queryRow(t.ctx, sqlCallerUsage, caller).Scan(&u.Finished, &u.Bytes); err != nil {
		return CallerUsage{}, fmt.Errorf("db: caller usage: %w", err)
	}
	return u, nil
}

// Task reads a task by ID, or returns ErrNotFound.
func (t *TaskTx) Task(id string) (TaskRecord, error) {
	return scanTask(t.tx.queryRow(t.ctx, sqlTaskByID, id))
}

// TaskByRequest reads the task admitted for (caller, target, request ID),
// the replay record, or returns ErrNotFound.
func (t *TaskTx) TaskByRequest(caller, target, requestID string) (TaskRecord, error) {
	return scanTask(t.tx.queryRow(t.ctx, sqlTaskByRequest, caller, target, requestID))
}

// Admission makes both reads of an admission in one statement: whether
// the endpoint is active and has the version (else ErrNotFound), and the
// replay record of (caller, endpoint, request ID), the
// task it admitted, if any (found reports it).
func (t *TaskTx) Admission(endpoint, version, caller, requestID string) (prior TaskRecord, found bool, err error) {
	var (
		pinnable                                        bool
		id, callerCol, target, reqID, apiVersion, state sql.NullString
		terminal, revision, wake                        sql.NullInt64
		doc                                             []byte
	)
	err = t.tx.queryRow(t.ctx, sqlAdmission, endpoint, version, caller, requestID).Scan(&pinnable,
		&id, &callerCol, &target, &reqID, &apiVersion, &state, &terminal, &revision, &wake, &doc)
	switch {
	case err != nil:
		return TaskRecord{}, false, fmt.Errorf("db: admission: %w", err)
	case !pinnable:
		return TaskRecord{}, false, fmt.Errorf("db: %s has no version %s or is not active: %w", endpoint, version, ErrNotFound)
	case !id.Valid:
		return TaskRecord{}, false, nil
	}
	return TaskRecord{
		ID: id.String, Caller: callerCol.String, Target: target.String, RequestID: reqID.String,
		APIVersion: apiVersion.String, State: state.String, Terminal: terminal.Int64 != 0,
		Revision: revision.Int64, NextWake: time.Unix(0, wake.Int64).UTC(), Doc: doc,
	}, true, nil
}

// AdmitNew inserts rec, a new task, in one statement with both checks of
// an admission: only if its endpoint is active and has its version, and no
// task holds its replay record (caller, target, request ID). It reports
// whether it inserted; if not, Admission tells which check failed. This is
// the common case of an admission at the cost of one statement instead of
// two.
func (t *TaskTx) AdmitNew(rec TaskRecord) (bool, error) {
	res, err := t.tx.exec(t.ctx, sqlAdmitNew, rec.ID, rec.Caller, rec.Target, rec.RequestID, rec.APIVersion,
		rec.State, boolInt(rec.Terminal), rec.Revision, rec.NextWake.UnixNano(), rec.Doc)
	if err != nil {
		return false, fmt.Errorf("db: admit task: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("db: admit task: %w", err)
	}
	return n == 1, nil
}

// UpdateTask replaces a task's row; the caller, target, request ID and
// version never change. An unknown task is ErrNotFound.
func (t *TaskTx) UpdateTask(rec TaskRecord) error {
	res, err := t.tx.exec(t.ctx, sqlUpdateTask, rec.State, boolInt(rec.Terminal), rec.Revision,
		rec.NextWake.UnixNano(), rec.Doc, rec.ID)
	if err != nil {
		return fmt.Errorf("db: update task: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("db: update task: %w", err)
	} else if n == 0 {
		return fmt.Errorf("db: update task %s: %w", rec.ID, ErrNotFound)
	}
	if rec.Terminal {
		// A settled task is held by nobody (lease.go).
		if _, err := t.tx.exec(t.ctx, sqlDropLease, rec.ID); err != nil {
			return fmt.Errorf("db: update task: %w", err)
		}
	}
	return nil
}

// InsertEvents inserts events. A revision already stored for the task is
// an error: events are never rewritten.
func (t *TaskTx) InsertEvents(evs []TaskEvent) error {
	for _, ev := range evs {
		if _, err := t.tx.exec(t.ctx, sqlInsertEvent, ev.TaskID, ev.Revision, ev.ID, ev.Type, ev.Payload); err != nil {
			return fmt.Errorf("db: insert event: %w", err)
		}
	}
	return nil
}

// PutInputs inserts or replaces input records.
func (t *TaskTx) PutInputs(ins []TaskInput) error {
	for _, in := range ins {
		if _, err := t.tx.exec(t.ctx, sqlPutInput, in.TaskID, in.RequestID, in.Doc); err != nil {
			return fmt.Errorf("db: put input: %w", err)
		}
	}
	return nil
}

// Input reads one input record, or returns ErrNotFound.
func (t *TaskTx) Input(taskID, requestID string) (TaskInput, error) {
	in := TaskInput{TaskID: taskID, RequestID: requestID}
	err := t.tx.queryRow(t.ctx, sqlInputByID, taskID, requestID).Scan(&in.Doc)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return TaskInput{}, fmt.Errorf("db: input %s of task %s: %w", requestID, taskID, ErrNotFound)
	case err != nil:
		return TaskInput{}, fmt.Errorf("db: input of task %s: %w", taskID, err)
	}
	return in, nil
}

// PurgeTask deletes a terminal task whose purge time (NextWake) has come,
// with its events, its input records and its version hold, and reports
// whether it did. A task that is not purgeable is left alone.
func (t *TaskTx) PurgeTask(id string) (bool, error) {
	var target, version string
	err := t.tx.queryRow(t.ctx, sqlPurgeableTask, id, t.tx.now.UnixNano()).Scan(&target, &version)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("db: purge task %s: %w", id, err)
	}
	for _, q := range []string{sqlDeleteEvents, sqlDeleteInputs, sqlDeleteTask} {
		if _, err := t.tx.exec(t.ctx, q, id); err != nil {
			return false, fmt.Errorf("db: purge task %s: %w", id, err)
		}
	}
	return true, nil
}

// Task reads a task by ID on the reader pool, or returns ErrNotFound. It
// sees every committed write.
func (s *Store) Task(ctx context.Context, id string) (TaskRecord, error) {
	return s.readTask(ctx, sqlTaskByID, id)
}

// CallerTask reads task id on the reader pool if it is caller's task at
// target, or returns ErrNotFound: another caller's task costs no more than
// one that does not exist, since its document is never read.
func (s *Store) CallerTask(ctx context.Context, id, caller, target string) (TaskRecord, error) {
	return s.readTask(ctx, sqlCallerTask, id, caller, target)
}

func (s *Store) readTask(ctx context.Context, query string, args ...any) (TaskRecord, error) {
	tx, err := s.beginRead(ctx)
	if err != nil {
		return TaskRecord{}, fmt.Errorf("db: task: %w", err)
	}
	defer tx.rollback()
	rec, err := scanTask(tx.queryRow(ctx, query, args...))
	if err != nil {
		return TaskRecord{}, err
	}
	if err := tx.commit(); err != nil {
		return TaskRecord{}, fmt.Errorf("db: task: %w", err)
	}
	return rec, nil
}

// LiveTasks lists every task that is not terminal, by next wake-up: what a
// restart must resume or settle.
func (s *Store) LiveTasks(ctx context.Context) ([]TaskRecord, error) {
	tx, err := s.beginRead(ctx)
	if err != nil {
		return nil, fmt.Errorf("db: live tasks: %w", err)
	}
	defer tx.rollback()
	rows, err := tx.query(ctx, sqlLiveTasks)
	if err != nil {
		return nil, fmt.Errorf("db: live tasks: %w", err)
	}
	defer rows.Close()
	var out []TaskRecord
	for rows.Next() {
		rec, err := scanTaskRow(rows)
		if err != nil {
			return nil, fmt.Errorf("db: live tasks: %w", err)
		}
		out = append(out, rec)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("db: live tasks: %w", err)
	}
	return out, tx.commit()
}

// DueForPurge lists up to limit terminal tasks whose purge time has come
// at the store's now, oldest first.
func (s *Store) DueForPurge(ctx context.Context, limit int) ([]string, error) {
	tx, err := s.beginRead(ctx)
	if err != nil {
		return nil, fmt.Errorf("db: due for purge: %w", err)
	}
	defer tx.rollback()
	rows, err := tx.query(ctx, sqlDueForPurge, tx.now.UnixNano(), limit)
	if err != nil {
		return nil, fmt.Errorf("db: due for purge: %w", err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("db: due for purge: %w", err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("db: due for purge: %w", err)
	}
	return ids, tx.commit()
}

// TaskEvents lists the stored events of a task by revision.
func (s *Store) TaskEvents(ctx context.Context, id string) ([]TaskEvent, error) {
	tx, err := s.beginRead(ctx)
	if err != nil {
		return nil, fmt.Errorf("db: task events: %w", err)
	}
	defer tx.rollback()
	rows, err := tx.query(ctx, sqlTaskEvents, id)
	if err != nil {
		return nil, fmt.Errorf("db: task events: %w", err)
	}
	defer rows.Close()
	var out []TaskEvent
	for rows.Next() {
		var ev TaskEvent
		if err := rows.Scan(&ev.TaskID, &ev.Revision, &ev.ID, &ev.Type, &ev.Payload); err != nil {
			return nil, fmt.Errorf("db: task events: %w", err)
		}
		out = append(out, ev)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("db: task events: %w", err)
	}
	return out, tx.commit()
}

// rowScanner is a *sql.Row or *sql.Rows.
type rowScanner interface{ Scan(dest ...any) error }

func scanTask(row *sql.Row) (TaskRecord, error) {
	rec, err := scanTaskRow(row)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return TaskRecord{}, fmt.Errorf("db: task: %w", ErrNotFound)
	case err != nil:
		return TaskRecord{}, fmt.Errorf("db: task: %w", err)
	}
	return rec, nil
}

func scanTaskRow(row rowScanner) (TaskRecord, error) {
	var rec TaskRecord
	var terminal, wake int64
	if err := row.Scan(&rec.ID, &rec.Caller, &rec.Target, &rec.RequestID, &rec.APIVersion,
		&rec.State, &terminal, &rec.Revision, &wake, &rec.Doc); err != nil {
		return TaskRecord{}, err
	}
	rec.Terminal = terminal != 0
	rec.NextWake = time.Unix(0, wake).UTC()
	return rec, nil
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
