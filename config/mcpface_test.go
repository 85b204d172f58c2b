package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"agentgw/config"
)

// mcpDir writes an MCP-only configuration with a password and a token file
// (mode 0600) and returns the configuration's path.
func mcpDir(t *testing.T, body string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range map[string]string{
		"alice.password": "pw\n",
		"claude.token":   "0123456789abcdef-token\n",
		"other.token":    "another-token-0123456789\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	p := filepath.Join(dir, "mcp.toml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const mcpOnly = `
[mcp]
queue_max = 10

[[mcp.account]]
jid = "alice@example.org"
password_file = "alice.password"
server = "127.0.0.1:5222"

[[mcp.token]]
file = "claude.token"
account = "alice@example.org"
scopes = ["OAUTH.Scope.MCP.XMPP.Tools.Message.Send"]
`

// TestMCPDatabaseURL: mcp.database may be a postgres:// URL, kept as
// written (not resolved as a path) and never logged with its password; a
// URL of another kind is refused, naming the key.
func TestMCPDatabaseURL(t *testing.T) {
	const url = "postgres://agentgw:hunter2@127.0.0.1:5432/agentgw"
	p := mcpDir(t, strings.Replace(mcpOnly, "queue_max = 10", "queue_max = 10\ndatabase = \""+url+"\"", 1))
	c, err := config.LoadMCP(p)
	if err != nil {
		t.Fatal(err)
	}
	if c.MCP.Database != url {
		t.Errorf("database = %q, want %q", c.MCP.Database, url)
	}
	if d := c.MCP.String(); strings.Contains(d, "hunter2") || !strings.Contains(d, "127.0.0.1:5432") {
		t.Errorf("String() = %q", d)
	}
	if desc, err := config.Check(p); err != nil || strings.Contains(desc, "hunter2") {
		t.Errorf("Check = %q, %v", desc, err)
	}
	p = mcpDir(t, strings.Replace(mcpOnly, "queue_max = 10", "queue_max = 10\ndatabase = \"mysql://u:hunter2@h/db\"", 1))
	_, err = config.LoadMCP(p)
	if err == nil || !strings.Contains(err.Error(), "mcp.database") || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("LoadMCP of a mysql URL: %v", err)
	}
}

func TestMCPOnlyConfig(t *testing.T) {
	p := mcpDir(t, mcpOnly)
	c, err := config.LoadMCP(p)
	if err != nil {
		t.Fatal(err)
	}
	m := c.MCP
	if m.QueueMax != 10 || m.Database != filepath.Join(filepath.Dir(p), "agentgw-mcp.db") {
		t.Errorf("queue_max/database: %+v", m)
	}
	if len(m.Accounts) != 1 || m.Accounts[0].JID.String() != "alice@example.org" || string(m.Accounts[0].Password) != "pw" || m.Accounts[0].Server != "127.0.0.1:5222" {
		t.Errorf("account: %+v", m.Accounts)
	}
	if len(m.Tokens) != 1 || string(m.Tokens[0].Token) != "0123456789abcdef-token" || m.Tokens[0].Account != "alice@example.org" {
		t.Errorf("token: %+v", m.Tokens)
	}
	// check-config takes the file as an `agentgw mcp` one, and never
	// prints a secret.
	desc, err := config.Check(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(desc, "alice@example.org") || strings.Contains(desc, "abcdef-token") {
		t.Errorf("check: %s", desc)
	}
	// The same file is no gateway configuration.
	if _, err := config.Load(p); err == nil || !strings.Contains(err.Error(), "component.domain") {
		t.Errorf("Load without [component]: %v", err)
	}
}

func TestMCPConfigErrors(t *testing.T) {
	cases := []struct{ name, body, want string }{
		{"no account", "[mcp]\nqueue_max = 5\n", "mcp.account: required"},
		{"queue_max", strings.Replace(mcpOnly, "queue_max = 10", "queue_max = 0", 1), "mcp.queue_max: must be between 1 and 100000"},
		{"bad jid", strings.Replace(mcpOnly, `jid = "alice@example.org"`, `jid = "example.org"`, 1), "mcp.account[0].jid: must be a bare JID"},
		{"no password", strings.Replace(mcpOnly, `password_file = "alice.password"`, ``, 1), "mcp.account[0].password_file: required"},
		{"missing password", strings.Replace(mcpOnly, `"alice.password"`, `"nope"`, 1), "mcp.account[0].password_file: cannot read"},
		{"server", strings.Replace(mcpOnly, `"127.0.0.1:5222"`, `"127.0.0.1"`, 1), "mcp.account[0].server: must be host:port"},
		{"token account", strings.Replace(mcpOnly, `account = "alice@example.org"`, `account = "bob@example.org"`, 1), "mcp.token[0].account: must be the jid of an [[mcp.account]]"},
		{"token scope", strings.Replace(mcpOnly, `Message.Send"`, `Message.Fly"`, 1), `mcp.token[0].scopes[0]: unknown scope`},
		{"no scopes", strings.Replace(mcpOnly, `scopes = ["OAUTH.Scope.MCP.XMPP.Tools.Message.Send"]`, ``, 1), "mcp.token[0].scopes: required"},
		{"token file", strings.Replace(mcpOnly, `file = "claude.token"`, `file = "none.token"`, 1), "mcp.token[0].file: cannot read"},
		{"dup token", mcpOnly + "[[mcp.token]]\nfile = \"claude.token\"\naccount = \"alice@example.org\"\nscopes = [\"*\"]\n", "mcp.token[1].file: holds the same token as mcp.token[0]"},
		{"tls half", strings.Replace(mcpOnly, "queue_max = 10", `tls_cert = "alice.password"`, 1), "mcp.tls_key: required with mcp.tls_cert"},
		{"unknown key", strings.Replace(mcpOnly, "queue_max = 10", "queue = 10", 1), "mcp.queue: unknown key"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := config.LoadMCP(mcpDir(t, c.body))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want %q", err, c.want)
			}
		})
	}
}

