package app_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"agentgw/app"
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
