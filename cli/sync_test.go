package cli_test

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"agentgw/runtime/mcpclient/mcptest"
)

// mcpServeEnv makes the test binary the stdio MCP fixture server
// (runtime/mcpclient/mcptest); with the value "crashable" its tool list has two
// more tools.
const mcpServeEnv = "AGENTGW_CLI_MCPTEST_SERVE"

// TestMain doubles as the stdio MCP server of TestEndpointSync.
func TestMain(m *testing.M) {
	if v := os.Getenv(mcpServeEnv); v != "" {
		if err := mcptest.ServeStdio(context.Background(), mcptest.Options{Crashable: v == "crashable"}); err != nil {
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// mcpConfig configures the fixture server as the mcp endpoint
// tools@agents.example, plus a builtin endpoint.
func mcpConfig(t *testing.T, config, mode string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	body := fmt.Sprintf(`[component]
domain = "agents.example"
server = "127.0.0.1:5347"
secret = "x"

[[endpoint]]
jid = "tools@agents.example"
runtime = "mcp"
command = [%q]
env = ["%s=%s"]
cold_start_supported = true

[[endpoint]]
jid = "demo@agents.example"
runtime = "builtin"
`, exe, mcpServeEnv, mode)
	if err := os.WriteFile(config, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

var syncLine = regexp.MustCompile(`^(registered|imported|unchanged) tools@agents\.example (mcp-[0-9a-f]{12}) sha-256 (\S+)\n`)

func TestEndpointSync(t *testing.T) {
	_, cfg := setup(t)
	mcpConfig(t, cfg, "plain")
	code, out, errs := run(t, "endpoint", "sync", "-config", cfg, "-notes", "tools@agents.example")
	m := syncLine.FindStringSubmatch(out)
	if code != 0 || m == nil || m[1] != "registered" {
		t.Fatalf("sync: %d %q %q", code, out, errs)
	}
	version, hash := m[2], m[3]
	for _, want := range []string{
		"activated tools@agents.example " + version + "\n",
		"tools: 10, skipped: 2\n",
		"skipped untranslatable: inputSchema: draft-07 schema has ",
		"skipped lookbehind: ",
		"note echo: members not representable, left out: icons\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("sync output lacks %q:\n%s", want, out)
		}
	}
	// Identical tools: the same version and hash, nothing changes.
	code, out, _ = run(t, "endpoint", "sync", "-config", cfg, "tools@agents.example")
	if m := syncLine.FindStringSubmatch(out); code != 0 || m == nil || m[1] != "unchanged" || m[2] != version || m[3] != hash ||
		strings.Contains(out, "activated") || strings.Contains(out, "note ") {
		t.Errorf("second sync: %d %q", code, out)
	}
	_, out, _ = run(t, "endpoint", "status", "-config", cfg, "tools@agents.example")
	for _, want := range []string{
		"origin: mcp\n", "active: " + version + "\n", "last import: " + version + " at ",
		"skipped by the import of " + version + ":\n   lookbehind: inputSchema/properties/x/pattern: ",
		"\n   untranslatable: inputSchema: draft-07 schema has ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}

	// Another tool list: a new version, activated.
	mcpConfig(t, cfg, "crashable")
	code, out, errs = run(t, "endpoint", "sync", "-config", cfg, "tools@agents.example")
	if m := syncLine.FindStringSubmatch(out); code != 0 || m == nil || m[1] != "registered" || m[2] == version ||
		!strings.Contains(out, "tools: 12, skipped: 2\n") || !strings.Contains(out, "activated") {
		t.Errorf("changed sync: %d %q %q", code, out, errs)
	}

	// The operator deactivates; the first list again is a change, and is
	// activated again (a version already stored).
	run(t, "endpoint", "deactivate", "-config", cfg, "tools@agents.example")
	mcpConfig(t, cfg, "plain")
	code, out, _ = run(t, "endpoint", "sync", "-config", cfg, "tools@agents.example")
	if m := syncLine.FindStringSubmatch(out); code != 0 || m == nil || m[1] != "imported" || m[2] != version ||
		!strings.Contains(out, "activated tools@agents.example "+version) {
		t.Errorf("sync back to the first list: %d %q", code, out)
	}
	// Deactivated again, an unchanged list stays inactive.
	run(t, "endpoint", "deactivate", "-config", cfg, "tools@agents.example")
	code, out, _ = run(t, "endpoint", "sync", "-config", cfg, "tools@agents.example")
	if m := syncLine.FindStringSubmatch(out); code != 0 || m == nil || m[1] != "unchanged" ||
		!strings.Contains(out, "active: (inactive) (an unchanged tool list changes nothing)\n") {
		t.Errorf("unchanged sync of an inactive endpoint: %d %q", code, out)
	}

	for _, tc := range []struct{ jid, want string }{
		{"demo@agents.example", `demo@agents.example is not an [[endpoint]] with runtime "mcp" in ` + cfg},
		{"nobody@agents.example", `nobody@agents.example is not an [[endpoint]] with runtime "mcp"`},
	} {
		if code, _, errs := run(t, "endpoint", "sync", "-config", cfg, tc.jid); code != 1 || !strings.Contains(errs, tc.want) {
			t.Errorf("sync %s: %d %q", tc.jid, code, errs)
		}
	}
	if code, _, _ := run(t, "endpoint", "sync", "-config", cfg); code != 2 {
		t.Errorf("sync without JID: %d", code)
	}
}

// TestEndpointSyncUnreachable: a server that cannot be started fails the
// sync and stores nothing.
func TestEndpointSyncUnreachable(t *testing.T) {
	_, cfg := setup(t)
	body := `[component]
domain = "agents.example"
server = "127.0.0.1:5347"
secret = "x"

[[endpoint]]
jid = "gone@agents.example"
runtime = "mcp"
command = ["/bin/false"]
`
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errs := run(t, "endpoint", "sync", "-config", cfg, "gone@agents.example")
	if code != 1 || !strings.Contains(errs, "gone@agents.example: mcp: import: ") {
		t.Errorf("sync: %d %q", code, errs)
	}
	if code, _, errs := run(t, "endpoint", "status", "-config", cfg, "gone@agents.example"); code != 1 || !strings.Contains(errs, "no endpoint") {
		t.Errorf("status: %d %q", code, errs)
	}
}
