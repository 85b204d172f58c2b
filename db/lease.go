package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Several gateways on one store (package taskd): every task that is not
// terminal is held by one gateway, named by the instance ID it made at
// start, under a lease that its holder renews. Only the holder runs the
// task, ticks its timers and commits its runtime's reports; once a lease
// has lapsed (its holder died), any gateway claims the task by a
// conditional UPDATE and recovers it, so two claims of one lease cannot
// both succeed. A cancel or an input that another gateway commits is left
// for the holder as a signal, which the holder reads and hands to its
// execution. The statements are plain SQL, the same on every engine.

// TaskSignal is an accepted cancel or input that a gateway other than the
// task's holder committed, for the holder's execution.
type TaskSignal struct {
	TaskID string
	// Revision is the revision of the step that accepted it.
	Revision int64
	// Kind is SignalCancel or SignalInput; Payload is the answer of an
	// input.
	Kind    string
	Payload []byte
}

// The kinds of TaskSignal.
const (
	SignalCancel = "cancel"
	SignalInput  = "input"
)

// Claim is one task a gateway claimed: its record and the holder whose
// lease had lapsed ("" for none).
type Claim struct {
	Task TaskRecord
	From string
}

const (
	sqlHold = `INSERT INTO task_lease (task_id, holder, lease_until) VALUES (?, ?, ?)
		ON CONFLICT (task_id) DO UPDATE SET holder = excluded.holder, lease_until = excluded.lease_until`
	sqlLeaseHolder = `SELECT holder FROM task_lease WHERE task_id = ?`
	sqlDropLease   = `DELETE FROM task_lease WHERE task_id = ?`
	sqlPutSignal   = `INSERT INTO task_signal (task_id, revision, kind, payload) VALUES (?, ?, ?, ?)`

	sqlRenewLeases   = `UPDATE task_lease SET lease_until = ? WHERE holder = ?`
	sqlRenewUnlocked = `UPDATE task_lease SET lease_until = ? WHERE task_id IN
		(SELECT task_id FROM task_lease WHERE holder = ? FOR UPDATE SKIP LOCKED)`
	sqlHeldTasks     = `SELECT task_id FROM task_lease WHERE holder = ?`
	sqlLapsed        = `SELECT task_id, holder FROM task_lease WHERE lease_until < ? ORDER BY lease_until LIMIT ?`
	sqlClaimLapsed   = `UPDATE task_lease SET holder = ?, lease_until = ? WHERE task_id = ? AND lease_until < ?`
	sqlClaimFrom     = `UPDATE task_lease SET holder = ?, lease_until = ? WHERE task_id = ? AND holder = ?`
	sqlHeldBy        = `SELECT task_id FROM task_lease WHERE holder = ? LIMIT ?`
	sqlReleaseLeases = `UPDATE task_lease SET lease_until = 0 WHERE holder = ?`
	sqlReleaseLease  = `UPDATE task_lease SET lease_until = 0 WHERE task_id = ? AND holder = ?`
	sqlHolders       = `SELECT DISTINCT holder FROM task_lease WHERE lease_until >= ?`
	sqlSignals       = `SELECT s.task_id, s.revision, s.kind, s.payload
		FROM task_signal AS s JOIN task_lease AS l ON l.task_id = s.task_id
		WHERE l.holder = ? ORDER BY s.task_id, s.revision LIMIT ?`
	sqlDeleteSignal = `DELETE FROM task_signal WHERE task_id = ? AND revision = ?`
)

// Hold gives task id to holder until the given time, in the commit: the
// lease of a new task, taken with its admission.
func (t *TaskTx) Hold(id, holder string, until time.Time) error {
	if _, err := t.tx.exec(t.ctx, sqlHold, id, holder, millis(until)); err != nil {
		return fmt.Errorf("db: hold task %s: %w", id, err)
	}
	return nil
}

// LeaseHolder reads who holds task id, in the commit: "" for a task
// nobody holds, a terminal one included.
func (t *TaskTx) LeaseHolder(id string) (string, error) {
	var holder string
	err := t.tx.queryRow(t.ctx, sqlLeaseHolder, id).Scan(&holder)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("db: holder of task %s: %w", id, err)
	}
	return holder, nil
}

