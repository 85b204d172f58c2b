package db

import (
	"context"
	"errors"
	"fmt"
)

// Quotas bound what one principal can make the store keep. Each is
// checked in the transaction of the write it bounds (or, for tasks, by a
// read just before the admission) and refuses only what is new: an
// identical re-registration, an existing subscription or a replayed
// admission passes, and nothing already stored is touched. A quota of 0
// or less is no quota.

// ErrQuota is returned when a write would take a principal past a quota.
var ErrQuota = errors.New("db: quota reached")

// CallerUsage is what the store keeps for one caller's tasks.
type CallerUsage struct {
	// Finished is the number of terminal tasks, kept until purged.
	Finished int
	// Bytes is the size of every task document (arguments, pending input
	// and outcome), event payload and input record of the caller.
	Bytes int64
}

// sqlCallerUsage reads a caller's usage over the task_caller index and the
// primary keys of task_event and task_input.
const sqlCallerUsage = `SELECT
	COALESCE((SELECT SUM(terminal) FROM task WHERE caller = ?1), 0),
	COALESCE((SELECT SUM(length(doc)) FROM task WHERE caller = ?1), 0) +
	COALESCE((SELECT SUM(length(e.payload)) FROM task AS t JOIN task_event AS e ON e.task_id = t.id WHERE t.caller = ?1), 0) +
	COALESCE((SELECT SUM(length(i.doc)) FROM task AS t JOIN task_input AS i ON i.task_id = t.id WHERE t.caller = ?1), 0)`

// CallerUsage reads what the store keeps for caller's tasks. It costs a
// read of the caller's own rows, whatever the size of the store.
func (s *Store) CallerUsage(ctx context.Context, caller string) (CallerUsage, error) {
	tx, err := s.beginRead(ctx)
	if err != nil {
		return CallerUsage{}, fmt.Errorf("db: caller usage: %w", err)
	}
	defer tx.rollback()
	var u CallerUsage
	if err := tx.queryRow(ctx, sqlCallerUsage, caller).Scan(&u.Finished, &u.Bytes); err != nil {
		return CallerUsage{}, fmt.Errorf("db: caller usage: %w", err)
	}
	if err := tx.commit(); err != nil {
		return CallerUsage{}, fmt.Errorf("db: caller usage: %w", err)
	}
	return u, nil
}

// RegisterVersionWithin is RegisterVersion with a quota on the endpoint's
// stored versions: a version that is not stored yet is refused with
// ErrQuota when the endpoint already has maxVersions. An identical
// re-registration always succeeds (created=false). maxVersions 0 is no
// quota.
func (s *Store) RegisterVersionWithin(ctx context.Context, v Version, origin string, maxVersions int) (created bool, err error) {
	if err := validateVersion(&v, origin); err != nil {
		return false, err
	}
	tx, err := s.beginWrite(ctx)
	if err != nil {
		return false, fmt.Errorf("db: register version: %w", err)
	}
	defer tx.rollback()
	if maxVersions > 0 {
		var exists, n int
		if err := tx.queryRow(ctx, `SELECT
			EXISTS (SELECT 1 FROM manifest_version WHERE endpoint_jid = ?1 AND version = ?2),
			(SELECT count(*) FROM manifest_version WHERE endpoint_jid = ?1)`, v.JID, v.Version).Scan(&exists, &n); err != nil {
			return false, fmt.Errorf("db: register version: %w", err)
		}
		if exists == 0 && n >= maxVersions {
			return false, fmt.Errorf("db: %s has %d versions: %w", v.JID, n, ErrQuota)
		}
	}
	created, err = registerVersion(ctx, tx, &v, origin, tx.now)
	if err != nil {
		return false, err
	}
	if err := tx.commit(); err != nil {
		return false, fmt.Errorf("db: register version: %w", err)
	}
	return created, nil
}

// SubscribeWithin is Subscribe with quotas: a subscription that does not
// exist yet is refused with ErrQuota when the endpoint already has
// perEndpoint subscriptions or the store has total (0: no such quota). An
// existing one is kept (created=false).
func (s *Store) SubscribeWithin(ctx context.Context, endpointJID, subscriber string, perEndpoint, total int) (created bool, err error) {
	if subscriber == "" {
		return false, fmt.Errorf("db: subscribe to %s: empty subscriber", endpointJID)
	}
	tx, err := s.beginWrite(ctx)
	if err != nil {
		return false, fmt.Errorf("db: subscribe: %w", err)
	}
	defer tx.rollback()
	if err := requireEndpoint(ctx, tx, endpointJID); err != nil {
		return false, err
	}
	if perEndpoint > 0 || total > 0 {
		if err := subscriptionQuota(ctx, tx, endpointJID, subscriber, perEndpoint, total); err != nil {
			return false, err
		}
	}
	res, err := tx.exec(ctx, `INSERT INTO presence_subscription (endpoint_jid, subscriber, created_at)
		VALUES (?, ?, ?) ON CONFLICT (endpoint_jid, subscriber) DO NOTHING`,
		endpointJID, subscriber, millis(tx.now))
	if err != nil {
		return false, fmt.Errorf("db: subscribe %s to %s: %w", subscriber, endpointJID, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("db: subscribe %s to %s: %w", subscriber, endpointJID, err)
	}
	if err := tx.commit(); err != nil {
		return false, fmt.Errorf("db: subscribe: %w", err)
	}
	return n == 1, nil
}

// subscriptionQuota refuses with ErrQuota a subscription that does not
// exist yet when the endpoint has perEndpoint subscriptions or the store
// has total (0: no such quota). An existing subscription passes.
func subscriptionQuota(ctx context.Context, tx *txn, endpointJID, subscriber string, perEndpoint, total int) error {
	var exists, n int
	if err := tx.queryRow(ctx, `SELECT
		EXISTS (SELECT 1 FROM presence_subscription WHERE endpoint_jid = ?1 AND subscriber = ?2),
		(SELECT count(*) FROM presence_subscription WHERE endpoint_jid = ?1)`, endpointJID, subscriber).Scan(&exists, &n); err != nil {
		return fmt.Errorf("db: subscribe: %w", err)
	}
	if exists == 1 {
		return nil
	}
	if perEndpoint > 0 && n >= perEndpoint {
		return fmt.Errorf("db: %s has %d subscriptions: %w", endpointJID, n, ErrQuota)
	}
	if total > 0 {
		// A full count, paid only by a new subscription.
		if err := tx.queryRow(ctx, `SELECT count(*) FROM presence_subscription`).Scan(&n); err != nil {
			return fmt.Errorf("db: subscribe: %w", err)
		}
		if n >= total {
			return fmt.Errorf("db: %d subscriptions stored: %w", n, ErrQuota)
		}
	}
	return nil
}
