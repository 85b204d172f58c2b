package harness

import (
	"context"
	"os"
	"os/exec"
	"testing"
)

// StartT starts an environment for a test and stops it in t.Cleanup (which
// also runs when the test panics or calls t.FailNow). The servers live in
// t.TempDir() unless opts.Dir is set. If the test failed, the tail of the
// server logs is logged before stopping. It skips the test when the server
// packages are not installed and fails it when the environment cannot start.
func StartT(t testing.TB, opts Options) *Env {
	t.Helper()
	skip := t.Skipf
	if os.Getenv("AGENTGW_REQUIRE_SERVERS") != "" {
		// CI installs the servers: their absence is a failure there.
		skip = t.Fatalf
	}
	if _, err := exec.LookPath("prosody"); err != nil {
		skip("prosody not installed")
	}
	if opts.Ejabberd {
		if _, _, err := findEjabberd(); err != nil {
			skip("ejabberd not usable: %v", err)
		}
	}
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*startWait)
	defer cancel()
	e, err := Start(ctx, opts)
	if err != nil {
		t.Fatalf("harness: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("harness logs:\n%s", e.LogTail(30))
		}
		if err := e.Stop(); err != nil {
			t.Errorf("harness stop: %v", err)
		}
	})
	return e
}
