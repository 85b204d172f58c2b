package config_test

import (
	"path/filepath"
	"strings"
	"testing"

	"agentgw/config"
)

// TestDatabaseURL: database.url instead of database.path, exactly one of
// the two, and no password in an error or in what is logged.
func TestDatabaseURL(t *testing.T) {
	c, err := config.Load(write(t, minimal+"[database]\nurl = \"postgres://gw:hunter2@127.0.0.1:5432/agentgw?sslmode=disable\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.DatabasePath != "" || c.Database.Store() != c.DatabaseURL || !strings.HasPrefix(c.DatabaseURL, "postgres://") {
		t.Errorf("path %q, url %q, store %q", c.DatabasePath, c.DatabaseURL, c.Database.Store())
	}
	if got := c.Database.Redacted(); strings.Contains(got, "hunter2") || !strings.Contains(got, "127.0.0.1:5432") {
		t.Errorf("redacted: %s", got)
	}
	if c.StateDir != filepath.Dir(c.Path) {
		t.Errorf("state dir %q, want the config's folder %q", c.StateDir, filepath.Dir(c.Path))
	}

	c, err = config.Load(write(t, minimal+"[database]\nurl = \"postgresql:///agentgw?host=/run/pg&password=hunter2\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Database.Redacted(); strings.Contains(got, "hunter2") {
		t.Errorf("redacted: %s", got)
	}

	for _, tc := range []struct{ name, table, want string }{
		{"both", "path = \"x.db\"\nurl = \"postgres://gw:hunter2@db.example/agentgw\"", "database.url: set database.path or database.url, not both"},
		{"scheme", "url = \"mysql://gw:hunter2@db.example/agentgw\"", "database.url: want a postgres:// or postgresql:// URL"},
		{"no host", "url = \"postgres://gw:hunter2@/agentgw\"", "database.url: no host"},
		{"not a URL", "url = \"postgres://gw:hunter2@db example:x/%zz\"", "database.url: not a URL"},
	} {
		_, err := config.Load(write(t, minimal+"[database]\n"+tc.table+"\n"))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: the password is in the error: %v", tc.name, err)
		}
	}
}

// TestDatabasePathDefault: with neither key, the file beside the config.
func TestDatabasePathDefault(t *testing.T) {
	c, err := config.Load(write(t, minimal+"[database]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(filepath.Dir(c.Path), "agentgw.db"); c.DatabasePath != want || c.StateDir != filepath.Dir(want) {
		t.Errorf("path %q, state %q; want %q", c.DatabasePath, c.StateDir, want)
	}
}
