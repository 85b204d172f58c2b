package app_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"agentgw/app"
	"agentgw/mcpface"
)

// TestCopyMCPStore: `agentgw store copy -mcp` moves the state an old
// `agentgw mcp` left in its own file (testdata/upgrade/mcp-v2.db: six
// queued messages, three drop counts and three MCP tasks) into another
// store, where `agentgw mcp` finds it.
func TestCopyMCPStore(t *testing.T) {
	dir := t.TempDir()
	raw, err := os.ReadFile("../testdata/upgrade/mcp-v2.db")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "mcp.db"), raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a.password"), []byte("pw\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "mcp.toml")
	body := `[mcp]
database = "mcp.db"

[[mcp.account]]
jid = "alice@example.com"
password_file = "a.password"
server = "127.0.0.1:5222"
`
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dir, "target.db")
	var out bytes.Buffer
	ctx := context.Background()
	if err := app.CopyMCPStore(ctx, cfg, target, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "12 rows") {
		t.Errorf("output:\n%s", out.String())
	}
	s, err := mcpface.OpenStore(ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Now = func() time.Time { return time.UnixMilli(1_800_000_000_000) }
	if l, err := s.List(ctx, "alice@example.com"); err != nil || len(l) != 2 || l[0].ID != "m-1" || l[0].Message.Body != "first" {
		t.Errorf("alice's messages on the target: %+v, %v", l, err)
	}
	if u, err := s.UnsettledTasks(ctx, "alice@example.com"); err != nil || len(u) != 1 || u[0].ID != "mcptask-working" {
		t.Errorf("alice's unsettled tasks on the target: %+v, %v", u, err)
	}
	if err := app.CopyMCPStore(ctx, cfg, target, &out); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("a second copy: %v", err)
	}
}
