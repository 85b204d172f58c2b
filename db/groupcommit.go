package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"agentgw/db/internal/pg"
	"agentgw/metrics"
)

// Every task write goes through a GroupCommitter (the task rows it writes
// are in task.go): many independent closures share one IMMEDIATE
// transaction and so one fsync, each inside its own savepoint, so that one
// closure's failure undoes only its own writes.

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

// GroupCommitter runs task writes in group commits: every queued closure
// of a batch runs in one IMMEDIATE transaction, each in its own savepoint,
// which commits with one fsync; then each caller gets its own outcome.
// The callers take turns as the leader (no committer goroutine, so a lone
// caller commits with no hand-off), and closures of one batch run in queue
// order, seeing each other's writes. docs/store.md, "Group commit".
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
	if s.pg {
		// pgx prepares and caches statements per connection itself.
		return c, nil
	}
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
	tx, err := c.s.beginWriteTx(ctx)
	if err != nil {
		return fmt.Errorf("%w: begin: %w", ErrBatchFailed, err)
	}
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
			if swallowedFailure(err) {
				op.err, op.hooks = errSwallowed(err), nil
				return nil
			}
			return fmt.Errorf("%w: %w", ErrBatchFailed, err)
		}
		return nil
	}
	// Each closure runs in a savepoint of its own. On PostgreSQL one
	// round trip releases a closure's savepoint and makes the next one's
	// (sqlReleaseNext), where a statement each would take two.
	open := false
	for i, op := range batch {
		if !open {
			if _, err := tx.exec(ctx, sqlSavepoint); err != nil {
				return fmt.Errorf("%w: savepoint: %w", ErrBatchFailed, err)
			}
		}
		tt := &TaskTx{ctx: ctx, tx: tx}
		if op.err = runClosure(op.fn, tt); op.err != nil {
			if _, err := tx.exec(ctx, sqlRollback); err != nil {
				return fmt.Errorf("%w: roll back a closure: %w", ErrBatchFailed, err)
			}
		} else {
			op.hooks = tt.hooks
		}
		release := sqlRelease
		if open = tx.pg && i < len(batch)-1; open {
			release = sqlReleaseNext
		}
		if _, err := tx.exec(ctx, release); err != nil {
			if !swallowedFailure(err) {
				return fmt.Errorf("%w: release: %w", ErrBatchFailed, err)
			}
			// This closure's own failed statement: undo it alone. The
			// next savepoint, if asked for, was not made.
			op.err, op.hooks, open = errSwallowed(err), nil, false
			if _, err := tx.exec(ctx, sqlRollback); err != nil {
				return fmt.Errorf("%w: roll back a closure: %w", ErrBatchFailed, err)
			}
			if _, err := tx.exec(ctx, sqlRelease); err != nil {
				return fmt.Errorf("%w: release: %w", ErrBatchFailed, err)
			}
		}
	}
	if err := tx.commit(); err != nil {
		return fmt.Errorf("%w: %w", ErrBatchFailed, err)
	}
	return nil
}

// swallowedFailure reports whether err is PostgreSQL's refusal to go on
// with a transaction in which a statement failed (25P02): a closure that
// got a statement's error and returned nil. SQLite undoes the failed
// statement alone and goes on; PostgreSQL needs the savepoint undone.
func swallowedFailure(err error) bool { return pg.Code(err) == "25P02" }

// errSwallowed is the outcome of a closure that swallowed a failed
// statement: nothing it wrote is committed, and the rest of its batch is.
func errSwallowed(err error) error {
	return fmt.Errorf("db: group commit: a statement of the closure failed and it did not return the error; nothing it wrote was committed: %w", err)
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
