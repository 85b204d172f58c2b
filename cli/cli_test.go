package cli_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"agentgw/cli"
)

// run runs one agentgw command in-process.
func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = cli.Main(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func setup(t *testing.T) (dir, config string) {
	t.Helper()
	dir = t.TempDir()
	config = filepath.Join(dir, "agentgw.toml")
	body := "[component]\ndomain = \"agents.example\"\nserver = \"127.0.0.1:5347\"\nsecret = \"x\"\n"
	if err := os.WriteFile(config, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, config
}

const weather = "../testdata/manifest/weather.json"

func TestManifestHash(t *testing.T) {
	code, out, _ := run(t, "manifest", "hash", weather)
	if code != 0 || out != "weather@agents.example 1.4.0 sha-256 K2/YdwvIBAlfUIeZHiNCyiYA4m4W2wrEOqXQDoQyXp4=\n" {
		t.Fatalf("code %d, out %q", code, out)
	}
	// With a config for another domain, the domain rule applies.
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.toml")
	os.WriteFile(cfg, []byte("[component]\ndomain = \"other.example\"\nserver = \"127.0.0.1:1\"\nsecret = \"x\"\n"), 0o600)
	code, _, errs := run(t, "manifest", "hash", "-config", cfg, weather)
	if code != 1 || !strings.Contains(errs, "other.example") {
		t.Fatalf("code %d, stderr %q", code, errs)
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"manifestSpecVersion":"0","manifestSpecVersion":"0"}`), 0o600)
	if code, _, errs := run(t, "manifest", "hash", bad); code != 1 || !strings.Contains(errs, "duplicate") {
		t.Fatalf("duplicate keys: code %d, %q", code, errs)
	}
}

func TestEndpointLifecycle(t *testing.T) {
	dir, cfg := setup(t)
	code, out, errs := run(t, "endpoint", "register", "-config", cfg, weather, "-activate")
	if code != 0 || !strings.HasPrefix(out, "registered weather@agents.example 1.4.0 sha-256 K2/Y") || !strings.Contains(out, "activated") {
		t.Fatalf("register: %d %q %q", code, out, errs)
	}
	if _, out, _ := run(t, "endpoint", "register", "-config", cfg, weather); !strings.HasPrefix(out, "unchanged") {
		t.Errorf("re-register: %q", out)
	}
	// Same version, different content: a clear conflict.
	changed := filepath.Join(dir, "changed.json")
	os.WriteFile(changed, []byte(`{"manifestSpecVersion":"0","agent":{"jid":"weather@agents.example","name":"weather","title":"New","version":"1.4.0"},"tools":[]}`), 0o600)
	if code, _, errs := run(t, "endpoint", "register", "-config", cfg, changed); code != 1 || !strings.Contains(errs, "already registered with different content") {
		t.Errorf("conflict: %d %q", code, errs)
	}
	if _, out, _ := run(t, "endpoint", "list", "-config", cfg); !strings.Contains(out, "weather@agents.example  1.4.0") {
		t.Errorf("list: %q", out)
	}
	if _, out, _ := run(t, "endpoint", "status", "-config", cfg, "Weather@agents.example"); !strings.Contains(out, "active: 1.4.0") || !strings.Contains(out, "* 1.4.0 sha-256 K2/Y") {
		t.Errorf("status: %q", out)
	}
	if code, out, _ := run(t, "endpoint", "deactivate", "-config", cfg, "weather@agents.example"); code != 0 || out != "deactivated weather@agents.example\n" {
		t.Errorf("deactivate: %d %q", code, out)
	}
	if _, out, _ := run(t, "endpoint", "status", "-config", cfg, "weather@agents.example"); !strings.Contains(out, "active: (inactive)") {
		t.Errorf("status after deactivate: %q", out)
	}
	if code, _, errs := run(t, "endpoint", "activate", "-config", cfg, "weather@agents.example", "9.9"); code != 1 || !strings.Contains(errs, "has no version 9.9") {
		t.Errorf("activate unknown: %d %q", code, errs)
	}
	if code, out, _ := run(t, "endpoint", "activate", "-config", cfg, "weather@agents.example", "1.4.0"); code != 0 || out != "activated weather@agents.example 1.4.0\n" {
		t.Errorf("activate: %d %q", code, out)
	}
	if code, _, errs := run(t, "endpoint", "status", "-config", cfg, "weather@elsewhere.example"); code != 1 || !strings.Contains(errs, "not under component.domain") {
		t.Errorf("foreign JID: %d %q", code, errs)
	}
}

func TestUsageAndConfigErrors(t *testing.T) {
	if code, _, errs := run(t, "frobnicate"); code != 2 || !strings.Contains(errs, "usage:") {
		t.Errorf("unknown command: %d", code)
	}
	if code, _, _ := run(t, "endpoint", "register", "x.json"); code != 2 {
		t.Errorf("missing -config: %d", code)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.toml")
	os.WriteFile(cfg, []byte("[component]\ndomain = \"a.example\"\nfoo = 1\n"), 0o600)
	code, _, errs := run(t, "check-config", "-config", cfg)
	if code != 1 || !strings.Contains(errs, "component.foo: unknown key") {
		t.Errorf("check-config: %d %q", code, errs)
	}
	_, good := setup(t)
	if code, out, _ := run(t, "check-config", "-config", good); code != 0 || !strings.HasPrefix(out, "ok:") ||
		!strings.Contains(out, " sandbox=best-effort\n") || !strings.Contains(out, "\nlandlock: ") {
		t.Errorf("check-config good: %d %q", code, out)
	}
}

// TestBadEndpointArgument: a bad JID to a client command is a usage error
// (exit 2) that says what is wrong in one line, without the usage text,
// and before any login.
func TestBadEndpointArgument(t *testing.T) {
	for _, args := range [][]string{
		{"client", "-jid", "alice@home.example", "chat", "not a jid", "hi"},
		{"client", "-jid", "alice@home.example", "call", "not a jid", "echo", "{}"},
	} {
		code, _, errs := run(t, args...)
		if code != 2 || strings.Count(strings.TrimSpace(errs), "\n") != 0 || !strings.Contains(errs, "is not an endpoint") || strings.Contains(errs, "usage:") {
			t.Errorf("%q: exit %d, stderr:\n%s", args, code, errs)
		}
	}
}
