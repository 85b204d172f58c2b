package app_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"agentgw/app"
)

// TestRunMCPLogFormat: `agentgw mcp` logs through the logger [log] sets
// up, so log.format = "json" gives JSON lines, as it does for serve.
func TestRunMCPLogFormat(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "alice.password"), []byte("pw\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "mcp.toml")
	body := `
[log]
format = "json"

[[mcp.account]]
jid = "alice@example.org"
password_file = "alice.password"
server = "127.0.0.1:1"
`
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stdout, stderr strings.Builder
	// Over stdio, an empty stdin ends the session at once.
	if err := app.RunMCP(ctx, app.MCPCommand{Path: p}, strings.NewReader(""), &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	var saw bool
	for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("a log line is not JSON: %q", line)
		}
		if rec["msg"] == "mcp stdio serving" {
			saw = true
		}
	}
	if !saw {
		t.Errorf("no \"mcp stdio serving\" line in %q", stderr.String())
	}
}
