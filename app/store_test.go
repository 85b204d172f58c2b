package app_test

import (
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"agentgw/app"
	"agentgw/config"
)

// TestUnreachablePostgres: a PostgreSQL store that cannot be reached at
// start is an error that names database.url, with the server and without
// the password.
func TestUnreachablePostgres(t *testing.T) {
	// A port nothing listens on: one taken and given back.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	dir := t.TempDir()
	path := filepath.Join(dir, "gw.toml")
	body := `[component]
domain = "agents.example"
server = "127.0.0.1:5347"
secret = "s3cret-value"
[database]
url = "postgres://agentgw:hunter2@` + addr + `/agentgw?sslmode=disable&connect_timeout=5"
`
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = app.OpenAdmin(context.Background(), path, nil)
	if err == nil {
		t.Fatal("opened a store nobody serves")
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "database.url: ") || !strings.Contains(msg, addr) || strings.Contains(msg, "hunter2") {
		t.Errorf("error %q: want database.url, %s and no password", msg, addr)
	}
}

// TestUnreachableMCPPostgres: for `agentgw mcp`, a PostgreSQL store that
// cannot be reached at start is an error that names mcp.database, with the
// server and without the password.
func TestUnreachableMCPPostgres(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cfg := &config.MCPServer{Database: "postgres://agentgw:hunter2@" + addr + "/agentgw?sslmode=disable&connect_timeout=5"}
	_, err = app.StartMCP(context.Background(), cfg, nil, false, slog.New(slog.DiscardHandler))
	if err == nil {
		t.Fatal("opened a store nobody serves")
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "mcp.database: ") || !strings.Contains(msg, addr) || strings.Contains(msg, "hunter2") {
		t.Errorf("error %q: want mcp.database, %s and no password", msg, addr)
	}
}
