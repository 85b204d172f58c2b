package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"agentgw/metrics"
)

// Tasks (package task, run by package taskd): the durable record of every
// admitted invocation, its lifecycle events and its input records.
//
// The task layer keeps each task as one opaque document (Doc) beside the
// columns the store looks tasks up by: ID; caller, target and request ID
// (the admission replay record, unique); and whether the task is terminal
// with its next wake-up, which is the deadline or input expiry while it
// runs and the purge time once it has settled. Events are keyed by (task,
// revision), input records by (task, input request ID).
//
// Every task write goes through a GroupCommitter: many independent closures
// share one IMMEDIATE transaction and so one fsync, each inside its own
// savepoint, so that one closure's failure undoes only its own writes.

// Tunables of the group committer.
const (
	// DefaultMaxBatch bounds the closures of one group commit. A batch
	// takes whatever is queued when the previous commit ends, so under
	// light load batches are small and latency is one commit; under heavy
	// load they grow up to this bound.
	DefaultMaxBatch = 256
	// commitQueue bounds the closures waiting for the committer; past it
	// Do waits (or its context ends).
	commitQueue = 4096
)

// ErrCommitterClosed is returned by GroupCommitter.Do after Close.
var ErrCommitterClosed = errors.New("db: group committer closed")

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

	sqlTaskByID = `SELECT id, caller, target, request_id, api_version, state, terminal, revision, next_wake, doc
		FROM task WHERE id = ?`
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
}

// GroupCommitter runs task writes in group commits: every queued closure
// of a batch runs in one IMMEDIATE transaction, each in its own savepoint,
// which commits with one fsync (synchronous=FULL); then each caller gets
// its own outcome.
//
// There is no committer goroutine. The callers of Do take turns as the
// leader, in the manner of LevelDB's writer queue: a caller that finds no
// leader leads at once, on its own goroutine, so a lone caller commits
// with no hand-off between goroutines (on these machines two wake-ups cost
// about a tenth of a durable commit); callers that arrive while a batch
// commits queue up, and when the batch is done its leader hands the lead
// to the oldest of them, which commits all the queued closures as the next
// batch. Only one leader runs at a time.
//
// Closures of one batch run one after another in queue order and see each
// other's writes, so commands on one task are serialized exactly as with
// one transaction each.
type GroupCommitter struct {
	s        *Store
	maxBatch int
	stmts    map[string]*sql.Stmt
	// slots bounds the closures queued or committing: commitQueue.
	slots chan struct{}

	mu      sync.Mutex
	queue   []*commitOp // waiting, oldest first; the leader's own at [0]
	leading bool        // a leader is committing; false only with queue empty
	closed  bool
	idle    *sync.Cond  // on mu: signalled when leading becomes false
	batch   []*commitOp // the leader's batch buffer

	stmtsClosed sync.Once

	// HookPanic, if set before the first Do, receives what an OnCommit
	// hook panicked with, after every closure of its batch has its
	// outcome. If it is nil, the panic is raised again on the goroutine of
	// the caller that led that batch, once the lead has passed on.
	HookPanic func(v any)

	batches, commits atomic.Int64
}

// commitOp is one queued closure and, once its batch has committed or
// failed, its outcome.
type commitOp struct {
	fn    func(*TaskTx) error
	err   error
	hooks []func()
	// done is set, and wake signalled, when the outcome is known; wake
	// is also signalled, with done unset, to hand this op's caller the
	// lead.
	done bool
	wake chan struct{}
}

// NewGroupCommitter prepares the task statements. maxBatch bounds a batch
// (0 means DefaultMaxBatch). Close it before the Store.
func (s *Store) NewGroupCommitter(ctx context.Context, maxBatch int) (*GroupCommitter, error) {
	if maxBatch <= 0 {
		maxBatch = DefaultMaxBatch
	}
	c := &GroupCommitter{
		s:        s,
		maxBatch: maxBatch,
		stmts:    make(map[string]*sql.Stmt, len(taskWrites)),
		slots:    make(chan struct{}, commitQueue),
		batch:    make([]*commitOp, 0, maxBatch),
	}
	c.idle = sync.NewCond(&c.mu)
	for _, q := range taskWrites {
		st, err := s.writer.PrepareContext(ctx, q)
		if err != nil {
			c.closeStmts()
			return nil, fmt.Errorf("db: group committer: prepare: %w", err)
		}
		c.stmts[q] = st
	}
	return c, nil
}

