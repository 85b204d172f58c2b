package db_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"agentgw/db"
)

func TestCheck(t *testing.T) {
	sqliteOnly(t, "journal mode and quick_check of the file")
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "agentgw.db")
	s, err := db.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Check(ctx); err != nil {
		t.Fatalf("Check of a fresh database: %v", err)
	}
	for i := 1; i <= 3000; i++ {
		if err := s.RecordProcessGroup(ctx, db.ProcessGroup{PGID: i, BootID: strings.Repeat("b", 36), StartTicks: uint64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()

	// Damage pages in the middle of the file.
	var f *os.File
	f, err = os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := f.Stat()
	junk := []byte(strings.Repeat("\xde\xad\xbe\xef", 2048))
	for off := st.Size() / 2; off < st.Size()-int64(len(junk)); off += 3 * int64(len(junk)) {
		if _, err := f.WriteAt(junk, off); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
	s2, err := db.Open(ctx, path)
	if err != nil {
		// Damage found before the check: the error still names it.
		t.Logf("Open: %v", err)
		return
	}
	defer s2.Close()
	err = s2.Check(ctx)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "quick_check") {
		t.Fatalf("Check of a damaged database: %v", err)
	}
}

// Backup copies what was committed when it began, while writes go on, and
// refuses a destination that exists.
func TestBackup(t *testing.T) {
	sqliteOnly(t, "VACUUM INTO; PostgreSQL is backed up with pg_dump")
	ctx := context.Background()
	dir := t.TempDir()
	s, _ := openAt(t, filepath.Join(dir, "agentgw.db"))
	for i := 1; i <= 500; i++ {
		if err := s.RecordProcessGroup(ctx, db.ProcessGroup{PGID: i, BootID: "boot", StartTicks: uint64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 501; i <= 1500; i++ {
			if err := s.RecordProcessGroup(ctx, db.ProcessGroup{PGID: i, BootID: "boot", StartTicks: uint64(i)}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	dest := filepath.Join(dir, "backup.db")
	if err := s.Backup(ctx, dest); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if err := s.Backup(ctx, dest); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("Backup over an existing file: %v", err)
	}
	b, _ := openAt(t, dest)
	if err := b.Check(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := b.ProcessGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) < 500 {
		t.Fatalf("the backup holds %d rows, want at least the 500 committed before it", len(got))
	}
	for i, g := range got {
		if g.PGID != i+1 {
			t.Fatalf("row %d of the backup is group %d: not a prefix of the commits", i, g.PGID)
		}
	}
	t.Logf("backup holds %d of 1500 rows", len(got))
}
