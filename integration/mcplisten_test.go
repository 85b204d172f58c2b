package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"agentgw/internal/harness"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCPAgentsListenCurrent: a go-sdk client at 2026-07-28 hears a tool
// list change on subscriptions/listen, over `agentgw mcp -http` and
// stdio: a new version of a projected agent becomes active.
func TestMCPAgentsListenCurrent(t *testing.T) {
	need(t)
	withTaskEndpoints(t)
	config := func(extra string) string {
		dir := t.TempDir()
		writePasswordFile(t, dir)
		if err := os.WriteFile(filepath.Join(dir, "full.token"), []byte(mcpFullToken+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		body := fmt.Sprintf(`
[log]
level = "debug"

[mcp]
agent_poll_seconds = 1

[[mcp.account]]
jid = "alice@%s"
password_file = "account.password"
server = %q

[[mcp.agent]]
jid = %q
tools = ["ledger.append"]
prefix = ""
%s`, harness.HomeDomain, suite.env.ProsodyC2S, ledgerEndpoint, extra)
		path := filepath.Join(dir, "mcp.toml")
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	changes := make(chan string, 16)
	handler := func(where string) *mcp.ClientOptions {
		return &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changes <- where:
			default:
			}
		}}
	}
	// Over HTTP.
	httpConfig := config(`
[[mcp.token]]
file = "full.token"
account = "alice@` + harness.HomeDomain + `"
scopes = ["*"]
`)
	acct := &mcpAccount{config: httpConfig}
	url, _, _ := startMCPHTTP(t, acct)
	hcs := connectCurrent(t, url, mcpFullToken, handler("http"))
	// Over stdio.
	stderr := &syncBuf{}
	cmd := exec.Command(suite.bin, "mcp", "-config", config(""))
	cmd.Stderr = stderr
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	scs, err := mcp.NewClient(&mcp.Implementation{Name: "integration-listen", Version: "1"}, handler("stdio")).
		Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr)
	}
	defer scs.Close()
	expectCurrent(t, scs)
	waitMCPLog(t, stderr, "xmpp stream up", 1)
	// With prefix = "" the tool keeps the agent's name.
	for _, cs := range []*mcp.ClientSession{hcs, scs} {
		waitProjected(t, cs, ledgerTool)
	}
	// Drain what the first projections sent.
	time.Sleep(2 * time.Second)
	for len(changes) > 0 {
		<-changes
	}

	raw, err := os.ReadFile(ledgerManifest)
	if err != nil {
		t.Fatal(err)
	}
	v := strings.Replace(strings.Replace(string(raw), `"version": "1.0.0"`, `"version": "1.0.2"`, 1),
		"Waits delay_ms milliseconds", "Version 1.0.2: waits delay_ms milliseconds", 1)
	file := filepath.Join(t.TempDir(), "ledger-v102.json")
	if err := os.WriteFile(file, []byte(v), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := agentgw(ctx, "endpoint", "register", "-config", suite.config, "-activate", file); err != nil {
		t.Fatalf("register 1.0.2: %v %s", err, out)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		agentgw(ctx, "endpoint", "activate", "-config", suite.config, ledgerEndpoint, "1.0.0")
	})
	heard := map[string]bool{}
	deadline := time.After(30 * time.Second)
	for !heard["http"] || !heard["stdio"] {
		select {
		case w := <-changes:
			heard[w] = true
		case <-deadline:
			t.Fatalf("tools/list_changed heard on %v only", heard)
		}
	}
}
