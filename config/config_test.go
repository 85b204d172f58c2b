package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"agentgw/config"

	"mellium.im/xmpp/jid"
)

func TestExampleLoads(t *testing.T) {
	c, err := config.Load("../config.example.toml")
	if err != nil {
		t.Fatalf("config.example.toml: %v", err)
	}
	if c.Domain.String() != "agents.example.org" || c.PageMax != 100 || c.PingInterval.Seconds() != 60 {
		t.Fatalf("unexpected values: %+v", c)
	}
	alice := jid.MustParse("alice@example.org/x")
	if !c.Policy.CanSee(alice, "anything@agents.example.org") {
		t.Error("example grant not applied")
	}
	if !c.Policy.CanInvoke(alice, "weather@agents.example.org", "forecast.get") {
		t.Error("example invoke grant not applied")
	}
	if c.Policy.CanSee(jid.MustParse("mallory@evil.example"), "anything@agents.example.org") {
		t.Error("stranger sees")
	}
}

func write(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "agentgw.toml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const minimal = `
[component]
domain = "agents.example"
server = "127.0.0.1:5347"
secret = "s3cret-value"
`

func TestMinimalDeniesAll(t *testing.T) {
	c, err := config.Load(write(t, minimal))
	if err != nil {
		t.Fatal(err)
	}
	if c.Policy.CanSee(jid.MustParse("a@agents.example"), "x@agents.example") {
		t.Fatal("no grants must mean nobody sees anything")
	}
	if !strings.HasSuffix(c.DatabasePath, "agentgw.db") || !filepath.IsAbs(c.DatabasePath) {
		t.Errorf("database path not resolved against the config dir: %s", c.DatabasePath)
	}
}

func TestErrorsNameKeys(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"unknown key", minimal + "\n[policy]\nfoo = 1\n", "policy.foo: unknown key"},
		{"unknown table", minimal + "\n[[endpoints]]\njid = \"x@agents.example\"\n", "endpoints"},
		{"no domain", "[component]\nserver=\"127.0.0.1:1\"\nsecret=\"x\"\n", "component.domain: required"},
		{"no secret", "[component]\ndomain=\"a.example\"\nserver=\"127.0.0.1:1\"\n", "component.secret: required"},
		{"both secrets", minimal + "", ""},
		{"remote plaintext", "[component]\ndomain=\"a.example\"\nserver=\"192.0.2.1:5347\"\nsecret=\"x\"\n", "component.server: 192.0.2.1 is not a loopback address"},
		{"bad principal", minimal + "[[policy.visibility]]\nprincipals=[\"a@b/c\"]\nendpoints=[\"*\"]\n", "policy.visibility[0].principals[0]"},
		{"foreign endpoint", minimal + "[[policy.visibility]]\nprincipals=[\"example.org\"]\nendpoints=[\"w@other.example\"]\n", "policy.visibility[0].endpoints[0]: w@other.example is not under component.domain"},
		{"missing tools", minimal + "[[policy.invoke]]\nprincipals=[\"example.org\"]\nendpoints=[\"*\"]\n", "policy.invoke[0].tools: required"},
		{"page cap", minimal + "[gateway]\npage_max = 500\n", "gateway.page_max"},
		{"bad duration", strings.Replace(minimal, "secret =", "ping_interval = \"soon\"\nsecret =", 1), "component.ping_interval"},
		{"wrong type", minimal + "[gateway]\npage_max = \"many\"\n", "page_max"},
		{"missing secret file", strings.Replace(minimal, `secret = "s3cret-value"`, `secret_file = "nope"`, 1), "component.secret_file: cannot read"},
	} {
		if tc.want == "" {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Load(write(t, tc.body))
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not contain %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "s3cret-value") {
				t.Fatalf("error leaks the secret: %q", err)
			}
		})
	}
}

func TestSecretNeverInErrors(t *testing.T) {
	// A type error on the secret line must not quote the line.
	body := "[component]\ndomain=\"a.example\"\nserver=\"127.0.0.1:1\"\nsecret = 12345678\n"
	_, err := config.Load(write(t, body))
	if err == nil {
		t.Fatal("no error")
	}
	if strings.Contains(err.Error(), "12345678") {
		t.Fatalf("error leaks the secret: %q", err)
	}
}

func TestSecretFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "secret"), []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "c.toml")
	body := strings.Replace(minimal, `secret = "s3cret-value"`, `secret_file = "secret"`, 1)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := config.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if string(c.Secret) != "from-file" {
		t.Fatalf("secret = %q", c.Secret)
	}
}

func TestSecretFileOneLine(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "secret"), []byte("line1\nline2\n"), 0o600)
	p := filepath.Join(dir, "c.toml")
	os.WriteFile(p, []byte(strings.Replace(minimal, `secret = "s3cret-value"`, `secret_file = "secret"`, 1)), 0o600)
	_, err := config.Load(p)
	if err == nil || !strings.Contains(err.Error(), "component.secret_file: must hold the secret on its first and only line") {
		t.Fatalf("two-line secret file: %v", err)
	}
	if strings.Contains(err.Error(), "line1") {
		t.Fatalf("error leaks the secret: %v", err)
	}
}

func TestUnknownKeysAndOtherProblemsTogether(t *testing.T) {
	body := "[component]\ndomain = \"a.example\"\nserver = \"192.0.2.1:5347\"\nsecret = \"x\"\nbogus = 1\n[gateway]\npage_max = 0\n"
	_, err := config.Load(write(t, body))
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"component.bogus: unknown key", "component.server", "gateway.page_max"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}
