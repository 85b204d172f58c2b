package integration

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"agentgw/internal/pgtest"
)

// PostgreSQL unreachable at start: `agentgw serve` on a server that refuses
// the connection, or one that accepts it and never answers (its postmaster
// stopped with SIGSTOP), exits at once or within the connect timeout
// (db/internal/pg.ConnectTimeout, 10 s) with an error that names
// database.url and the server, and never the password; `agentgw mcp` does
// the same for mcp.database.
func TestPostgresUnreachableAtStart(t *testing.T) {
	onePass(t)
	need(t)
	if testing.Short() {
		t.Skip("skipped with -short")
	}
	const secret = "pw-never-shown-7731"
	refused := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	// A database on the real server, made before it is stopped, with a
	// password in its URL.
	u, err := url.Parse(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(u.User.Username(), secret)
	stopped, stoppedURL := u.Host, u.String()
	pgtest.Freeze(t)

	for _, c := range []struct{ name, addr, url string }{
		{"refused", refused, "postgres://agentgw:" + secret + "@" + refused + "/agentgw?sslmode=disable"},
		{"stopped", stopped, stoppedURL},
	} {
		t.Run("serve/"+c.name, func(t *testing.T) {
			dir := t.TempDir()
			config := filepath.Join(dir, "agentgw.toml")
			body := fmt.Sprintf("[component]\ndomain = %q\nserver = %q\nsecret = \"s3cret\"\n[database]\nurl = %q\n",
				"unreachable.example", suite.env.ComponentAddr, c.url)
			if err := os.WriteFile(config, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
			exitsNaming(t, "database.url: ", c.addr, secret, "serve", "-config", config)
		})
	}
	t.Run("mcp/stopped", func(t *testing.T) {
		a := newMCPAccountWith(t, "", "anyone", fmt.Sprintf("database = %q", stoppedURL))
		exitsNaming(t, "mcp.database: ", stopped, secret, "mcp", "-config", a.config)
	})
}

// exitsNaming runs the binary with args and fails t unless it exits with
// an error, within the connect timeout and some slack, whose output names
// key and addr and does not hold secret.
func exitsNaming(t *testing.T, key, addr, secret string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := time.Now()
	out, err := agentgw(ctx, args...)
	took := time.Since(start)
	if ctx.Err() != nil {
		t.Fatalf("still running after %v:\n%s", took, out)
	}
	if _, ok := err.(*exec.ExitError); !ok {
		t.Fatalf("exit: %v, want a failure:\n%s", err, out)
	}
	if took > 25*time.Second {
		t.Errorf("took %v, want about the connect timeout (10 s) at most", took)
	}
	if !strings.Contains(out, key) || !strings.Contains(out, addr) || strings.Contains(out, secret) {
		t.Errorf("output %q: want %s, %s and no password", out, key, addr)
	}
	t.Logf("%s: exited after %v: %s", strings.Join(args[:1], " "), took.Round(time.Millisecond), strings.TrimSpace(out))
}
