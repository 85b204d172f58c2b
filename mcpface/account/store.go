package account

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"agentgw/db"
	"agentgw/db/mcpstate"
)

// ErrNotFound is returned for an unknown message id.
var ErrNotFound = errors.New("mcpface: no such message")

// Store is the account's received-message queue (oldest first, bounded),
// kept by package db in the store that `[mcp] database` names. Its
// exported methods each own one transaction.
type Store struct {
	db mcpstate.Store
	// Now is the clock; tests may replace it.
	Now func() time.Time
}

// NewStore is the message queue in d.
func NewStore(d *db.Store) *Store { return &Store{db: mcpstate.Of(d), Now: time.Now} }

// Stored is a queued message with our own identifier.
type Stored struct {
	ID         string
	ReceivedAt time.Time
	Message    MessageResponse
}

// newID returns a fresh message identifier of our own.
func newID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Push queues m for account under a fresh ID, then drops the oldest
// messages past max; it returns the stored message and the IDs dropped.
func (s *Store) Push(ctx context.Context, account string, m MessageResponse, max int) (Stored, []string, error) {
	st, dropped, err := s.PushBatch(ctx, account, []MessageResponse{m}, max, 0)
	if err != nil {
		return Stored{}, nil, err
	}
	return st[0], dropped, nil
}

// PushBatch queues ms for account, oldest first, under fresh IDs, in one
// transaction (one durable commit however many there are). Then it drops
// the oldest messages of account past max, and past maxBytes of stored
// messages in all (0: no byte bound), but never the newest. It returns the
// messages stored (dropped ones included) and the IDs dropped, oldest
// first.
func (s *Store) PushBatch(ctx context.Context, account string, ms []MessageResponse, max int, maxBytes int64) ([]Stored, []string, error) {
	if len(ms) == 0 {
		return nil, nil, nil
	}
	now := s.Now()
	out := make([]Stored, len(ms))
	rows := make([]mcpstate.Message, len(ms))
	for i, m := range ms {
		raw, err := json.Marshal(m)
		if err != nil {
			return nil, nil, err
		}
		out[i] = Stored{ID: newID(), ReceivedAt: now, Message: m}
		rows[i] = mcpstate.Message{ID: out[i].ID, ReceivedAt: now, Message: raw}
	}
	dropped, err := s.db.PushMessages(ctx, account, rows, max, maxBytes)
	if err != nil {
		return nil, nil, fmt.Errorf("store message: %w", err)
	}
	return out, dropped, nil
}

// QueuedBytes returns the bytes of the messages of account as stored,
// and how many there are.
func (s *Store) QueuedBytes(ctx context.Context, account string) (bytes int64, n int, err error) {
	return s.db.QueuedBytes(ctx, account)
}

// Oldest returns the oldest message of account without removing it;
// ErrNotFound if there is none.
func (s *Store) Oldest(ctx context.Context, account string) (Stored, error) {
	return stored(s.db.Message(ctx, account, ""))
}

// Get returns the message id of account; ErrNotFound if it is not queued.
func (s *Store) Get(ctx context.Context, account, id string) (Stored, error) {
	if id == "" {
		return Stored{}, ErrNotFound
	}
	return stored(s.db.Message(ctx, account, id))
}

// stored decodes what the store returned.
func stored(m mcpstate.Message, err error) (Stored, error) {
	if errors.Is(err, db.ErrNotFound) {
		return Stored{}, ErrNotFound
	}
	if err != nil {
		return Stored{}, err
	}
	st := Stored{ID: m.ID, ReceivedAt: m.ReceivedAt}
	if err := json.Unmarshal(m.Message, &st.Message); err != nil {
		return Stored{}, fmt.Errorf("message %s: %w", st.ID, err)
	}
	return st, nil
}

// Take returns and removes the message id of account (the oldest when id
// is empty); ErrNotFound if there is none.
func (s *Store) Take(ctx context.Context, account, id string) (Stored, error) {
	return stored(s.db.TakeMessage(ctx, account, id))
}

// List returns the queued messages of account, oldest first.
func (s *Store) List(ctx context.Context, account string) ([]Stored, error) {
	ms, err := s.db.Messages(ctx, account)
	if err != nil {
		return nil, err
	}
	out := make([]Stored, 0, len(ms))
	for _, m := range ms {
		st, err := stored(m, nil)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

// Dropped returns how many messages of account were dropped past the
// bound since the store was created.
func (s *Store) Dropped(ctx context.Context, account string) (int64, error) {
	return s.db.Dropped(ctx, account)
}