// Do queues fn and waits until its batch has committed. fn runs inside the
// batch transaction, on the goroutine of whichever caller leads that batch;
// it must only read and write through tx, and must not block. A nil error
// means fn's writes are durable; an error returned by fn rolls back fn's
// writes alone (the rest of the batch commits) and is returned as it is.
// If the batch as a whole fails, every closure of it gets that error. The
// hooks fn registers with tx.OnCommit run after the commit, on the
// leader's goroutine, in commit order, before Do returns.
//
// ctx bounds only the wait for a place in the queue: once queued, fn runs
// and Do reports its outcome. Neither fn nor its hooks may call Do or
// Close: they run while their batch holds the lead.
func (c *GroupCommitter) Do(ctx context.Context, fn func(tx *TaskTx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case c.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	op := &commitOp{fn: fn, wake: make(chan struct{}, 1)}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		<-c.slots
		return ErrCommitterClosed
	}
	c.queue = append(c.queue, op)
	lead := !c.leading
	c.leading = true
	c.mu.Unlock()
	if !lead {
		<-op.wake
	}
	if !op.done {
		c.lead()
	}
	return op.err
}

// lead commits the queued closures, up to maxBatch, as one batch, then
// hands the lead to the oldest closure still queued, or gives it up.
func (c *GroupCommitter) lead() {
	c.mu.Lock()
	n := min(len(c.queue), c.maxBatch)
	batch := append(c.batch[:0], c.queue[:n]...)
	rest := copy(c.queue, c.queue[n:])
	clear(c.queue[rest:])
	c.queue = c.queue[:rest]
	c.mu.Unlock()

	handed := false
	defer func() {
		// A fault outside the closures and hooks (which are recovered):
		// the closures still waiting get an error and the lead passes on,
		// so that no caller waits for ever.
		if !handed {
			for _, op := range batch {
				if !op.done {
					op.err = errors.New("db: group commit: the leader failed")
					c.finish(op)
				}
			}
			clear(batch)
			c.handOff()
		}
	}()
	hookPanic := c.commit(batch)
	// The batch buffer is the next leader's once the lead is handed on.
	clear(batch)
	handed = true
	c.handOff()
	if hookPanic != nil {
		// Every closure has its own outcome and the lead has passed on.
		if c.HookPanic == nil {
			panic(hookPanic)
		}
		c.HookPanic(hookPanic)
	}
}

// handOff passes the lead to the oldest queued closure, or gives it up.
func (c *GroupCommitter) handOff() {
	c.mu.Lock()
	if len(c.queue) == 0 {
		c.leading = false
		c.idle.Broadcast()
		c.mu.Unlock()
		return
	}
	next := c.queue[0]
	c.mu.Unlock()
	next.wake <- struct{}{}
}

// finish reports op's outcome to its caller.
func (c *GroupCommitter) finish(op *commitOp) {
	op.done = true
	<-c.slots
	op.wake <- struct{}{}
}

// Close waits for what is queued to commit and releases the statements.
// Later calls of Do fail with ErrCommitterClosed.
func (c *GroupCommitter) Close() error {
	c.mu.Lock()
	c.closed = true
	for c.leading {
		c.idle.Wait()
	}
	c.mu.Unlock()
	c.stmtsClosed.Do(c.closeStmts)
	return nil
}

// Stats returns the number of batches committed (or failed) and of
// closures they held, for benchmarks.
func (c *GroupCommitter) Stats() (batches, closures int64) {
	return c.batches.Load(), c.commits.Load()
}

func (c *GroupCommitter) closeStmts() {
	for _, st := range c.stmts {
		st.Close()
	}
}

// commit runs one batch and reports every outcome, in commit order: each
// closure's hooks run before its caller is told. A hook that panics does
// not stop the others, nor change any outcome (its closure committed);
// the first such panic is returned for lead to report.
func (c *GroupCommitter) commit(batch []*commitOp) (hookPanic any) {
	c.batches.Add(1)
	c.commits.Add(int64(len(batch)))
	metrics.Commit(len(batch))
	ctx := context.Background()
	err := c.runBatch(ctx, batch)
	for _, op := range batch {
		if err != nil && op.err == nil {
			op.err = err
			op.hooks = nil
		}
		if op.err == nil {
			for _, h := range op.hooks {
				if p := runHook(h); p != nil && hookPanic == nil {
					hookPanic = p
				}
			}
		}
		c.finish(op)
	}
	return hookPanic
}

// runHook runs h and returns what it panicked with, if anything.
func runHook(h func()) (panicked any) {
	defer func() { panicked = recover() }()
	h()
	return nil
}

