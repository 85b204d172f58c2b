package db

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// Why an endpoint may not write to someone (ChatConsent).
var (
	// ErrChatNoConsent: the peer has not written to the endpoint within
	// the consent window and is not subscribed to its presence.
	ErrChatNoConsent = errors.New("the recipient has not written to this endpoint recently and is not subscribed to its presence")
	// ErrChatBlocked: a message the endpoint sent bounced (XEP-0191), and
	// the peer has not written since.
	ErrChatBlocked = errors.New("a message to the recipient bounced (blocked or unavailable); it must write to this endpoint again first")
	// ErrChatInactive: the endpoint has no active version (deactivated,
	// removed or never registered). It takes no chats and sends none: a
	// chat to it is bounced as one to a nonexistent JID. It is an
	// ErrNotFound.
	ErrChatInactive = fmt.Errorf("the endpoint is not active: %w", ErrNotFound)
)

// requireActive fails with ErrChatInactive unless endpoint has an active
// version in tx's snapshot: every chat write checks it in its own
// transaction, so no chat state is made for an endpoint that a removal
// in between has taken away (RemoveEndpoint deletes it with the endpoint).
func requireActive(ctx context.Context, tx *txn, endpoint string) error {
	var n int
	if err := tx.queryRow(ctx, `SELECT count(*) FROM active_endpoint WHERE jid = ?`, endpoint).Scan(&n); err != nil {
		return fmt.Errorf("db: chat: is %s active: %w", endpoint, err)
	}
	if n == 0 {
		return ErrChatInactive
	}
	return nil
}

// deleteChatState deletes everything the Human Messaging profile keeps for
// endpoint: consent and blocks, the outbox and the queue. RemoveEndpoint
// calls it in its transaction.
func deleteChatState(ctx context.Context, tx *txn, endpoint string) error {
	for _, q := range []string{
		`DELETE FROM chat_contact WHERE endpoint_jid = ?`,
		`DELETE FROM chat_outbox WHERE endpoint_jid = ?`,
		`DELETE FROM chat_queue WHERE endpoint_jid = ?`,
	} {
		if _, err := tx.exec(ctx, q, endpoint); err != nil {
			return fmt.Errorf("db: remove the chat state of %s: %w", endpoint, err)
		}
	}
	return nil
}

// ChatOut is one message an endpoint sends, durable in the outbox until
// sent (at least once: OriginID is the same on every try).
type ChatOut struct {
	Seq int64
	// Endpoint sends it to Recipient (a full or bare JID), whose bare JID
	// is Peer, the one consent and blocking are kept for.
	Endpoint, Recipient, Peer string
	// OriginID is the XEP-0359 origin-id, and the stanza id.
	OriginID string
	// Type is "chat" or "normal"; Body and Lang the text.
	Type, Body, Lang string
	// ReplyTo and ReplyID name the message answered (XEP-0461); empty
	// for none.
	ReplyTo, ReplyID string
	Created          time.Time
}

// ChatInbound records that peer (a bare JID) wrote to endpoint: the
// consent window starts again and a block recorded by ChatBounced ends. It
// returns the conversation's handle: random, stable for the pair, and what
// an answerer sees instead of the JID. An endpoint that is not active
// records nothing: ErrChatInactive.
func (s *Store) ChatInbound(ctx context.Context, endpoint, peer string) (handle string, err error) {
	tx, err := s.beginWrite(ctx)
	if err != nil {
		return "", fmt.Errorf("db: chat inbound: %w", err)
	}
	defer tx.rollback()
	if handle, err = chatInbound(ctx, tx, endpoint, peer); err != nil {
		return "", err
	}
	if err := tx.commit(); err != nil {
		return "", fmt.Errorf("db: chat inbound: %w", err)
	}
	return handle, nil
}

func chatInbound(ctx context.Context, tx *txn, endpoint, peer string) (string, error) {
	if err := requireActive(ctx, tx, endpoint); err != nil {
		return "", err
	}
	var handle string
	if err := tx.queryRow(ctx, `INSERT INTO chat_contact (endpoint_jid, peer, handle, last_inbound, blocked)
		VALUES (?, ?, ?, ?, 0)
		ON CONFLICT (endpoint_jid, peer) DO UPDATE SET last_inbound = excluded.last_inbound, blocked = 0
		RETURNING handle`,
		endpoint, peer, newChatHandle(), millis(tx.now)).Scan(&handle); err != nil {
		return "", fmt.Errorf("db: chat inbound %s to %s: %w", peer, endpoint, err)
	}
	return handle, nil
}

