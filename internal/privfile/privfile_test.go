package privfile_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"agentgw/internal/privfile"
)

func TestDatabaseCreatesPrivateWhateverTheUmask(t *testing.T) {
	for _, mask := range []int{0o022, 0o002, 0o000, 0o277} {
		old := syscall.Umask(mask)
		p := filepath.Join(t.TempDir(), "x.db")
		err := privfile.Database(p)
		syscall.Umask(old)
		if err != nil {
			t.Fatal(err)
		}
		info, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if m := info.Mode().Perm(); m != 0o600 {
			t.Errorf("umask %04o: mode %04o, want 0600", mask, m)
		}
		// A second call leaves the private file as it is.
		if err := privfile.Database(p); err != nil {
			t.Errorf("umask %04o: reopen: %v", mask, err)
		}
	}
}

func TestDatabaseRefusesExposedFiles(t *testing.T) {
	for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
		for _, mode := range []os.FileMode{0o644, 0o640, 0o604, 0o660, 0o602} {
			dir := t.TempDir()
			p := filepath.Join(dir, "x.db")
			if err := os.WriteFile(p, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if suffix != "" {
				if err := os.WriteFile(p+suffix, nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Chmod(p+suffix, mode); err != nil {
				t.Fatal(err)
			}
			err := privfile.Database(p)
			if !errors.Is(err, privfile.ErrExposed) || !strings.Contains(err.Error(), p+suffix+" ") {
				t.Errorf("%s mode %04o: %v, want an error naming the file", suffix, mode, err)
			}
		}
	}
}

func TestWorkDir(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	parent := filepath.Join(t.TempDir(), "state", "run")
	d, err := privfile.WorkDir(parent, "weather@agents.example/../x")
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(d) != parent || strings.Contains(filepath.Base(d), "/") {
		t.Fatalf("WorkDir = %s, not directly under %s", d, parent)
	}
	for _, p := range []string{parent, d} {
		info, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if m := info.Mode().Perm(); m != 0o700 {
			t.Errorf("%s: mode %04o, want 0700", p, m)
		}
	}
	// An exposed existing directory is made private again.
	if err := os.Chmod(d, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := privfile.WorkDir(parent, "weather@agents.example/../x"); err != nil {
		t.Fatal(err)
	}
	if info, _ := os.Stat(d); info.Mode().Perm() != 0o700 {
		t.Errorf("mode %04o after a second WorkDir", info.Mode().Perm())
	}
	// A symbolic link planted in its place is refused.
	link := filepath.Join(parent, privfile.WorkDirName("planted"))
	if err := os.Symlink(t.TempDir(), link); err != nil {
		t.Fatal(err)
	}
	if _, err := privfile.WorkDir(parent, "planted"); err == nil {
		t.Error("a symbolic link was accepted as a work directory")
	}
}

// TestWorkDirInjective: names that are equal once made readable get
// different directories, and the directory of an earlier version (its
// legacy name) is moved to the new name with what it holds.
func TestWorkDirInjective(t *testing.T) {
	parent := t.TempDir()
	a, err := privfile.WorkDir(parent, "café@agents.example")
	if err != nil {
		t.Fatal(err)
	}
	b, err := privfile.WorkDir(parent, "cafè@agents.example")
	if err != nil {
		t.Fatal(err)
	}
	if a == b {
		t.Fatalf("café@ and cafè@ share %s", a)
	}
	for _, pair := range [][2]string{{"a_b@x", "a@b_x"}, {"x@y/z", "x@y_z"}} {
		if privfile.WorkDirName(pair[0]) == privfile.WorkDirName(pair[1]) {
			t.Errorf("%q and %q share a name", pair[0], pair[1])
		}
	}

	// An earlier version's directory keeps its files.
	legacy := filepath.Join(parent, privfile.LegacyWorkDirName("tool@agents.example"))
	if err := os.Mkdir(legacy, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(legacy, "cache"), []byte("kept"), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := privfile.WorkDir(parent, "tool@agents.example")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(d, "cache")); err != nil || string(got) != "kept" {
		t.Errorf("the legacy directory's file in %s: %q, %v", d, got, err)
	}
	if _, err := os.Lstat(legacy); !os.IsNotExist(err) {
		t.Errorf("legacy directory still there: %v", err)
	}
}
