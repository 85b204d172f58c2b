package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"agentgw/config"
)

func TestExampleEndpointsAndTasks(t *testing.T) {
	c, err := config.Load("../config.example.toml")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Endpoints) != 1 || c.Endpoints[0].JID != "demo@agents.example.org" || c.Endpoints[0].Runtime != config.RuntimeBuiltin ||
		c.Endpoints[0].Command != nil {
		t.Errorf("endpoints = %+v", c.Endpoints)
	}
	want := config.TaskLimits{Retention: 24 * time.Hour, DefaultTimeout: time.Hour, MaxTimeout: 24 * time.Hour,
		MaxActive: config.DefaultMaxActiveTasks, PurgeInterval: time.Minute}
	if c.Tasks != want {
		t.Errorf("tasks = %+v, want %+v", c.Tasks, want)
	}
}

func TestExecEndpoint(t *testing.T) {
	dir := t.TempDir()
	tool := filepath.Join(dir, "tool.sh")
	if err := os.WriteFile(tool, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	body := minimal + `
[[endpoint]]
jid = "Report@agents.example"
runtime = "exec"
command = ["` + tool + `", "--flag"]
dir = "."
env = ["MODE=test"]
grace = "1s"
kill_grace = "500ms"
`
	c, err := config.Load(write(t, body))
	if err != nil {
		t.Fatal(err)
	}
	e := c.Endpoints[0]
	if e.JID != "report@agents.example" || e.Runtime != config.RuntimeExec || strings.Join(e.Command, " ") != tool+" --flag" ||
		!filepath.IsAbs(e.Dir) || e.Env[0] != "MODE=test" || e.Grace != time.Second || e.KillGrace != 500*time.Millisecond {
		t.Errorf("endpoint = %+v", e)
	}
}

func TestEndpointAndTaskErrorsNameKeys(t *testing.T) {
	notExec := filepath.Join(t.TempDir(), "data.txt")
	if err := os.WriteFile(notExec, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ep := func(s string) string { return minimal + "\n[[endpoint]]\n" + s + "\n" }
	for _, tc := range []struct{ name, body, want string }{
		{"exec without command", ep(`jid = "demo@agents.example"
runtime = "builtin"
[[endpoint]]
jid = "report@agents.example"
runtime = "exec"`), `endpoint[1].command: required for runtime "exec"`},
		{"relative command", ep(`jid = "r@agents.example"
runtime = "exec"
command = ["tool"]`), "endpoint[0].command[0]: must be an absolute path"},
		{"missing program", ep(`jid = "r@agents.example"
runtime = "exec"
command = ["/nonexistent/tool"]`), "endpoint[0].command[0]: cannot read"},
		{"not executable", ep(`jid = "r@agents.example"
runtime = "exec"
command = ["` + notExec + `"]`), "endpoint[0].command[0]: is not an executable file"},
		{"exec key on builtin", ep(`jid = "demo@agents.example"
runtime = "builtin"
command = ["/bin/true"]`), `endpoint[0].command: only for runtime "exec"`},
		{"mcp not yet", ep(`jid = "m@agents.example"
runtime = "mcp"`), `endpoint[0].runtime: "mcp" is not available in this version`},
		{"unknown runtime", ep(`jid = "m@agents.example"
runtime = "lambda"`), "endpoint[0].runtime: must be one of builtin, exec"},
		{"no runtime", ep(`jid = "m@agents.example"`), "endpoint[0].runtime: required"},
		{"no jid", ep(`runtime = "builtin"`), "endpoint[0].jid: required"},
		{"full jid", ep(`jid = "demo@agents.example/r"
runtime = "builtin"`), "endpoint[0].jid: must be a bare JID"},
		{"foreign jid", ep(`jid = "demo@other.example"
runtime = "builtin"`), "endpoint[0].jid: demo@other.example is not under component.domain"},
		{"duplicate", ep(`jid = "demo@agents.example"
runtime = "builtin"
[[endpoint]]
jid = "DEMO@agents.example"
runtime = "builtin"`), "endpoint[1].jid: demo@agents.example is already configured by endpoint[0]"},
		{"bad env", ep(`jid = "r@agents.example"
runtime = "exec"
command = ["/bin/true"]
env = ["NOVALUE"]`), "endpoint[0].env[0]: must be KEY=value"},
		{"bad grace", ep(`jid = "r@agents.example"
runtime = "exec"
command = ["/bin/true"]
grace = "soon"`), "endpoint[0].grace: must be a positive duration"},
		{"timeouts", minimal + "[tasks]\ndefault_timeout = \"2h\"\nmax_timeout = \"1h\"\n", "tasks.default_timeout: must not exceed tasks.max_timeout"},
		{"capacity", minimal + "[tasks]\nmax_active = 0\n", "tasks.max_active: must be a positive integer"},
		{"retention", minimal + "[tasks]\nretention = \"0s\"\n", "tasks.retention: must be a positive duration"},
		{"unknown task key", minimal + "[tasks]\nretain = \"1h\"\n", "tasks.retain: unknown key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Load(write(t, tc.body))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}
