package secretfile_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"agentgw/internal/secretfile"
)

func TestModes(t *testing.T) {
	dir := t.TempDir()
	for mode, ok := range map[os.FileMode]bool{0o600: true, 0o400: true, 0o700: true, 0o640: false, 0o604: false, 0o644: false, 0o620: false, 0o602: false, 0o610: true} {
		p := filepath.Join(dir, "s")
		os.Remove(p)
		if err := os.WriteFile(p, []byte("hunter2-secret"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		b, err := secretfile.Read(p, 64)
		if ok != (err == nil) || secretfile.Check(p) != nil == ok {
			t.Errorf("mode %04o: %v", mode, err)
		}
		if !ok {
			if !errors.Is(err, secretfile.ErrExposed) || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), fmt.Sprintf("mode %04o", mode)) {
				t.Errorf("mode %04o: error %q does not name the file", mode, err)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error leaks the content: %v", err)
			}
		} else if string(b) != "hunter2-secret" {
			t.Errorf("mode %04o: read %q", mode, b)
		}
	}
	p := filepath.Join(dir, "big")
	os.WriteFile(p, make([]byte, 100), 0o600)
	if _, err := secretfile.Read(p, 64); err == nil {
		t.Error("oversized file read")
	}
}

// TestSharedModes: the component secret may be read by the XMPP server's
// group, and by nobody else.
func TestSharedModes(t *testing.T) {
	dir := t.TempDir()
	for mode, ok := range map[os.FileMode]bool{0o600: true, 0o640: true, 0o440: true, 0o660: false, 0o644: false, 0o604: false, 0o602: false, 0o620: false} {
		p := filepath.Join(dir, "s")
		os.Remove(p)
		if err := os.WriteFile(p, []byte("hunter2-secret"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		b, err := secretfile.ReadShared(p, 64)
		if ok != (err == nil) {
			t.Errorf("mode %04o: %v", mode, err)
		}
		if !ok && (!errors.Is(err, secretfile.ErrExposed) || !strings.Contains(err.Error(), p) || strings.Contains(err.Error(), "hunter2")) {
			t.Errorf("mode %04o: error %q", mode, err)
		}
		if ok && string(b) != "hunter2-secret" {
			t.Errorf("mode %04o: read %q", mode, b)
		}
	}
}
