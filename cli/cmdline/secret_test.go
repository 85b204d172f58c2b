package cmdline_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"agentgw/cli/cmdline"
)

// TestPasswordFileMode: a password file that group or others can read is
// refused with an error that names it and its mode; a private one is read.
func TestPasswordFileMode(t *testing.T) {
	p := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(p, []byte("pa55word-xyz\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if pw, err := cmdline.ReadPassword(p); err != nil || pw != "pa55word-xyz" {
		t.Fatalf("private file: %q %v", pw, err)
	}
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := cmdline.ReadPassword(p)
	if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "0644") || strings.Contains(err.Error(), "pa55word") {
		t.Fatalf("world-readable file: %v", err)
	}
}
