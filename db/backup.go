package db

import (
	"context"
	"fmt"
	"strings"

	"agentgw/db/internal/migrate"
)

// Start-up checks and backups.

// Check verifies the database the store was opened on: that it is in WAL
// mode (journal_mode silently stays "delete" where WAL cannot work, and
// then readers and the writer block each other), and that PRAGMA
// quick_check finds no damage. Every error names the file. serve calls it
// at start, before anything is read.
//
// On PostgreSQL the server keeps its own files: Check only asks it for one
// round trip, so that a server that cannot be reached is reported at start.
func (s *Store) Check(ctx context.Context) error {
	if s.pg {
		var one int
		if err := s.reader.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
			return fmt.Errorf("db: %s: %w", s.path, err)
		}
		return nil
	}
	var mode string
	if err := s.writer.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return fmt.Errorf("db: %s: read journal_mode: %w", s.path, err)
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("db: %s: journal_mode is %q, not wal: the file system may not support the write-ahead log (it needs shared memory and locks)", s.path, mode)
	}
	problems, err := migrate.RunCheck(ctx, s.reader, "PRAGMA quick_check")
	if err != nil {
		return fmt.Errorf("db: %s: quick_check: %w", s.path, err)
	}
	if problems != "" {
		return fmt.Errorf("db: %s: quick_check found damage: %s (restore a backup: see README)", s.path, problems)
	}
	return nil
}

// Backup writes a consistent copy of the database to dest with VACUUM
// INTO: one read transaction, so the copy holds exactly what was committed
// when it began, while the gateway (another process, or this one) goes on
// writing. It refuses a dest that exists, checks the copy with PRAGMA
// integrity_check and syncs it to disk. On failure nothing is left at dest.
//
// On PostgreSQL it refuses: back the database up with the server's own
// tools (pg_dump, or a base backup and WAL archive).
func (s *Store) Backup(ctx context.Context, dest string) error {
	if s.pg {
		return fmt.Errorf("db: backup of %s: a PostgreSQL store is backed up with pg_dump or the server's own backups, not agentgw backup", s.path)
	}
	return migrate.BackupFile(ctx, s.path, dest)
}
