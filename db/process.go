package db

import (
	"context"
	"fmt"
)

// Process groups of runtime processes (exec tools, stdio MCP servers), so
// that a gateway that died can kill, when it starts again, whatever its
// previous run left running (internal/procgroup). A row is written when a
// process group starts and deleted when it has been killed or has ended;
// rows a crash left behind are read once at start.

// ProcessGroup is one recorded process group.
type ProcessGroup struct {
	// PGID is the process group ID: the PID of its leader.
	PGID int
	// BootID identifies the boot of the machine the group started in
	// (/proc/sys/kernel/random/boot_id); StartTicks is the leader's start
	// time in clock ticks since that boot (/proc/PID/stat). Together they
	// tell the group apart from a later one that reuses the number.
	BootID     string
	StartTicks uint64
	// OwnerPID and OwnerStartTicks identify the gateway process that
	// started the group: a group whose gateway still runs is not stale.
	OwnerPID        int
	OwnerStartTicks uint64
}

// processMigration turns schema version 6 into version 7: the process
// groups of runtime processes. schema.sql holds the same table; once
// shipped, never edit this.
const processMigration = `
CREATE TABLE runtime_process (
	pgid        INTEGER NOT NULL PRIMARY KEY CHECK (pgid > 0),
	boot_id     TEXT    NOT NULL,
	start_ticks INTEGER NOT NULL CHECK (start_ticks >= 0),
	owner_pid   INTEGER NOT NULL,
	owner_start INTEGER NOT NULL CHECK (owner_start >= 0),
	recorded_at INTEGER NOT NULL
) STRICT;
`

// RecordProcessGroup records a process group that has just started,
// replacing any stale row with its number.
func (s *Store) RecordProcessGroup(ctx context.Context, g ProcessGroup) error {
	tx, err := s.beginWrite(ctx)
	if err != nil {
		return fmt.Errorf("db: record process group: %w", err)
	}
	defer tx.rollback()
	if _, err := tx.exec(ctx, `INSERT INTO runtime_process (pgid, boot_id, start_ticks, owner_pid, owner_start, recorded_at)
		VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (pgid) DO UPDATE SET boot_id = excluded.boot_id, start_ticks = excluded.start_ticks,
			owner_pid = excluded.owner_pid, owner_start = excluded.owner_start, recorded_at = excluded.recorded_at`,
		g.PGID, g.BootID, int64(g.StartTicks), g.OwnerPID, int64(g.OwnerStartTicks), millis(tx.now)); err != nil {
		return fmt.Errorf("db: record process group: %w", err)
	}
	if err := tx.commit(); err != nil {
		return fmt.Errorf("db: record process group: %w", err)
	}
	return nil
}

// ForgetProcessGroup deletes the record of a process group that has
// ended, if it is the recorded one (same leader start time).
func (s *Store) ForgetProcessGroup(ctx context.Context, g ProcessGroup) error {
	tx, err := s.beginWrite(ctx)
	if err != nil {
		return fmt.Errorf("db: forget process group: %w", err)
	}
	defer tx.rollback()
	if _, err := tx.exec(ctx, `DELETE FROM runtime_process WHERE pgid = ? AND boot_id = ? AND start_ticks = ?`,
		g.PGID, g.BootID, int64(g.StartTicks)); err != nil {
		return fmt.Errorf("db: forget process group: %w", err)
	}
	if err := tx.commit(); err != nil {
		return fmt.Errorf("db: forget process group: %w", err)
	}
	return nil
}

// ProcessGroups lists every recorded process group.
func (s *Store) ProcessGroups(ctx context.Context) ([]ProcessGroup, error) {
	tx, err := s.beginRead(ctx)
	if err != nil {
		return nil, fmt.Errorf("db: process groups: %w", err)
	}
	defer tx.rollback()
	rows, err := tx.query(ctx, `SELECT pgid, boot_id, start_ticks, owner_pid, owner_start FROM runtime_process ORDER BY pgid`)
	if err != nil {
		return nil, fmt.Errorf("db: process groups: %w", err)
	}
	defer rows.Close()
	var out []ProcessGroup
	for rows.Next() {
		var g ProcessGroup
		var ticks, owner int64
		if err := rows.Scan(&g.PGID, &g.BootID, &ticks, &g.OwnerPID, &owner); err != nil {
			return nil, fmt.Errorf("db: process groups: %w", err)
		}
		g.StartTicks, g.OwnerStartTicks = uint64(ticks), uint64(owner)
		out = append(out, g)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("db: process groups: %w", err)
	}
	return out, tx.commit()
}
