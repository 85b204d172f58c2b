package mcpface

import (
	"context"
	"fmt"

	"agentgw/db"
	"agentgw/db/mcpstate"
	"agentgw/mcpface/account"
)

// Store is the state of `agentgw mcp` (the received-message queue, per
// account, oldest first, bounded, and the MCP tasks of agent calls), kept
// by package db/mcpstate in the store that `[mcp] database` names: a SQLite file or
// a PostgreSQL database. Its exported methods each own one transaction.
type Store struct {
	// Store is the message queue; its Now is the clock of the tasks too.
	*account.Store
	db    *db.Store
	state mcpstate.Store
}

// OpenStore opens or creates the store at pathOrURL: a SQLite path, or a
// postgres:// URL (which may be the gateway's own database: the tables
// are distinct). A SQLite file and its -wal and -shm are private (mode
// 0600), and an existing one that group or others may read is refused: it
// holds every received message and every agent task result. A file that
// an earlier `agentgw mcp` wrote, with its own schema, is converted in
// place after a backup (db.Open).
func OpenStore(ctx context.Context, pathOrURL string) (*Store, error) {
	st, err := db.Open(ctx, pathOrURL)
	if err != nil {
		// db names a URL without its password.
		return nil, fmt.Errorf("open message store: %w", err)
	}
	return &Store{Store: account.NewStore(st), db: st, state: mcpstate.Of(st)}, nil
}

// Migrated says what OpenStore did to the schema: Backup names the copy
// taken before an existing store was migrated.
func (s *Store) Migrated() db.Migration { return s.db.Migrated() }

// Name names the store for logs: the path, or the URL without its
// password.
func (s *Store) Name() string { return s.db.Path() }

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }
