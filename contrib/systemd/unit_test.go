// Package systemd holds agentgw's systemd unit; its test checks the unit
// with systemd-analyze.
package systemd_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestUnitVerifies runs `systemd-analyze verify` on agentgw.service. The
// only change to the file is ExecStart's program, pointed at an executable
// that exists here (this test binary), since verify checks that it does;
// the arguments stay. The unit must also keep the settings the deployment
// guide relies on.
func TestUnitVerifies(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		if os.Getenv("AGENTGW_REQUIRE_SERVERS") != "" {
			t.Fatal("systemd-analyze is not installed (scripts/test installs systemd)")
		}
		t.Skip("systemd-analyze is not installed")
	}
	raw, err := os.ReadFile("agentgw.service")
	if err != nil {
		t.Fatal(err)
	}
	unit := string(raw)
	for _, want := range []string{
		"\nExecStart=/usr/bin/agentgw serve -config /var/lib/agentgw/agentgw.toml\n",
		"\nExecReload=/bin/sh -c 'kill -HUP \"$$MAINPID\"'\n",
		"\nStateDirectory=agentgw\n",
		"\nUser=agentgw\n",
		"\nProtectSystem=strict\n",
		"\nNoNewPrivileges=yes\n",
		"\nPrivateTmp=yes\n",
		"\nRestrictAddressFamilies=AF_UNIX AF_INET AF_INET6\n",
		"\nSystemCallFilter=landlock_create_ruleset landlock_add_rule landlock_restrict_self\n",
	} {
		if !strings.Contains(unit, want) {
			t.Errorf("agentgw.service lacks %q", strings.TrimSpace(want))
		}
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	unit = strings.Replace(unit, "ExecStart=/usr/bin/agentgw ", "ExecStart="+self+" ", 1)
	path := filepath.Join(t.TempDir(), "agentgw.service")
	if err := os.WriteFile(path, []byte(unit), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", path).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}