func TestMCPSecretFileMode(t *testing.T) {
	for _, f := range []string{"alice.password", "claude.token"} {
		t.Run(f, func(t *testing.T) {
			p := mcpDir(t, mcpOnly)
			file := filepath.Join(filepath.Dir(p), f)
			if err := os.Chmod(file, 0o640); err != nil {
				t.Fatal(err)
			}
			_, err := config.LoadMCP(p)
			if err == nil || !strings.Contains(err.Error(), file) || !strings.Contains(err.Error(), "mode 0640") {
				t.Fatalf("got %v", err)
			}
			if strings.Contains(err.Error(), "pw") && f == "alice.password" || strings.Contains(err.Error(), "abcdef") {
				t.Fatalf("secret in error: %v", err)
			}
		})
	}
}

// check-config on an MCP file without accounts says what is missing, not
// that [component] is.
func TestMCPCheckNoAccount(t *testing.T) {
	_, err := config.Check(mcpDir(t, "[mcp]\nqueue_max = 5\n"))
	if err == nil || !strings.Contains(err.Error(), "mcp.account: required") || strings.Contains(err.Error(), "component") {
		t.Fatalf("got %v", err)
	}
}

// A gateway configuration may carry [mcp] too; its accounts are checked.
func TestMCPInGatewayConfig(t *testing.T) {
	p := mcpDir(t, minimal+strings.Replace(mcpOnly, `"alice.password"`, `"nope"`, 1))
	if _, err := config.Load(p); err == nil || !strings.Contains(err.Error(), "mcp.account[0].password_file") {
		t.Fatalf("got %v", err)
	}
	desc, err := config.Check(mcpDir(t, minimal+mcpOnly))
	if err != nil || !strings.Contains(desc, "domain=agents.example") || !strings.Contains(desc, "mcp accounts=alice@example.org") {
		t.Fatalf("check: %q %v", desc, err)
	}
}

