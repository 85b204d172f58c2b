package cli_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// snapshot is every file of dir with its content and mode.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		var b []byte
		if !e.IsDir() {
			if b, err = os.ReadFile(filepath.Join(dir, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
		out[e.Name()] = info.Mode().String() + " " + info.ModTime().String() + " " + string(b)
	}
	return out
}

// TestInit: init writes a configuration that check-config accepts, a 0600
// secret that it never prints, and an empty database; a second init into
// the same directory refuses and changes nothing.
func TestInit(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gw")
	code, out, errs := run(t, "init", "-domain", "agents.example.org", "-server", "127.0.0.1:5347", dir)
	if code != 0 {
		t.Fatalf("init: %d %s", code, errs)
	}
	secretFile := filepath.Join(dir, "component.secret")
	secret, err := os.ReadFile(secretFile)
	if err != nil {
		t.Fatal(err)
	}
	if len(strings.TrimSpace(string(secret))) != 64 {
		t.Errorf("secret %d bytes", len(secret))
	}
	if strings.Contains(out, strings.TrimSpace(string(secret))) || strings.Contains(errs, strings.TrimSpace(string(secret))) {
		t.Fatalf("init printed the secret:\n%s", out)
	}
	for name, mode := range map[string]os.FileMode{"component.secret": 0o600, "agentgw.db": 0o600, "agentgw.toml": 0o640, "run": 0o700} {
		info, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode().Perm() != mode {
			t.Errorf("%s: mode %v, want %v", name, info.Mode().Perm(), mode)
		}
	}
	for _, want := range []string{
		"== Prosody 0.12", "\nnetwork_settings = { nagle = false }\n", `Component "agents.example.org"`,
		`component_secret = assert(io.open("` + secretFile + `")):read("*l")`,
		"== ejabberd", "module: ejabberd_service", `"agents.example.org":`, "$(cat " + secretFile + ")",
		"== Openfire", "subdomain agents",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("init output lacks %q:\n%s", want, out)
		}
	}
	// The default port on loopback needs no global Prosody settings.
	if strings.Contains(out, "component_ports") {
		t.Errorf("init printed component_ports for the default port:\n%s", out)
	}
	cfg := filepath.Join(dir, "agentgw.toml")
	if code, out, errs := run(t, "check-config", "-config", cfg); code != 0 || !strings.HasPrefix(out, "ok: domain=agents.example.org server=127.0.0.1:5347 tls=false") {
		t.Fatalf("check-config: %d %q %q", code, out, errs)
	}
	if code, out, errs := run(t, "endpoint", "list", "-config", cfg); code != 0 || out != "JID  ACTIVE  VERSIONS\n" {
		t.Fatalf("endpoint list of the new database: %d %q %q", code, out, errs)
	}

	before := snapshot(t, dir)
	code, out, errs = run(t, "init", "-domain", "other.example.org", dir)
	if code != 1 || !strings.Contains(errs, "agentgw.toml already exists") || out != "" {
		t.Fatalf("init over a config: %d %q %q", code, out, errs)
	}
	if after := snapshot(t, dir); !reflect.DeepEqual(before, after) {
		t.Fatalf("init over a config changed the directory")
	}
}

// TestInitRefusesAnyExisting: any one of the files init would write makes
// it refuse before it writes the others.
func TestInitRefusesAnyExisting(t *testing.T) {
	for _, name := range []string{"agentgw.toml", "component.secret", "agentgw.db", "agentgw.db-wal"} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, name), []byte("mine\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		before := snapshot(t, dir)
		code, _, errs := run(t, "init", "-domain", "agents.example.org", dir)
		if code != 1 || !strings.Contains(errs, name+" already exists") {
			t.Errorf("%s: code %d, %q", name, code, errs)
		}
		if after := snapshot(t, dir); !reflect.DeepEqual(before, after) {
			t.Errorf("%s: init changed the directory: %v", name, after)
		}
	}
}

// TestInitRemoteServer: a server on another machine gets direct TLS in the
// configuration, and Prosody's snippet the listener settings.
func TestInitRemoteServer(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := run(t, "init", "-domain", "agents.example.org", "-server", "xmpp.example.org:5348", dir)
	if code != 0 {
		t.Fatalf("init: %d %s", code, errs)
	}
	for _, want := range []string{"component_ports = { 5348 }", `component_interfaces = { "*" }`} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if code, out, errs := run(t, "check-config", "-config", filepath.Join(dir, "agentgw.toml")); code != 0 || !strings.Contains(out, "tls=true") {
		t.Fatalf("check-config: %d %q %q", code, out, errs)
	}
	for _, bad := range [][]string{
		{"init", dir},
		{"init", "-domain", "a@b", t.TempDir()},
		{"init", "-domain", "agents.example.org", "-server", "nope", t.TempDir()},
	} {
		if code, _, _ := run(t, bad...); code == 0 {
			t.Errorf("%v succeeded", bad)
		}
	}
}
