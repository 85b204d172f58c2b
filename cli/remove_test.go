package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEndpointRemoval: remove-version refuses the active version, removes an
// inactive one leaving a tombstone, and remove takes the whole endpoint.
func TestEndpointRemoval(t *testing.T) {
	dir, cfg := setup(t)
	v2 := filepath.Join(dir, "v2.json")
	os.WriteFile(v2, []byte(`{"manifestSpecVersion":"0","agent":{"jid":"weather@agents.example","name":"weather","version":"2"},"tools":[]}`), 0o600)
	if code, _, errs := run(t, "endpoint", "register", "-config", cfg, weather); code != 0 {
		t.Fatalf("register: %q", errs)
	}
	if code, _, errs := run(t, "endpoint", "register", "-config", cfg, "-activate", v2); code != 0 {
		t.Fatalf("register v2: %q", errs)
	}
	if code, _, errs := run(t, "endpoint", "remove-version", "-config", cfg, "weather@agents.example", "2"); code != 1 || !strings.Contains(errs, "is active") {
		t.Errorf("remove the active version: %d %q", code, errs)
	}
	if code, _, errs := run(t, "endpoint", "remove-version", "-config", cfg, "weather@agents.example", "7"); code != 1 || !strings.Contains(errs, "has no version 7") {
		t.Errorf("remove an unknown version: %d %q", code, errs)
	}
	if code, out, _ := run(t, "endpoint", "remove-version", "-config", cfg, "weather@agents.example", "1.4.0"); code != 0 || out != "removed weather@agents.example 1.4.0\n" {
		t.Errorf("remove-version: %d %q", code, out)
	}
	_, out, _ := run(t, "endpoint", "status", "-config", cfg, "weather@agents.example")
	if !strings.Contains(out, "* 2 sha-256") || !strings.Contains(out, "removed:\n   1.4.0 sha-256 K2/Y") {
		t.Errorf("status: %q", out)
	}

	// Other content under the removed version is refused; the same content
	// restores it.
	changed := filepath.Join(dir, "changed.json")
	os.WriteFile(changed, []byte(`{"manifestSpecVersion":"0","agent":{"jid":"weather@agents.example","name":"weather","title":"New","version":"1.4.0"},"tools":[]}`), 0o600)
	if code, _, errs := run(t, "endpoint", "register", "-config", cfg, changed); code != 1 || !strings.Contains(errs, "was removed") {
		t.Errorf("register over a tombstone: %d %q", code, errs)
	}
	if code, out, _ := run(t, "endpoint", "register", "-config", cfg, weather); code != 0 || !strings.HasPrefix(out, "registered weather@agents.example 1.4.0") {
		t.Errorf("restore: %d %q", code, out)
	}

	if code, out, _ := run(t, "endpoint", "remove", "-config", cfg, "Weather@agents.example"); code != 0 || out != "removed weather@agents.example\n" {
		t.Errorf("remove: %d %q", code, out)
	}
	if code, _, errs := run(t, "endpoint", "status", "-config", cfg, "weather@agents.example"); code != 1 || !strings.Contains(errs, "no endpoint") {
		t.Errorf("status after remove: %d %q", code, errs)
	}
	if code, _, errs := run(t, "endpoint", "remove", "-config", cfg, "weather@agents.example"); code != 1 || !strings.Contains(errs, "no endpoint") {
		t.Errorf("remove twice: %d %q", code, errs)
	}
	if code, _, _ := run(t, "endpoint", "remove-version", "-config", cfg, "weather@agents.example"); code != 2 {
		t.Errorf("remove-version without a version: exit %d, want 2", code)
	}
}
