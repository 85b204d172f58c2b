package db

import (
	"errors"

	"agentgw/db/internal/pg"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Store faults. SQLite reports a lock held too long by another connection
// or process (busy, locked), a failed read or write of the file (I/O
// error) and a full disk (full) as result codes; all of them may clear on
// their own, and none of them damages what is committed. The task layer
// retries them (package taskd) instead of dropping the write.

// ErrBatchFailed marks the error of a closure whose group commit failed
// as a whole (a savepoint, a release or the commit itself): nothing the
// closure wrote was committed, so running it again is safe.
var ErrBatchFailed = errors.New("db: group commit failed")

// Transient reports whether err is a store fault that may clear on its
// own: SQLITE_BUSY, SQLITE_LOCKED, SQLITE_IOERR, SQLITE_FULL,
// SQLITE_PROTOCOL (a WAL lock race), or a group commit that failed as a
// whole. The write that failed left nothing behind and may be tried again.
func Transient(err error) bool {
	if errors.Is(err, ErrBatchFailed) || pg.Transient(err) {
		return true
	}
	switch primaryCode(err) {
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_IOERR,
		sqlite3.SQLITE_FULL, sqlite3.SQLITE_PROTOCOL:
		return true
	}
	return false
}

// DiskFull reports whether err is SQLITE_FULL: the file system holding the
// database (or its write-ahead log) has no space left.
//
// On PostgreSQL it is SQLSTATE 53100 (disk_full).
func DiskFull(err error) bool {
	return primaryCode(err) == sqlite3.SQLITE_FULL || pg.Code(err) == "53100"
}

// primaryCode returns the primary SQLite result code of err, or 0.
func primaryCode(err error) int {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return 0
	}
	return se.Code() & 0xff
}