// newChatHandle is a conversation handle: 128 random bits, in hex.
func newChatHandle() string {
	var b [16]byte
	rand.Read(b[:])
	return "c-" + hex.EncodeToString(b[:])
}

// ChatBounced records that a message endpoint sent to peer came back as
// an error that means blocked or unreachable: the endpoint writes to peer
// no more until peer writes again (ChatInbound). Messages to peer still in
// the outbox are dropped; it returns how many. A bounce to an endpoint that
// is not active records nothing (ErrChatInactive).
func (s *Store) ChatBounced(ctx context.Context, endpoint, peer string) (dropped int64, err error) {
	tx, err := s.beginWrite(ctx)
	if err != nil {
		return 0, fmt.Errorf("db: chat bounced: %w", err)
	}
	defer tx.rollback()
	if err := requireActive(ctx, tx, endpoint); err != nil {
		return 0, err
	}
	if _, err := tx.exec(ctx, `INSERT INTO chat_contact (endpoint_jid, peer, handle, last_inbound, blocked)
		VALUES (?, ?, ?, 0, 1)
		ON CONFLICT (endpoint_jid, peer) DO UPDATE SET blocked = 1`, endpoint, peer, newChatHandle()); err != nil {
		return 0, fmt.Errorf("db: chat bounced %s: %w", endpoint, err)
	}
	res, err := tx.exec(ctx, `DELETE FROM chat_outbox WHERE endpoint_jid = ? AND peer = ?`, endpoint, peer)
	if err != nil {
		return 0, fmt.Errorf("db: chat bounced %s: %w", endpoint, err)
	}
	dropped, _ = res.RowsAffected()
	if err := tx.commit(); err != nil {
		return 0, fmt.Errorf("db: chat bounced: %w", err)
	}
	return dropped, nil
}

// ChatConsent reports whether endpoint may write to peer (a bare JID):
// nil if peer wrote within the window or is subscribed to the endpoint's
// presence and no bounce since has blocked it; ErrChatBlocked or
// ErrChatNoConsent otherwise, and ErrChatInactive for an endpoint that is
// not active, which writes to nobody.
func (s *Store) ChatConsent(ctx context.Context, endpoint, peer string, within time.Duration) error {
	tx, err := s.beginRead(ctx)
	if err != nil {
		return fmt.Errorf("db: chat consent: %w", err)
	}
	defer tx.rollback()
	return chatConsent(ctx, tx, endpoint, peer, within)
}

func chatConsent(ctx context.Context, tx *txn, endpoint, peer string, within time.Duration) error {
	if err := requireActive(ctx, tx, endpoint); err != nil {
		return err
	}
	var last int64
	var blocked int
	err := tx.queryRow(ctx, `SELECT last_inbound, blocked FROM chat_contact
		WHERE endpoint_jid = ? AND peer = ?`, endpoint, peer).Scan(&last, &blocked)
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return fmt.Errorf("db: chat consent %s: %w", endpoint, err)
	case blocked == 1:
		return ErrChatBlocked
	case last > 0 && last >= millis(tx.now.Add(-within)):
		return nil
	}
	var n int
	if err := tx.queryRow(ctx, `SELECT count(*) FROM presence_subscription
		WHERE endpoint_jid = ? AND subscriber = ?`, endpoint, peer).Scan(&n); err != nil {
		return fmt.Errorf("db: chat consent %s: %w", endpoint, err)
	}
	if n == 0 {
		return ErrChatNoConsent
	}
	return nil
}

