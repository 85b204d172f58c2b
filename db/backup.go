package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"

	"agentgw/internal/privfile"
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
	problems, err := runCheck(ctx, s.reader, "PRAGMA quick_check")
	if err != nil {
		return fmt.Errorf("db: %s: quick_check: %w", s.path, err)
	}
	if problems != "" {
		return fmt.Errorf("db: %s: quick_check found damage: %s (restore a backup: see README)", s.path, problems)
	}
	return nil
}

// runCheck runs an integrity pragma and returns its findings, or "" if it
// answered ok.
func runCheck(ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, pragma string) (string, error) {
	rows, err := q.QueryContext(ctx, pragma)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var found []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return "", err
		}
		if line != "ok" {
			found = append(found, line)
		}
		if len(found) == 10 {
			found = append(found, "…")
			break
		}
	}
	if err := rows.Err(); err != nil {
		return "", err
	}
	return strings.Join(found, "; "), nil
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
	return backupFile(ctx, s.path, dest)
}

// backupFile is Backup of the database at path; migrate calls it before a
// Store exists.
func backupFile(ctx context.Context, path, dest string) (err error) {
	if dest == "" || strings.ContainsRune(dest, '?') {
		return fmt.Errorf("db: backup: invalid destination %q", dest)
	}
	if _, err := os.Lstat(dest); err == nil {
		return fmt.Errorf("db: backup: %s already exists", dest)
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("db: backup: %w", err)
	}
	// VACUUM INTO fills an empty file: made first, the copy is private
	// like the database, whatever the umask.
	if err := createPrivate(dest); err != nil {
		return fmt.Errorf("db: backup: %w", err)
	}
	defer func() {
		if err != nil {
			os.Remove(dest)
		}
	}()
	// VACUUM INTO fills an empty file: create it private, as the
	// database is.
	if err := privfile.Database(dest); err != nil {
		return fmt.Errorf("db: backup: %w", err)
	}
	// The readers are query_only, which VACUUM INTO refuses, and the
	// writer must stay free for commits: a connection of its own.
	src, err := sql.Open("sqlite", path+"?_pragma=busy_timeout("+busyTimeoutMillis+")")
	if err != nil {
		return fmt.Errorf("db: backup: %w", err)
	}
	defer src.Close()
	src.SetMaxOpenConns(1)
	if _, err := src.ExecContext(ctx, "VACUUM INTO ?", dest); err != nil {
		return fmt.Errorf("db: backup of %s to %s: %w", path, dest, err)
	}
	copyDB, err := sql.Open("sqlite", dest+"?_pragma=busy_timeout("+busyTimeoutMillis+")")
	if err != nil {
		return fmt.Errorf("db: backup: %w", err)
	}
	problems, cerr := runCheck(ctx, copyDB, "PRAGMA integrity_check")
	copyDB.Close()
	switch {
	case cerr != nil:
		return fmt.Errorf("db: backup: check %s: %w", dest, cerr)
	case problems != "":
		return fmt.Errorf("db: backup: the copy %s fails integrity_check: %s", dest, problems)
	}
	f, err := os.Open(dest)
	if err != nil {
		return fmt.Errorf("db: backup: %w", err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("db: backup: sync %s: %w", dest, err)
	}
	return nil
}
