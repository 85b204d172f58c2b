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

// sqlCallerUsage reads a caller's usage: one row of caller_usage, kept by
// the triggers of every task write (schema.sql), whatever the caller's
// history.
const sqlCallerUsage = `SELECT
	COALESCE((SELECT finished FROM caller_usage WHERE caller = ?1), 0),
	COALESCE((SELECT bytes FROM caller_usage WHERE caller = ?1), 0)`

// CallerUsage reads what the store keeps for caller's tasks. It costs one
// primary-key read, whatever the caller's history or the store's size.
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
		var exists bool
		var n int
		if err := tx.queryRow(ctx, `SELECT
			EXISTS (SELECT 1 FROM manifest_version WHERE endpoint_jid = ?1 AND version = ?2),
			COALESCE((SELECT versions FROM endpoint_count WHERE jid = ?1), 0)`, v.JID, v.Version).Scan(&exists, &n); err != nil {
			return false, fmt.Errorf("db: register version: %w", err)
		}
		if !exists && n >= maxVersions {
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
	var exists bool
	var n int
	if err := tx.queryRow(ctx, `SELECT
		EXISTS (SELECT 1 FROM presence_subscription WHERE endpoint_jid = ?1 AND subscriber = ?2),
		COALESCE((SELECT subscriptions FROM endpoint_count WHERE jid = ?1), 0)`, endpointJID, subscriber).Scan(&exists, &n); err != nil {
		return fmt.Errorf("db: subscribe: %w", err)
	}
	if exists {
		return nil
	}
	if perEndpoint > 0 && n >= perEndpoint {
		return fmt.Errorf("db: %s has %d subscriptions: %w", endpointJID, n, ErrQuota)
	}
	if total > 0 {
		if err := tx.queryRow(ctx, `SELECT value FROM stat WHERE name = 'subscriptions'`).Scan(&n); err != nil {
			return fmt.Errorf("db: subscribe: %w", err)
		}
		if n >= total {
			return fmt.Errorf("db: %d subscriptions stored: %w", n, ErrQuota)
		}
	}
	return nil
}

// The counters as their sums over the stored rows: what the triggers of
// schema.sql keep in caller_usage, endpoint_count and stat.
const (
	sqlWantCallerUsage = `SELECT t.caller, SUM(t.terminal),
		SUM(length(t.doc)) +
		COALESCE(SUM((SELECT SUM(length(e.payload)) FROM task_event AS e WHERE e.task_id = t.id)), 0) +
		COALESCE(SUM((SELECT SUM(length(i.doc)) FROM task_input AS i WHERE i.task_id = t.id)), 0)
		FROM task AS t GROUP BY t.caller`
	sqlWantEndpointCount = `SELECT jid, SUM(v), SUM(s) FROM (
			SELECT endpoint_jid AS jid, 1 AS v, 0 AS s FROM manifest_version
			UNION ALL
			SELECT endpoint_jid, 0, 1 FROM presence_subscription) AS c
		GROUP BY jid`
	sqlWantSubscriptions = `SELECT count(*) FROM presence_subscription`
)

// counterChecks pairs each counter table with its sums; the drift query
// names every key whose row differs or is missing on either side.
var counterChecks = []struct {
	table, key, want string
}{
	{"caller_usage", "caller", sqlWantCallerUsage},
	{"endpoint_count", "jid", sqlWantEndpointCount},
}

// CheckCounters compares the quota counters with the sums over the rows
// they count, and rebuilds any that differ from the sums in the same write
// transaction. It returns what it found wrong ("caller_usage: alice@…"),
// at most ten entries per table, empty when all agree. It reads the whole
// task, event, input, version and subscription tables: serve runs it once,
// at start, beside quick_check.
func (s *Store) CheckCounters(ctx context.Context) (drift []string, err error) {
	tx, err := s.beginWrite(ctx)
	if err != nil {
		return nil, fmt.Errorf("db: check counters: %w", err)
	}
	defer tx.rollback()
	for _, c := range counterChecks {
		q := `WITH want AS (` + c.want + `)
			SELECT ` + c.key + ` FROM (SELECT * FROM want EXCEPT SELECT * FROM ` + c.table + `) AS missing
			UNION SELECT ` + c.key + ` FROM (SELECT * FROM ` + c.table + ` EXCEPT SELECT * FROM want) AS extra
			ORDER BY 1 LIMIT 11`
		keys, err := queryStrings(ctx, tx, q)
		if err != nil {
			return nil, fmt.Errorf("db: check counters: %s: %w", c.table, err)
		}
		if len(keys) == 0 {
			continue
		}
		if len(keys) == 11 {
			keys[10] = "…"
		}
		for _, k := range keys {
			drift = append(drift, c.table+": "+k)
		}
		if _, err := tx.exec(ctx, `DELETE FROM `+c.table); err != nil {
			return nil, fmt.Errorf("db: check counters: %s: %w", c.table, err)
		}
		if _, err := tx.exec(ctx, `INSERT INTO `+c.table+` `+c.want); err != nil {
			return nil, fmt.Errorf("db: check counters: %s: %w", c.table, err)
		}
	}
	var have, want int64
	if err := tx.queryRow(ctx, `SELECT COALESCE((SELECT value FROM stat WHERE name = 'subscriptions'), -1), (`+
		sqlWantSubscriptions+`)`).Scan(&have, &want); err != nil {
		return nil, fmt.Errorf("db: check counters: subscriptions: %w", err)
	}
	if have != want {
		drift = append(drift, fmt.Sprintf("stat subscriptions: %d, not %d", have, want))
		if _, err := tx.exec(ctx, `INSERT INTO stat (name, value) VALUES ('subscriptions', ?)
			ON CONFLICT (name) DO UPDATE SET value = excluded.value`, want); err != nil {
			return nil, fmt.Errorf("db: check counters: subscriptions: %w", err)
		}
	}
	if len(drift) == 0 {
		return nil, nil
	}
	if err := tx.commit(); err != nil {
		return nil, fmt.Errorf("db: check counters: %w", err)
	}
	return drift, nil
}

// queryStrings runs a query of one text column and collects it.
func queryStrings(ctx context.Context, tx *txn, q string) ([]string, error) {
	rows, err := tx.query(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}