// A token needs 128 bits: 22 base64url characters or 32 hex digits; a
// shorter one is an error naming the file, never showing the token.
func TestMCPTokenStrength(t *testing.T) {
	for token, ok := range map[string]bool{
		"abcdefghijklmnop":                     false, // 16 characters
		"abcdefghijklmnopqrstu":                false, // 21
		"abcdefghijklmnopqrstuv":               true,  // 22 base64url
		"0123456789abcdef0123456789abcde":      false, // 31 hex
		"0123456789abcdef0123456789abcdef":     true,  // 32 hex
		"0123456789abcdef0123456789":           false, // 26 hex digits only: 104 bits
		"0123456789abcdef012345678-":           true,  // not hex: base64url
		"Zm9vYmFyYmF6cXV4cXV1eGNvcmdlZ3JhdWx0": true,
	} {
		p := mcpDir(t, mcpOnly)
		file := filepath.Join(filepath.Dir(p), "claude.token")
		if err := os.WriteFile(file, []byte(token+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := config.LoadMCP(p)
		if ok != (err == nil) {
			t.Errorf("%d-character token %s: %v", len(token), map[bool]string{true: "refused", false: "accepted"}[ok], err)
		}
		if err != nil && (!strings.Contains(err.Error(), "mcp.token[0].file") || !strings.Contains(err.Error(), file) || strings.Contains(err.Error(), token)) {
			t.Errorf("error %q: want the key and file, never the token", err)
		}
	}
}

// The keys of issue 22: defaults, values, and errors naming the key.
func TestMCPHardeningKeys(t *testing.T) {
	c, err := config.LoadMCP(mcpDir(t, mcpOnly))
	if err != nil {
		t.Fatal(err)
	}
	m := c.MCP
	if m.Accounts[0].AcceptFrom != config.AcceptSubscribed || m.QueueMaxBytes != config.DefaultMCPQueueMaxBytes ||
		m.SenderRateLimit != 1 || m.SenderRateBurst != 20 || m.MaxSessionsPerToken != 16 || len(m.AllowedOrigins) != 0 {
		t.Errorf("defaults: %+v %+v", m, m.Accounts[0])
	}
	set := strings.Replace(mcpOnly, "queue_max = 10", "queue_max = 10\nqueue_max_bytes = 2097152\nsender_rate_limit = 0.5\nsender_rate_burst = 3\nmax_sessions_per_token = 2\nallowed_origins = [\"https://App.example.org\", \"http://localhost:3000\"]", 1)
	set = strings.Replace(set, `server = "127.0.0.1:5222"`, "server = \"127.0.0.1:5222\"\naccept_from = \"roster\"", 1)
	c, err = config.LoadMCP(mcpDir(t, set))
	if err != nil {
		t.Fatal(err)
	}
	m = c.MCP
	if m.Accounts[0].AcceptFrom != "roster" || m.QueueMaxBytes != 2<<20 || m.SenderRateLimit != 0.5 || m.SenderRateBurst != 3 || m.MaxSessionsPerToken != 2 ||
		strings.Join(m.AllowedOrigins, " ") != "https://app.example.org http://localhost:3000" {
		t.Errorf("set: %+v %+v", m, m.Accounts[0])
	}
	for _, c := range []struct{ from, to, want string }{
		{`server = "127.0.0.1:5222"`, "server = \"127.0.0.1:5222\"\naccept_from = \"friends\"", "mcp.account[0].accept_from"},
		{"queue_max = 10", "queue_max = 10\nqueue_max_bytes = 1000", "mcp.queue_max_bytes"},
		{"queue_max = 10", "queue_max = 10\nsender_rate_limit = -1.0", "mcp.sender_rate_limit"},
		{"queue_max = 10", "queue_max = 10\nsender_rate_burst = 0", "mcp.sender_rate_burst"},
		{"queue_max = 10", "queue_max = 10\nmax_sessions_per_token = 0", "mcp.max_sessions_per_token"},
		{"queue_max = 10", "queue_max = 10\nallowed_origins = [\"https://ok.example\", \"https://app.example.org/path\"]", "mcp.allowed_origins[1]"},
		{"queue_max = 10", "queue_max = 10\nallowed_origins = [\"app.example.org\"]", "mcp.allowed_origins[0]"},
	} {
		_, err := config.LoadMCP(mcpDir(t, strings.Replace(mcpOnly, c.from, c.to, 1)))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v", c.to, err)
		}
	}
}