// PutSignal leaves sig for the holder of its task, in the commit.
func (t *TaskTx) PutSignal(sig TaskSignal) error {
	if _, err := t.tx.exec(t.ctx, sqlPutSignal, sig.TaskID, sig.Revision, sig.Kind, sig.Payload); err != nil {
		return fmt.Errorf("db: signal task %s: %w", sig.TaskID, err)
	}
	return nil
}

// RenewLeases extends every lease holder has to the store's now plus
// lapse, and lists the tasks it holds: a task it ran that is not listed
// was claimed by another gateway (its own lease had lapsed) or settled.
// It runs in a transaction of its own, apart from the group commit, so
// that a long queue of task writes cannot hold a live gateway's renewal
// back until its leases lapse. On SQLite it waits
// for the one writer connection, so at most for the batch committing. On
// PostgreSQL it takes neither that connection nor the write lock, which
// another gateway's batches hold in turn: it has a connection of its own
// and renews the leases no other transaction has locked (SKIP LOCKED), so
// it never waits for a batch either. A lease it skips is one a batch is
// settling or moving; the next renewal takes it, well before it lapses. It
// changes nothing a reader sees, so it does not move the store's
// generation.
func (s *Store) RenewLeases(ctx context.Context, holder string, lapse time.Duration) ([]string, error) {
	var (
		t   *txn
		err error
		q   = sqlRenewLeases
	)
	if s.pg {
		var tx *sql.Tx
		if tx, err = s.lease.BeginTx(ctx, nil); err == nil {
			t, q = s.newTxn(tx, s.Now().UTC()), sqlRenewUnlocked
		}
	} else {
		t, err = s.beginWrite(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("db: renew leases: %w", err)
	}
	defer t.rollback()
	if _, err := t.exec(ctx, q, millis(t.now.Add(lapse)), holder); err != nil {
		return nil, fmt.Errorf("db: renew leases: %w", err)
	}
	ids, err := t.strings(ctx, sqlHeldTasks, holder)
	if err != nil {
		return nil, fmt.Errorf("db: renew leases: %w", err)
	}
	if err := t.commit(); err != nil {
		return nil, fmt.Errorf("db: renew leases: %w", err)
	}
	return ids, nil
}

// LeaseHolders lists, in the commit, the holders with a lease that has
// not lapsed.
func (t *TaskTx) LeaseHolders() ([]string, error) {
	out, err := t.tx.strings(t.ctx, sqlHolders, millis(t.tx.now))
	if err != nil {
		return nil, fmt.Errorf("db: lease holders: %w", err)
	}
	return out, nil
}

// ClaimLapsed claims for holder, in the commit, up to limit tasks whose
// lease lapsed before the commit's now, each until now plus lapse, and
// returns them with their records. Each claim is an UPDATE conditional on
// the lease still being lapsed, so of two gateways claiming one task only
// one gets it, on any engine.
func (t *TaskTx) ClaimLapsed(holder string, lapse time.Duration, limit int) ([]Claim, error) {
	ctx, tx := t.ctx, t.tx
	rows, err := tx.query(ctx, sqlLapsed, millis(tx.now), limit)
	if err != nil {
		return nil, fmt.Errorf("db: claim lapsed leases: %w", err)
	}
	var found []Claim
	for rows.Next() {
		var c Claim
		if err := rows.Scan(&c.Task.ID, &c.From); err != nil {
			rows.Close()
			return nil, fmt.Errorf("db: claim lapsed leases: %w", err)
		}
		found = append(found, c)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, fmt.Errorf("db: claim lapsed leases: %w", err)
	}
	var out []Claim
	for _, c := range found {
		res, err := tx.exec(ctx, sqlClaimLapsed, holder, millis(tx.now.Add(lapse)), c.Task.ID, millis(tx.now))
		if err != nil {
			return nil, fmt.Errorf("db: claim lapsed leases: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return nil, fmt.Errorf("db: claim lapsed leases: %w", err)
		} else if n == 1 {
			out = append(out, c)
		}
	}
	return t.claimed(out)
}

// ClaimFrom claims for holder, in the commit, up to limit tasks that from
// holds, whatever their leases say: for a holder known to be dead before
// its leases lapse (a gateway of this machine whose process has gone).
// Each claim is an UPDATE conditional on from still holding the task.
func (t *TaskTx) ClaimFrom(holder, from string, lapse time.Duration, limit int) ([]Claim, error) {
	ctx, tx := t.ctx, t.tx
	ids, err := tx.strings(ctx, sqlHeldBy, from, limit)
	if err != nil {
		return nil, fmt.Errorf("db: claim leases of a dead gateway: %w", err)
	}
	var out []Claim
	for _, id := range ids {
		res, err := tx.exec(ctx, sqlClaimFrom, holder, millis(tx.now.Add(lapse)), id, from)
		if err != nil {
			return nil, fmt.Errorf("db: claim leases of a dead gateway: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return nil, fmt.Errorf("db: claim leases of a dead gateway: %w", err)
		} else if n == 1 {
			out = append(out, Claim{Task: TaskRecord{ID: id}, From: from})
		}
	}
	return t.claimed(out)
}

// claimed fills in the record of every claimed task.
func (t *TaskTx) claimed(claims []Claim) ([]Claim, error) {
	for i := range claims {
		rec, err := t.Task(claims[i].Task.ID)
		if err != nil {
			return nil, fmt.Errorf("db: claim: %w", err)
		}
		claims[i].Task = rec
	}
	return claims, nil
}

// ReleaseLeases lets leases of holder lapse at once, for any gateway to
// claim without the wait: those of ids, or every one with no ids (a
// gateway that stops leaves its tasks to the next one).
func (s *Store) ReleaseLeases(ctx context.Context, holder string, ids ...string) error {
	tx, err := s.beginWrite(ctx)
	if err != nil {
		return fmt.Errorf("db: release leases: %w", err)
	}
	defer tx.rollback()
	if len(ids) == 0 {
		_, err = tx.exec(ctx, sqlReleaseLeases, holder)
	}
	for _, id := range ids {
		if _, err = tx.exec(ctx, sqlReleaseLease, id, holder); err != nil {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("db: release leases: %w", err)
	}
	if err := tx.commit(); err != nil {
		return fmt.Errorf("db: release leases: %w", err)
	}
	return nil
}

// Signals lists up to limit signals left for the tasks holder holds, by
// task and revision.
func (s *Store) Signals(ctx context.Context, holder string, limit int) ([]TaskSignal, error) {
	tx, err := s.beginRead(ctx)
	if err != nil {
		return nil, fmt.Errorf("db: signals: %w", err)
	}
	defer tx.rollback()
	rows, err := tx.query(ctx, sqlSignals, holder, limit)
	if err != nil {
		return nil, fmt.Errorf("db: signals: %w", err)
	}
	defer rows.Close()
	var out []TaskSignal
	for rows.Next() {
		var sig TaskSignal
		if err := rows.Scan(&sig.TaskID, &sig.Revision, &sig.Kind, &sig.Payload); err != nil {
			return nil, fmt.Errorf("db: signals: %w", err)
		}
		out = append(out, sig)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("db: signals: %w", err)
	}
	return out, tx.commit()
}

// DeleteSignals deletes signals that have been handed over.
func (s *Store) DeleteSignals(ctx context.Context, sigs []TaskSignal) error {
	if len(sigs) == 0 {
		return nil
	}
	tx, err := s.beginWrite(ctx)
	if err != nil {
		return fmt.Errorf("db: delete signals: %w", err)
	}
	defer tx.rollback()
	for _, sig := range sigs {
		if _, err := tx.exec(ctx, sqlDeleteSignal, sig.TaskID, sig.Revision); err != nil {
			return fmt.Errorf("db: delete signals: %w", err)
		}
	}
	if err := tx.commit(); err != nil {
		return fmt.Errorf("db: delete signals: %w", err)
	}
	return nil
}

// strings runs a query of one text column and collects it.
func (t *txn) strings(ctx context.Context, query string, args ...any) ([]string, error) {
	rows, err := t.query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// outboxClaimLapse is how long a gateway's claim on an outbox message
// lasts: past it another gateway may send the message (its sender died
// between the claim and ChatSent).
const outboxClaimLapse = 30 * time.Second

// sqlClaimable lists the outbox messages holder may send: oldest first,
// not claimed by another gateway, and not behind a message of the same
// endpoint and peer that another gateway has claimed, so that one
// conversation keeps its order.
const sqlClaimable = `SELECT o.seq, o.endpoint_jid, o.recipient, o.peer, o.origin_id, o.type, o.body, o.lang, o.reply_to, o.reply_id, o.created_at
	FROM chat_outbox AS o
	WHERE NOT EXISTS (SELECT 1 FROM chat_outbox_claim AS c JOIN chat_outbox AS p ON p.seq = c.seq
		WHERE p.endpoint_jid = o.endpoint_jid AND p.peer = o.peer AND c.holder <> ? AND c.claim_until >= ?)
	ORDER BY o.seq LIMIT ?`

// sqlClaimOutbox claims one message for holder unless another gateway's
// claim on it still runs.
const sqlClaimOutbox = `INSERT INTO chat_outbox_claim (seq, holder, claim_until) VALUES (?, ?, ?)
	ON CONFLICT (seq) DO UPDATE SET holder = excluded.holder, claim_until = excluded.claim_until
	WHERE chat_outbox_claim.holder = excluded.holder OR chat_outbox_claim.claim_until < ?`

// ChatClaimOutbox claims for holder up to limit messages of the outbox,
// oldest first, and returns them: of several gateways on one store, each
// message is sent by the one that claimed it (ChatSent deletes it, and its
// claim with it). A claim lapses after outboxClaimLapse.
func (s *Store) ChatClaimOutbox(ctx context.Context, holder string, limit int) ([]ChatOut, error) {
	tx, err := s.beginWrite(ctx)
	if err != nil {
		return nil, fmt.Errorf("db: claim chat outbox: %w", err)
	}
	defer tx.rollback()
	now := millis(tx.now)
	rows, err := tx.query(ctx, sqlClaimable, holder, now, limit)
	if err != nil {
		return nil, fmt.Errorf("db: claim chat outbox: %w", err)
	}
	var found []ChatOut
	for rows.Next() {
		var m ChatOut
		var created int64
		if err := rows.Scan(&m.Seq, &m.Endpoint, &m.Recipient, &m.Peer, &m.OriginID, &m.Type, &m.Body, &m.Lang, &m.ReplyTo, &m.ReplyID, &created); err != nil {
			rows.Close()
			return nil, fmt.Errorf("db: claim chat outbox: %w", err)
		}
		m.Created = fromMillis(created)
		found = append(found, m)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, fmt.Errorf("db: claim chat outbox: %w", err)
	}
	var out []ChatOut
	until := millis(tx.now.Add(outboxClaimLapse))
	for _, m := range found {
		res, err := tx.exec(ctx, sqlClaimOutbox, m.Seq, holder, until, now)
		if err != nil {
			return nil, fmt.Errorf("db: claim chat outbox: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return nil, fmt.Errorf("db: claim chat outbox: %w", err)
		} else if n == 1 {
			out = append(out, m)
		}
	}
	if err := tx.commit(); err != nil {
		return nil, fmt.Errorf("db: claim chat outbox: %w", err)
	}
	return out, nil
}

// ChatClaimHolders lists the holders of outbox claims.
func (s *Store) ChatClaimHolders(ctx context.Context) ([]string, error) {
	tx, err := s.beginRead(ctx)
	if err != nil {
		return nil, fmt.Errorf("db: outbox claim holders: %w", err)
	}
	defer tx.rollback()
	out, err := tx.strings(ctx, `SELECT DISTINCT holder FROM chat_outbox_claim`)
	if err != nil {
		return nil, fmt.Errorf("db: outbox claim holders: %w", err)
	}
	return out, tx.commit()
}

// ChatReleaseClaims drops every outbox claim of holder: it stopped, or is
// known gone, and its messages are for the next gateway to send.
func (s *Store) ChatReleaseClaims(ctx context.Context, holder string) error {
	tx, err := s.beginWrite(ctx)
	if err != nil {
		return fmt.Errorf("db: release outbox claims: %w", err)
	}
	defer tx.rollback()
	if _, err := tx.exec(ctx, `DELETE FROM chat_outbox_claim WHERE holder = ?`, holder); err != nil {
		return fmt.Errorf("db: release outbox claims: %w", err)
	}
	if err := tx.commit(); err != nil {
		return fmt.Errorf("db: release outbox claims: %w", err)
	}
	return nil
}