// ChatSend puts m in the outbox if its endpoint may write to m.Peer
// (ChatConsent, in the same transaction), and returns it with its Seq and
// Created set. Once it returns, m is sent at least once, unless a bounce
// blocks the peer first.
func (s *Store) ChatSend(ctx context.Context, m ChatOut, within time.Duration) (ChatOut, error) {
	tx, err := s.beginWrite(ctx)
	if err != nil {
		return m, fmt.Errorf("db: chat send: %w", err)
	}
	defer tx.rollback()
	if err := chatConsent(ctx, tx, m.Endpoint, m.Peer, within); err != nil {
		return m, err
	}
	m.Created = tx.now
	err = tx.queryRow(ctx, `INSERT INTO chat_outbox (endpoint_jid, recipient, peer, origin_id, type, body, lang, reply_to, reply_id, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING seq`,
		m.Endpoint, m.Recipient, m.Peer, m.OriginID, m.Type, m.Body, m.Lang, m.ReplyTo, m.ReplyID, millis(m.Created)).Scan(&m.Seq)
	if err != nil {
		return m, fmt.Errorf("db: chat send from %s: %w", m.Endpoint, err)
	}
	if err := tx.commit(); err != nil {
		return m, fmt.Errorf("db: chat send: %w", err)
	}
	return m, nil
}

