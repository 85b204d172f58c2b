package db_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"agentgw/db"
	"agentgw/internal/pgtest"
)

// epoch is the fixed instant of the test clock.
var epoch = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

// Now returns the clock's time.
func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward.
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// openAt opens the store at path with a fixed clock and closes it when the
// test ends.
func openAt(t testing.TB, path string) (*db.Store, *clock) {
	t.Helper()
	s, err := db.Open(context.Background(), path)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	c := &clock{t: epoch}
	s.Now = c.Now
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s, c
}

// newStore opens a fresh store: a file in a temporary directory, or in the
// PostgreSQL pass (main_test.go) a new database.
func newStore(t testing.TB) (*db.Store, *clock) {
	t.Helper()
	return openAt(t, newLocation(t))
}

// newLocation returns where a fresh store is opened: a path in a temporary
// directory, or in the PostgreSQL pass the URL of a new database. Open it
// several times for several Stores on one database.
func newLocation(t testing.TB) string {
	t.Helper()
	if onPostgres() {
		return pgtest.URL(t)
	}
	return filepath.Join(t.TempDir(), "agentgw.db")
}

// manifest builds a version whose canonical bytes and hash derive from its
// fields, so two calls with the same arguments have the same content.
func manifest(jid, version, name, title string) db.Version {
	canonical := fmt.Appendf(nil, `{"jid":%q,"name":%q,"title":%q,"version":%q}`, jid, name, title, version)
	return db.Version{
		JID:         jid,
		Version:     version,
		Hash:        sha256.Sum256(canonical),
		Canonical:   canonical,
		Name:        name,
		Title:       title,
		Description: "Description of " + name + ".",
	}
}

// mustRegister registers v with origin admin and fails the test on error.
func mustRegister(t testing.TB, s *db.Store, v db.Version) {
	t.Helper()
	if _, err := s.RegisterVersion(context.Background(), v, db.OriginAdmin); err != nil {
		t.Fatalf("RegisterVersion(%s %s): %v", v.JID, v.Version, err)
	}
}

// mustActivate activates a version and fails the test on error.
func mustActivate(t testing.TB, s *db.Store, jid, version string) {
	t.Helper()
	if err := s.Activate(context.Background(), jid, version, nil); err != nil {
		t.Fatalf("Activate(%s %s): %v", jid, version, err)
	}
}

// activeCount returns the directory count for everyone, which is read from
// the trigger-maintained stat table.
func activeCount(t testing.TB, s *db.Store) int {
	t.Helper()
	page, err := s.Directory(context.Background(), db.Scope{All: true}, db.Page{})
	if err != nil {
		t.Fatalf("Directory: %v", err)
	}
	return page.Count
}
