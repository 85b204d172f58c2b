package integration

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"agentgw/internal/harness"
	"agentgw/internal/pgtest"
	"agentgw/internal/privfile"
)

// The endpoints of TestSandboxEscapes: testdata/sandbox/escape.py as an
// exec tool and as a stdio MCP server.
const (
	escapeExec     = "escape@" + harness.ComponentDomain
	escapeMCP      = "escape-mcp@" + harness.ComponentDomain
	escapeManifest = "../testdata/sandbox/escape.manifest.json"
)

// escapeAttempts are what the hostile tool tries (escape.py); each must
// be denied.
var escapeAttempts = []string{"read_secret", "read_config", "read_database", "read_token",
	"write_outside", "read_other_tool", "signal_gateway", "connect_tcp"}

// TestSandboxEscapes: an exec tool and a stdio MCP server, each run by the
// real gateway in its sandbox (runtime.sandbox best-effort, Landlock on
// this kernel), try to read the component secret, the configuration, the
// database and a token, to write into the gateway's directory, to list the
// other tool's work directory, to signal the gateway and, with
// sandbox_network = false, to connect to the XMPP server's component port.
// Each attempt fails and reaches the caller as the tool's error; the tool
// can still write its own directory, and the gateway goes on serving with
// its component stream up all along.
func TestSandboxEscapes(t *testing.T) {
	need(t)
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	tool, err := filepath.Abs("../testdata/sandbox/escape.py")
	if err != nil {
		t.Fatal(err)
	}
	token := filepath.Join(suite.dir, "chat.token")
	if err := os.WriteFile(token, []byte("token-the-tool-must-not-read\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(token) })
	host, port, err := net.SplitHostPort(suite.env.ComponentAddr)
	if err != nil {
		t.Fatal(err)
	}
	runDir := filepath.Join(suite.dir, "run")
	env := func(other string) string {
		return fmt.Sprintf(`["SECRET=%s", "CONFIG=%s", "DATABASE=%s", "TOKEN=%s", "STATE=%s", "OTHER=%s", "HOST=%s", "PORT=%s"]`,
			filepath.Join(suite.dir, "component.secret"), suite.config, filepath.Join(suite.dir, "agentgw.db"), token,
			suite.dir, filepath.Join(runDir, privfile.WorkDirName(other)), host, port)
	}
	extra := fmt.Sprintf(`
[[endpoint]]
jid = %[1]q
runtime = "exec"
command = [%[3]q]
env = %[4]s
sandbox_network = false

[[endpoint]]
jid = %[2]q
runtime = "mcp"
command = [%[3]q, "mcp"]
env = %[5]s
sandbox_network = false

[[endpoint]]
jid = %[7]q
runtime = "builtin"

[[policy.invoke]]
principals = [%[6]q]
endpoints = [%[1]q, %[2]q, %[7]q]
tools = ["*"]
`, escapeExec, escapeMCP, tool, env(escapeMCP), env(escapeExec), harness.HomeDomain, demoEndpoint)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if out, err := agentgw(ctx, "endpoint", "register", "-config", suite.config, "-activate", escapeManifest); err != nil {
		t.Fatalf("register escape: %v %s", err, out)
	}
	useConfig(t, extra, escapeExec, escapeMCP, demoEndpoint)
	if !strings.Contains(suite.gateway.logText(), "runtime children are sandboxed") {
		t.Fatalf("the gateway did not say its children are sandboxed:\n%s", tail(suite.gateway.logText(), 20))
	}
	ups := func() int {
		suite.gateway.mu.Lock()
		defer suite.gateway.mu.Unlock()
		return suite.gateway.ups
	}
	before := ups()
	w := newTaskWire(t)
	attempts := escapeAttempts
	if pgtest.OnPostgres() {
		// No database file: the store's URL, password and all, is in the
		// configuration, which read_config tries.
		attempts = slices.DeleteFunc(slices.Clone(attempts), func(a string) bool { return a == "read_database" })
	}
	for _, ep := range []string{escapeExec, escapeMCP} {
		for _, a := range attempts {
			out, errs, _ := runClient(t, w, "alice", harness.HomeDomain, "call", ep, "attempt", fmt.Sprintf(`{"attempt":%q}`, a))
			// The exec tool's error fails the task (its message has the
			// attempt's name redacted: an argument string); the MCP
			// server's is a call completed with isError.
			toolErr := "failed: internal-error: [redacted]: denied ("
			if ep == escapeMCP {
				toolErr = "the tool reports an error"
			}
			// ENOENT would be a test with nothing to deny.
			if !strings.Contains(out, ": denied (") || strings.Contains(out, "denied (ENOENT)") || !strings.Contains(out, toolErr) || strings.Contains(out, "reached") {
				t.Errorf("%s %s: want the tool's error, denied:\n%s%s", ep, a, out, errs)
				continue
			}
			t.Logf("%s %s: %s", ep, a, strings.TrimSpace(lastLine(out)))
		}
		// The tool runs and may write its own directory.
		out, errs, err := runClient(t, w, "alice", harness.HomeDomain, "call", ep, "attempt", `{"attempt":"write_own"}`)
		if err != nil || !strings.Contains(out, "write_own: reached") {
			t.Errorf("%s write_own: %v\n%s%s", ep, err, out, errs)
		}
	}
	if _, err := os.Stat(filepath.Join(suite.dir, "planted-by-tool")); err == nil {
		t.Error("a tool wrote into the gateway's directory")
	}
	if n := ups() - before; n != 0 {
		t.Errorf("the component stream went down %d times:\n%s", n, tail(suite.gateway.logText(), 20))
	}
	// The gateway goes on serving: the demo endpoint answers.
	out, errs, err := runClient(t, w, "alice", harness.HomeDomain, "call", demoEndpoint, "echo", `{"text":"still here"}`)
	if err != nil || !strings.Contains(out, "completed") {
		t.Errorf("demo echo after the attempts: %v\n%s%s", err, out, errs)
	}
}