// ChatOutbox returns up to limit messages of the outbox, oldest first.
func (s *Store) ChatOutbox(ctx context.Context, limit int) ([]ChatOut, error) {
	tx, err := s.beginRead(ctx)
	if err != nil {
		return nil, fmt.Errorf("db: chat outbox: %w", err)
	}
	defer tx.rollback()
	rows, err := tx.query(ctx, `SELECT seq, endpoint_jid, recipient, peer, origin_id, type, body, lang, reply_to, reply_id, created_at
		FROM chat_outbox ORDER BY seq LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("db: chat outbox: %w", err)
	}
	defer rows.Close()
	var out []ChatOut
	for rows.Next() {
		var m ChatOut
		var created int64
		if err := rows.Scan(&m.Seq, &m.Endpoint, &m.Recipient, &m.Peer, &m.OriginID, &m.Type, &m.Body, &m.Lang, &m.ReplyTo, &m.ReplyID, &created); err != nil {
			return nil, fmt.Errorf("db: chat outbox: %w", err)
		}
		m.Created = fromMillis(created)
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("db: chat outbox: %w", err)
	}
	return out, nil
}

// ChatSent removes a sent message from the outbox. A message sent but not
// yet removed when the process dies is sent again, with the same origin-id.
func (s *Store) ChatSent(ctx context.Context, seq int64) error {
	tx, err := s.beginWrite(ctx)
	if err != nil {
		return fmt.Errorf("db: chat sent: %w", err)
	}
	defer tx.rollback()
	if _, err := tx.exec(ctx, `DELETE FROM chat_outbox WHERE seq = ?`, seq); err != nil {
		return fmt.Errorf("db: chat sent: %w", err)
	}
	if err := tx.commit(); err != nil {
		return fmt.Errorf("db: chat sent: %w", err)
	}
	return nil
}

// ChatIn is one message queued for an endpoint's MCP clients.
type ChatIn struct {
	Seq int64
	// ID names it (its resource is mid:ID).
	ID       string
	Endpoint string
	// Sender is the full JID that wrote, Recipient the JID it wrote to.
	Sender, Recipient    string
	Type, Body, Subject  string
	Thread, Parent, Lang string
	StanzaID             string
	Received             time.Time
}

// ChatEnqueue records m's sender as having written (ChatInbound) and
// queues m, with its Seq and Received set, for the endpoint's MCP
// clients. Past max queued messages of the endpoint the oldest are
// dropped; their ids are returned.
func (s *Store) ChatEnqueue(ctx context.Context, m ChatIn, peer string, max int) (ChatIn, []string, error) {
	tx, err := s.beginWrite(ctx)
	if err != nil {
		return m, nil, fmt.Errorf("db: chat enqueue: %w", err)
	}
	defer tx.rollback()
	if _, err := chatInbound(ctx, tx, m.Endpoint, peer); err != nil {
		return m, nil, err
	}
	m.Received = tx.now
	err = tx.queryRow(ctx, `INSERT INTO chat_queue (endpoint_jid, id, sender, recipient, type, body, subject, thread, parent, lang, stanza_id, received_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING seq`,
		m.Endpoint, m.ID, m.Sender, m.Recipient, m.Type, m.Body, m.Subject, m.Thread, m.Parent, m.Lang, m.StanzaID, millis(m.Received)).Scan(&m.Seq)
	if err != nil {
		return m, nil, fmt.Errorf("db: chat enqueue to %s: %w", m.Endpoint, err)
	}
	rows, err := tx.query(ctx, `SELECT id FROM chat_queue WHERE endpoint_jid = ?
		ORDER BY seq DESC LIMIT -1 OFFSET ?`, m.Endpoint, max)
	if err != nil {
		return m, nil, fmt.Errorf("db: chat enqueue to %s: %w", m.Endpoint, err)
	}
	var dropped []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return m, nil, fmt.Errorf("db: chat enqueue to %s: %w", m.Endpoint, err)
		}
		dropped = append(dropped, id)
	}
	rows.Close()
	for _, id := range dropped {
		if _, err := tx.exec(ctx, `DELETE FROM chat_queue WHERE id = ?`, id); err != nil {
			return m, nil, fmt.Errorf("db: chat enqueue to %s: %w", m.Endpoint, err)
		}
	}
	if err := tx.commit(); err != nil {
		return m, nil, fmt.Errorf("db: chat enqueue: %w", err)
	}
	return m, dropped, nil
}

const chatQueueColumns = `seq, id, endpoint_jid, sender, recipient, type, body, subject, thread, parent, lang, stanza_id, received_at`

func scanChatIn(sc interface{ Scan(...any) error }) (ChatIn, error) {
	var m ChatIn
	var received int64
	err := sc.Scan(&m.Seq, &m.ID, &m.Endpoint, &m.Sender, &m.Recipient, &m.Type, &m.Body, &m.Subject, &m.Thread, &m.Parent, &m.Lang, &m.StanzaID, &received)
	m.Received = fromMillis(received)
	return m, err
}

// ChatQueue returns up to limit queued messages of the endpoint, oldest
// first.
func (s *Store) ChatQueue(ctx context.Context, endpoint string, limit int) ([]ChatIn, error) {
	tx, err := s.beginRead(ctx)
	if err != nil {
		return nil, fmt.Errorf("db: chat queue: %w", err)
	}
	defer tx.rollback()
	rows, err := tx.query(ctx, `SELECT `+chatQueueColumns+` FROM chat_queue WHERE endpoint_jid = ? ORDER BY seq LIMIT ?`, endpoint, limit)
	if err != nil {
		return nil, fmt.Errorf("db: chat queue of %s: %w", endpoint, err)
	}
	defer rows.Close()
	var out []ChatIn
	for rows.Next() {
		m, err := scanChatIn(rows)
		if err != nil {
			return nil, fmt.Errorf("db: chat queue of %s: %w", endpoint, err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("db: chat queue of %s: %w", endpoint, err)
	}
	return out, nil
}

// ChatTake returns the endpoint's queued message id, or its oldest when
// id is empty, and removes it when remove is set. ErrNotFound if there is
// none.
func (s *Store) ChatTake(ctx context.Context, endpoint, id string, remove bool) (ChatIn, error) {
	tx, err := s.beginWrite(ctx)
	if err != nil {
		return ChatIn{}, fmt.Errorf("db: chat take: %w", err)
	}
	defer tx.rollback()
	var row *sql.Row
	if id == "" {
		row = tx.queryRow(ctx, `SELECT `+chatQueueColumns+` FROM chat_queue WHERE endpoint_jid = ? ORDER BY seq LIMIT 1`, endpoint)
	} else {
		row = tx.queryRow(ctx, `SELECT `+chatQueueColumns+` FROM chat_queue WHERE endpoint_jid = ? AND id = ?`, endpoint, id)
	}
	m, err := scanChatIn(row)
	if errors.Is(err, sql.ErrNoRows) {
		return ChatIn{}, ErrNotFound
	}
	if err != nil {
		return ChatIn{}, fmt.Errorf("db: chat take from %s: %w", endpoint, err)
	}
	if remove {
		if _, err := tx.exec(ctx, `DELETE FROM chat_queue WHERE seq = ?`, m.Seq); err != nil {
			return ChatIn{}, fmt.Errorf("db: chat take from %s: %w", endpoint, err)
		}
	}
	if err := tx.commit(); err != nil {
		return ChatIn{}, fmt.Errorf("db: chat take: %w", err)
	}
	return m, nil
}
