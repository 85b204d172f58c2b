// Package privfile keeps agentgw's files private to the user it runs as:
// the SQLite databases (the gateway's and `agentgw mcp`'s message store,
// with their -wal and -shm files) and the working directories of runtime
// children. One helper serves every store, so that no store can forget.
package privfile

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Mode is the mode of every database file agentgw creates.
const Mode fs.FileMode = 0o600

// DirMode is the mode of the private directories agentgw creates.
const DirMode fs.FileMode = 0o700

// exposed are the bits that let group or others read or write.
const exposed fs.FileMode = 0o077

// ErrExposed is wrapped by the error about a file or directory that group
// or others may read or write.
var ErrExposed = errors.New("can be read or written by group or others")

// sidecars are the files SQLite keeps beside a database.
var sidecars = []string{"", "-wal", "-shm", "-journal"}

// Database prepares path for SQLite: it creates the database file with
// Mode (whatever the umask), so that SQLite, which gives the -wal and -shm
// files it creates the database's mode, never creates any of them with the
// umask's default. An existing database, -wal, -shm or -journal file that
// group or others may read or write is refused with an error naming it.
func Database(path string) error {
	for _, suffix := range sidecars {
		p := path + suffix
		info, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if err := check(p, info); err != nil {
			return err
		}
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, Mode)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	// The umask may have taken bits away (umask 0277 leaves 0400): set the
	// mode on the file we created.
	return f.Chmod(Mode)
}

func check(path string, info fs.FileInfo) error {
	if info.Mode()&fs.ModeSymlink != 0 {
		// Follow it: the file SQLite opens is the target.
		t, err := os.Stat(path)
		if err != nil {
			return err
		}
		info = t
	}
	if m := info.Mode().Perm(); m&exposed != 0 {
		return fmt.Errorf("%s %w (mode %04o): chmod 600 it", path, ErrExposed, m)
	}
	return nil
}

// WorkDir returns the directory parent/WorkDirName(name), created with
// DirMode if it does not exist (parent too). An existing one must be a
// directory, not a symbolic link, of this user, that group and others may
// not enter; one that is not is refused with an error naming it.
//
// A directory of an earlier version, named LegacyWorkDirName(name), is
// renamed to the new name when the new one does not exist yet, so that
// nothing a tool stored is lost. Two names that collided under the old
// scheme shared one directory; the first to ask for it (the first such
// endpoint in the configuration) keeps it.
func WorkDir(parent, name string) (string, error) {
	if err := os.MkdirAll(parent, DirMode); err != nil {
		return "", err
	}
	p := filepath.Join(parent, WorkDirName(name))
	if err := adoptLegacy(filepath.Join(parent, LegacyWorkDirName(name)), p); err != nil {
		return "", err
	}
	if err := os.Mkdir(p, DirMode); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", err
	}
	info, err := os.Lstat(p)
	if err != nil {
		return "", err
	}
	if !info.IsDir() {
		return "", fmt.Errorf("%s is not a directory", p)
	}
	if !ownedByMe(info) {
		return "", fmt.Errorf("%s belongs to another user", p)
	}
	if m := info.Mode().Perm(); m != DirMode {
		if m&exposed == 0 {
			return p, nil // narrower than DirMode: the owner chose it
		}
		// We made it (or own it): take group's and others' bits away.
		if err := os.Chmod(p, DirMode); err != nil {
			return "", fmt.Errorf("%s %w (mode %04o): %v", p, ErrExposed, m, err)
		}
	}
	return p, nil
}

// TempWorkDir makes a fresh private directory for a runtime child whose
// caller named no directory (library use and tests): a new 0700 directory
// of its own, never the shared temporary directory itself.
func TempWorkDir() (string, error) {
	return os.MkdirTemp("", "agentgw-run-")
}

// maxReadable bounds the readable part of a work directory's name.
const maxReadable = 64

// WorkDirName is the name of the work directory of name (an endpoint's
// JID): its letters, digits and . _ - (others replaced with _), at most
// maxReadable bytes of them, then "-" and 32 hex digits of the SHA-256 of
// the exact name. The hash makes it injective: café@x and cafè@x, equal
// once made readable, get different directories.
func WorkDirName(name string) string {
	readable := safeName(name)
	if len(readable) > maxReadable {
		readable = readable[:maxReadable]
	}
	sum := sha256.Sum256([]byte(name))
	return readable + "-" + hex.EncodeToString(sum[:16])
}

// LegacyWorkDirName is the name earlier versions gave the work directory
// of name: safeName alone, which is not injective.
func LegacyWorkDirName(name string) string { return safeName(name) }

// adoptLegacy renames the legacy directory to p when p does not exist
// and legacy is a real directory of this user.
func adoptLegacy(legacy, p string) error {
	if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	info, err := os.Lstat(legacy)
	if err != nil || !info.IsDir() || !ownedByMe(info) {
		return nil
	}
	if err := os.Rename(legacy, p); err != nil && !errors.Is(err, fs.ErrExist) && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("move work directory %s to %s: %w", legacy, p, err)
	}
	return nil
}

// safeName keeps letters, digits and . _ - of name, and replaces every
// other byte with _; it is never empty, "." or "..".
func safeName(name string) string {
	b := []byte(name)
	for i, c := range b {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	s := strings.Trim(string(b), ".")
	if s == "" {
		s = "_"
	}
	return s
}
