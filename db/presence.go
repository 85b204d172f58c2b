package db

import (
	"context"
	"fmt"
)

// Subscribe records that subscriber (a bare JID) is subscribed to the
// endpoint's presence (RFC 6121). It returns created=false if the
// subscription already existed, and ErrNotFound if the endpoint does not
// exist.
func (s *Store) Subscribe(ctx context.Context, endpointJID, subscriber string) (created bool, err error) {
	return s.SubscribeWithin(ctx, endpointJID, subscriber, 0, 0)
}

// Unsubscribe removes a presence subscription. It returns removed=false, and
// no error, if there was none (including when the endpoint does not exist).
func (s *Store) Unsubscribe(ctx context.Context, endpointJID, subscriber string) (removed bool, err error) {
	tx, err := s.beginWrite(ctx)
	if err != nil {
		return false, fmt.Errorf("db: unsubscribe: %w", err)
	}
	defer tx.rollback()
	res, err := tx.exec(ctx, `DELETE FROM presence_subscription
		WHERE endpoint_jid = ? AND subscriber = ?`, endpointJID, subscriber)
	if err != nil {
		return false, fmt.Errorf("db: unsubscribe %s from %s: %w", subscriber, endpointJID, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("db: unsubscribe %s from %s: %w", subscriber, endpointJID, err)
	}
	if err := tx.commit(); err != nil {
		return false, fmt.Errorf("db: unsubscribe: %w", err)
	}
	return n == 1, nil
}

// Subscribers returns the endpoint's presence subscribers in octetwise order.
// An endpoint without subscribers, or that does not exist, has none.
func (s *Store) Subscribers(ctx context.Context, endpointJID string) ([]string, error) {
	tx, err := s.beginRead(ctx)
	if err != nil {
		return nil, fmt.Errorf("db: subscribers: %w", err)
	}
	defer tx.rollback()
	rows, err := tx.query(ctx, `SELECT subscriber FROM presence_subscription
		WHERE endpoint_jid = ? ORDER BY subscriber`, endpointJID)
	if err != nil {
		return nil, fmt.Errorf("db: subscribers of %s: %w", endpointJID, err)
	}
	defer rows.Close()
	var subs []string
	for rows.Next() {
		var sub string
		if err := rows.Scan(&sub); err != nil {
			return nil, fmt.Errorf("db: subscribers of %s: %w", endpointJID, err)
		}
		subs = append(subs, sub)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("db: subscribers of %s: %w", endpointJID, err)
	}
	if err := tx.commit(); err != nil {
		return nil, fmt.Errorf("db: subscribers: %w", err)
	}
	return subs, nil
}

// Subscribed reports whether subscriber (a bare JID) has a stored presence
// subscription to the endpoint. It is the point query a presence probe
// needs; an endpoint that does not exist has no subscribers.
func (s *Store) Subscribed(ctx context.Context, endpointJID, subscriber string) (bool, error) {
	tx, err := s.beginRead(ctx)
	if err != nil {
		return false, fmt.Errorf("db: subscribed: %w", err)
	}
	defer tx.rollback()
	var n int
	if err := tx.queryRow(ctx, `SELECT count(*) FROM presence_subscription
		WHERE endpoint_jid = ? AND subscriber = ?`, endpointJID, subscriber).Scan(&n); err != nil {
		return false, fmt.Errorf("db: subscribed %s to %s: %w", subscriber, endpointJID, err)
	}
	if err := tx.commit(); err != nil {
		return false, fmt.Errorf("db: subscribed: %w", err)
	}
	return n > 0, nil
}

// ActiveSubscriptions returns the subscribers of every active endpoint that
// has any, keyed by endpoint JID, each list in octetwise order. It reads only
// the subscription table and the active pointers of subscribed endpoints, so
// its cost follows the number of subscriptions, not of endpoints: the gateway
// polls it to make presence follow activations made by another process.
func (s *Store) ActiveSubscriptions(ctx context.Context) (map[string][]string, error) {
	tx, err := s.beginRead(ctx)
	if err != nil {
		return nil, fmt.Errorf("db: active subscriptions: %w", err)
	}
	defer tx.rollback()
	rows, err := tx.query(ctx, `SELECT p.endpoint_jid, p.subscriber
		FROM presence_subscription AS p
		JOIN active_endpoint AS a ON a.jid = p.endpoint_jid
		ORDER BY p.endpoint_jid, p.subscriber`)
	if err != nil {
		return nil, fmt.Errorf("db: active subscriptions: %w", err)
	}
	defer rows.Close()
	out := map[string][]string{}
	for rows.Next() {
		var ep, sub string
		if err := rows.Scan(&ep, &sub); err != nil {
			return nil, fmt.Errorf("db: active subscriptions: %w", err)
		}
		out[ep] = append(out[ep], sub)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("db: active subscriptions: %w", err)
	}
	if err := tx.commit(); err != nil {
		return nil, fmt.Errorf("db: active subscriptions: %w", err)
	}
	return out, nil
}
