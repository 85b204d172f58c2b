package migrate

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"

	"agentgw/internal/privfile"
)

// BusyTimeoutMillis is how long every SQLite connection of the store waits
// for a lock held by another connection or process before failing with
// SQLITE_BUSY.
const BusyTimeoutMillis = "10000"

// BackupFile writes a consistent copy of the SQLite database at path to
// dest with VACUUM INTO (db.Store.Backup, and before a migration): one
// read transaction, on a connection of its own. It refuses a dest that
// exists, checks the copy with PRAGMA integrity_check and syncs it to
// disk. On failure nothing is left at dest.
func BackupFile(ctx context.Context, path, dest string) (err error) {
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
	if err := privfile.Database(dest); err != nil {
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
	src, err := sql.Open("sqlite", path+"?_pragma=busy_timeout("+BusyTimeoutMillis+")")
	if err != nil {
		return fmt.Errorf("db: backup: %w", err)
	}
	defer src.Close()
	src.SetMaxOpenConns(1)
	if _, err := src.ExecContext(ctx, "VACUUM INTO ?", dest); err != nil {
		return fmt.Errorf("db: backup of %s to %s: %w", path, dest, err)
	}
	copyDB, err := sql.Open("sqlite", dest+"?_pragma=busy_timeout("+BusyTimeoutMillis+")")
	if err != nil {
		return fmt.Errorf("db: backup: %w", err)
	}
	problems, cerr := RunCheck(ctx, copyDB, "PRAGMA integrity_check")
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

// RunCheck runs an integrity pragma and returns its findings, or "" if it
// answered ok.
func RunCheck(ctx context.Context, q interface {
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