// runBatch runs every closure of batch in one transaction and commits it.
// An error is the batch's: it fails every closure that had not failed on
// its own.
func (c *GroupCommitter) runBatch(ctx context.Context, batch []*commitOp) error {
	sqlTx, err := c.s.writer.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("%w: begin: %w", ErrBatchFailed, err)
	}
	tx := newTxn(sqlTx, c.s.Now().UTC())
	tx.hot = c.stmts
	defer tx.rollback()
	if len(batch) == 1 {
		// Alone in its batch, a closure needs no savepoint: its failure
		// rolls back the whole transaction, which is only its own.
		op := batch[0]
		tt := &TaskTx{ctx: ctx, tx: tx}
		if op.err = runClosure(op.fn, tt); op.err != nil {
			return nil
		}
		op.hooks = tt.hooks
		if err := tx.commit(); err != nil {
			return fmt.Errorf("%w: %w", ErrBatchFailed, err)
		}
		return nil
	}
	for _, op := range batch {
		if _, err := tx.exec(ctx, sqlSavepoint); err != nil {
			return fmt.Errorf("%w: savepoint: %w", ErrBatchFailed, err)
		}
		tt := &TaskTx{ctx: ctx, tx: tx}
		if op.err = runClosure(op.fn, tt); op.err != nil {
			if _, err := tx.exec(ctx, sqlRollback); err != nil {
				return fmt.Errorf("%w: roll back a closure: %w", ErrBatchFailed, err)
			}
		} else {
			op.hooks = tt.hooks
		}
		if _, err := tx.exec(ctx, sqlRelease); err != nil {
			return fmt.Errorf("%w: release: %w", ErrBatchFailed, err)
		}
	}
	if err := tx.commit(); err != nil {
		return fmt.Errorf("%w: %w", ErrBatchFailed, err)
	}
	return nil
}

// runClosure runs fn, turning a panic into its error so that one bad
// closure cannot take the committer down with the whole batch.
func runClosure(fn func(*TaskTx) error, tx *TaskTx) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("db: group commit: closure panicked: %v", r)
		}
	}()
	return fn(tx)
}

// TaskTx is the transaction a GroupCommitter closure runs in. Its methods
// read and write tasks; Now is the batch's instant.
type TaskTx struct {
	ctx   context.Context
	tx    *txn
	hooks []func()
}

// Now returns the instant of the batch, read once from Store.Now when the
// transaction began.
func (t *TaskTx) Now() time.Time { return t.tx.now }

// OnCommit registers f to run after the batch has committed, if this
// closure succeeded. Hooks run in commit order on the committer's
// goroutine: they must be quick and must not wait for the committer.
func (t *TaskTx) OnCommit(f func()) { t.hooks = append(t.hooks, f) }

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
	tx, err := s.beginRead(ctx)
	if err != nil {
		return TaskRecord{}, fmt.Errorf("db: task: %w", err)
	}
	defer tx.rollback()
	rec, err := scanTask(tx.queryRow(ctx, sqlTaskByID, id))
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

// taskMigration turns schema version 3 into version 4: the task tables.
// schema.sql holds the same tables; once shipped, never edit this.
const taskMigration = `
CREATE TABLE task (
	id          TEXT    NOT NULL PRIMARY KEY CHECK (id <> ''),
	caller      TEXT    NOT NULL,
	target      TEXT    NOT NULL,
	request_id  TEXT    NOT NULL,
	api_version TEXT    NOT NULL,
	state       TEXT    NOT NULL,
	terminal    INTEGER NOT NULL CHECK (terminal IN (0, 1)),
	revision    INTEGER NOT NULL CHECK (revision >= 0),
	next_wake   INTEGER NOT NULL,
	doc         BLOB    NOT NULL,
	-- The replay record. target first, so that a version's or an
	-- endpoint's tasks are found by prefix (versionRetained).
	UNIQUE (target, caller, request_id),
	-- A task holds the version it pinned until it is purged: the row
	-- itself is the hold, checked on insert, and the database refuses to
	-- delete a version a task still names.
	FOREIGN KEY (target, api_version) REFERENCES manifest_version (endpoint_jid, version)
) STRICT;

-- Only settled tasks are indexed, for the purge: an admission, and every
-- transition of a running task, then writes no index page for it. The
-- restart scan of unsettled tasks reads the table once, at start.
CREATE INDEX task_purge ON task (next_wake) WHERE terminal = 1;

CREATE TABLE task_event (
	task_id  TEXT    NOT NULL REFERENCES task (id) ON DELETE CASCADE,
	revision INTEGER NOT NULL CHECK (revision > 0),
	event_id TEXT    NOT NULL,
	type     TEXT    NOT NULL,
	payload  BLOB    NOT NULL,
	PRIMARY KEY (task_id, revision)
) STRICT;

CREATE TABLE task_input (
	task_id    TEXT NOT NULL REFERENCES task (id) ON DELETE CASCADE,
	request_id TEXT NOT NULL,
	doc        BLOB NOT NULL,
	PRIMARY KEY (task_id, request_id)
) STRICT;
`
