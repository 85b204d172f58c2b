package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"agentgw/config"
)

// TestSandboxKeys: the [runtime] table and the sandbox_* keys of an
// [[endpoint]] decode, take their defaults, and errors name the key.
func TestSandboxKeys(t *testing.T) {
	dir := t.TempDir()
	tool := filepath.Join(dir, "tool.sh")
	if err := os.WriteFile(tool, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	c, err := config.Load(write(t, minimal+`
[[endpoint]]
jid = "a@agents.example"
runtime = "exec"
command = ["`+tool+`"]

[[endpoint]]
jid = "b@agents.example"
runtime = "exec"
command = ["`+tool+`"]
sandbox_read = ["/srv/models", "rel"]
sandbox_write = ["/srv/out"]
sandbox_network = false
sandbox_cpu_seconds = -1
sandbox_memory_mb = 512
sandbox_open_files = 64
sandbox_processes = 32
`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Sandbox != config.SandboxBestEffort {
		t.Errorf("runtime.sandbox = %q, want the default %q", c.Sandbox, config.SandboxBestEffort)
	}
	a, b := c.Endpoints[0].Sandbox, c.Endpoints[1].Sandbox
	if !a.Network || a.CPUSeconds != config.DefaultSandboxCPUSeconds || !a.CPUDefault || a.MemoryBytes != config.DefaultSandboxMemoryMB<<20 ||
		a.OpenFiles != config.DefaultSandboxOpenFiles || a.Processes != config.DefaultSandboxProcesses {
		t.Errorf("defaults: %+v", a)
	}
	if b.Network || b.CPUSeconds != 0 || b.MemoryBytes != 512<<20 || b.OpenFiles != 64 || b.Processes != 32 ||
		len(b.Read) != 2 || !filepath.IsAbs(b.Read[1]) || b.Write[0] != "/srv/out" {
		t.Errorf("set: %+v", b)
	}

	for _, c := range []struct{ body, key string }{
		{"[runtime]\nsandbox = \"maybe\"\n", "runtime.sandbox"},
		{"[[endpoint]]\njid = \"d@agents.example\"\nruntime = \"builtin\"\nsandbox_read = [\"/x\"]\n", "endpoint[0].sandbox_read"},
		{"[[endpoint]]\njid = \"d@agents.example\"\nruntime = \"exec\"\ncommand = [\"" + tool + "\"]\nsandbox_memory_mb = -5\n", "endpoint[0].sandbox_memory_mb"},
		{"[[endpoint]]\njid = \"d@agents.example\"\nruntime = \"exec\"\ncommand = [\"" + tool + "\"]\nsandbox_reed = [\"/x\"]\n", "sandbox_reed"},
	} {
		_, err := config.Load(write(t, minimal+"\n"+c.body))
		if err == nil || !strings.Contains(err.Error(), c.key) {
			t.Errorf("%q: %v, want an error naming %s", c.body, err, c.key)
		}
	}
}
