package config_test

import (
	"os"
	"path/filepath"
	"reflect"
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
command = ["/bin/true"]`), `endpoint[0].command: only for runtime "exec" or "mcp"`},
		{"mcp without server", ep(`jid = "m@agents.example"
runtime = "mcp"`), `endpoint[0].command: required for runtime "mcp" (a stdio server), or set url`},
		{"unknown runtime", ep(`jid = "m@agents.example"
runtime = "lambda"`), "endpoint[0].runtime: must be one of builtin, exec, mcp"},
		{"mcp key on exec", ep(`jid = "r@agents.example"
runtime = "exec"
command = ["/bin/true"]
cold_start_supported = true`), `endpoint[0].cold_start_supported: only for runtime "mcp"`},
		{"exec key on mcp", ep(`jid = "m@agents.example"
runtime = "mcp"
command = ["/bin/true"]
grace = "1s"`), `endpoint[0].grace: only for runtime "exec"`},
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

func TestMCPEndpoint(t *testing.T) {
	dir := t.TempDir()
	token := filepath.Join(dir, "token")
	if err := os.WriteFile(token, []byte("Bearer s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	body := minimal + `
[[endpoint]]
jid = "everything@agents.example"
runtime = "mcp"
command = ["sh", "-c", "exec true"]
dir = "."
env = ["LOG_LEVEL=info"]
env_files = { API_KEY = "token" }
env_pass = ["HTTPS_PROXY"]
cold_start_supported = true
idle_timeout = "never"
name = "everything"
title = "Everything"
description = "Line one.\nLine two."
default_timeout = "30s"
max_timeout = "10m"

[[endpoint]]
jid = "remote@agents.example"
runtime = "mcp"
url = "https://mcp.example.org/mcp"
header_files = { Authorization = "` + token + `" }
`
	path := filepath.Join(dir, "agentgw.toml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	e := c.Endpoints[0]
	want := config.MCPEndpoint{
		EnvFiles: map[string]string{"API_KEY": token}, EnvPass: []string{"HTTPS_PROXY"},
		ColdStart: true, IdleTimeout: -1, Name: "everything", Title: "Everything", Description: "Line one.\nLine two.",
		DefaultTimeout: 30 * time.Second, MaxTimeout: 10 * time.Minute,
	}
	if e.Runtime != config.RuntimeMCP || strings.Join(e.Command, " ") != "sh -c exec true" || e.Dir != dir ||
		strings.Join(e.Env, " ") != "LOG_LEVEL=info" || !reflect.DeepEqual(*e.MCP, want) {
		t.Errorf("endpoint = %+v, mcp %+v", e, e.MCP)
	}
	e = c.Endpoints[1]
	want = config.MCPEndpoint{URL: "https://mcp.example.org/mcp", HeaderFiles: map[string]string{"Authorization": token}}
	if e.Command != nil || !reflect.DeepEqual(*e.MCP, want) {
		t.Errorf("endpoint = %+v, mcp %+v", e, e.MCP)
	}
}

func TestMCPEndpointErrorsNameKeys(t *testing.T) {
	const secret = "hunter2-password"
	ep := func(s string) string {
		return minimal + "\n[[endpoint]]\njid = \"m@agents.example\"\nruntime = \"mcp\"\n" + s + "\n"
	}
	for _, tc := range []struct{ name, body, want string }{
		{"both", ep(`command = ["/bin/true"]
url = "http://127.0.0.1:1/mcp"`), "endpoint[0].url: set only one of command and url"},
		{"empty command", ep(`command = []`), "endpoint[0].command: must name a program"},
		{"not in PATH", ep(`command = ["no-such-mcp-server"]`), "endpoint[0].command[0]: no-such-mcp-server is not in the server's PATH (/usr/local/bin:/usr/bin:/bin)"},
		{"relative path", ep(`command = ["./server"]`), "endpoint[0].command[0]: cannot read"},
		{"url scheme", ep(`url = "ftp://example.org/"`), "endpoint[0].url: must be an http or https URL"},
		{"url userinfo", ep(`url = "https://user:` + secret + `@example.org/mcp"`), "endpoint[0].url: must not hold userinfo"},
		{"env name", ep(`command = ["/bin/true"]
env = ["1X=y"]`), "endpoint[0].env[0]: must be KEY=value"},
		{"env file", ep(`command = ["/bin/true"]
env_files = { KEY = "/nonexistent/key" }`), "endpoint[0].env_files.KEY: cannot read"},
		{"env on url", ep(`url = "http://127.0.0.1:1/mcp"
env_pass = ["HOME"]`), "endpoint[0].env_pass: only for a stdio server (command)"},
		{"headers on stdio", ep(`command = ["/bin/true"]
header_files = { Authorization = "/etc/hostname" }`), "endpoint[0].header_files: only for a Streamable HTTP server (url)"},
		{"reserved header", ep(`url = "http://127.0.0.1:1/mcp"
header_files = { Content-Type = "/etc/hostname" }`), "endpoint[0].header_files.Content-Type: is set by the MCP transport"},
		{"idle without cold start", ep(`command = ["/bin/true"]
idle_timeout = "1m"`), "endpoint[0].idle_timeout: applies only with cold_start_supported = true and keep_warm = false"},
		{"bad idle", ep(`command = ["/bin/true"]
cold_start_supported = true
idle_timeout = "0s"`), "endpoint[0].idle_timeout: must be a positive duration"},
		{"timeouts", ep(`command = ["/bin/true"]
default_timeout = "2m"
max_timeout = "1m"`), "endpoint[0].default_timeout: must not exceed max_timeout"},
		{"fractional timeout", ep(`command = ["/bin/true"]
max_timeout = "1.5s"`), "endpoint[0].max_timeout: must be a whole number of seconds"},
		{"long name", ep(`command = ["/bin/true"]
name = "` + strings.Repeat("n", 129) + `"`), "endpoint[0].name: must be at most 128 characters"},
		{"control in title", ep(`command = ["/bin/true"]
title = "a\u0007b"`), "endpoint[0].title: must not hold control characters"},
		{"unknown key", ep(`command = ["/bin/true"]
cold_start = true`), "endpoint.cold_start: unknown key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Load(write(t, tc.body))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
			if err != nil && strings.Contains(err.Error(), secret) {
				t.Errorf("error reveals the URL's password: %v", err)
			}
		})
	}
}
