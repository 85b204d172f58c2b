package app_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"agentgw/app"
	"agentgw/config"
	"agentgw/db"
	"agentgw/internal/privfile"
	"agentgw/runtime"
	"agentgw/runtime/runtimetest"
	"agentgw/runtime/sandbox"
)

// TestUpgradeKeepsWorkDirs: an install of an earlier version kept a tool's
// files in its work directory under the old name (state/run/tool_agents.example).
// After the upgrade the directory has its new name, the files are all
// there, and the tool, now sandboxed, reads them; the configuration and
// the database beside them stay out of its reach.
func TestUpgradeKeepsWorkDirs(t *testing.T) {
	if sandbox.ABI() < sandbox.MinRequiredABI {
		t.Skipf("Landlock ABI %d", sandbox.ABI())
	}
	ctx := context.Background()
	state := t.TempDir()
	const jid = "tool@agents.example"
	old := filepath.Join(state, "run", privfile.LegacyWorkDirName(jid))
	if err := os.MkdirAll(filepath.Join(old, "cache"), 0o700); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"state.json": `{"n":41}`, "cache/blob": "kept"}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(old, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	conf := filepath.Join(state, "agentgw.toml")
	if err := os.WriteFile(conf, []byte("# the gateway's\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	store, err := db.Open(ctx, filepath.Join(state, "agentgw.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	tool := filepath.Join(t.TempDir(), "tool.sh")
	// It answers with what it read of its own files and of the config.
	body := `#!/bin/sh
read -r line
mine=$(cat state.json cache/blob 2>&1 | tr -d '\n"')
conf=denied; cat ` + conf + ` >/dev/null 2>&1 && conf=reached
printf '{"type":"result","result":{"structuredContent":{"mine":"%s","config":"%s"},"content":[]}}\n' "$mine" "$conf"
`
	if err := os.WriteFile(tool, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	plan := &app.SandboxPlan{ABI: sandbox.ABI(), Helper: os.Args[0], Protected: sandbox.Resolve(state)}
	ep := config.Endpoint{JID: jid, Runtime: config.RuntimeExec, Command: []string{tool},
		Sandbox: config.EndpointSandbox{Network: true, OpenFiles: 256}}
	h, err := app.Runtimes(ctx, store, []config.Endpoint{ep}, app.RuntimeOptions{StateDir: state, Sandbox: plan})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()

	if _, err := os.Lstat(old); !os.IsNotExist(err) {
		t.Errorf("the old work directory is still there: %v", err)
	}
	moved := filepath.Join(state, "run", privfile.WorkDirName(jid))
	for name, content := range files {
		if got, err := os.ReadFile(filepath.Join(moved, name)); err != nil || string(got) != content {
			t.Errorf("%s after the upgrade: %q, %v", name, got, err)
		}
	}
	rec := runtimetest.NewRecorder()
	e, err := h.Runtimes[jid].Start(ctx, runtime.Call{Handle: "task-1", Tool: runtime.ToolMeta{Name: "t", APIVersion: "1.0.0"},
		Arguments: json.RawMessage(`{}`), Deadline: time.Now().Add(30 * time.Second)}, rec)
	if err != nil {
		t.Fatal(err)
	}
	rep := rec.Next(t, 30*time.Second)
	runtimetest.Wait(t, e, 30*time.Second)
	var got struct{ StructuredContent struct{ Mine, Config string } }
	if rep.Kind != runtimetest.KindComplete || json.Unmarshal(rep.Result.Raw, &got) != nil {
		t.Fatalf("report %+v; diagnostics %+v", rep, e.Diagnostics())
	}
	if got.StructuredContent.Mine != "{n:41}kept" || got.StructuredContent.Config != "denied" {
		t.Errorf("the sandboxed tool read %+v, want its own files and not the config", got.StructuredContent)
	}
	if strings.Contains(e.Diagnostics().Stderr, "sandbox-exec") {
		t.Errorf("helper: %s", e.Diagnostics().Stderr)
	}
}

// TestPlanSandbox: mode required refuses a kernel without Landlock ABI 6,
// best-effort takes any, off plans nothing, and a sandbox path inside the
// gateway's own directory is an error naming the key.
func TestPlanSandbox(t *testing.T) {
	dir := t.TempDir()
	cfg := &config.Config{Path: filepath.Join(dir, "agentgw.toml"), Database: config.Database{DatabasePath: filepath.Join(dir, "agentgw.db")}, Sandbox: config.SandboxRequired}
	if _, err := app.PlanSandbox(cfg, 5); err == nil || !strings.Contains(err.Error(), "runtime.sandbox") {
		t.Errorf("required on ABI 5: %v", err)
	}
	if p, err := app.PlanSandbox(cfg, 7); err != nil || p == nil || p.ABI != 7 {
		t.Errorf("required on ABI 7: %+v, %v", p, err)
	}
	cfg.Sandbox = config.SandboxBestEffort
	if p, err := app.PlanSandbox(cfg, 0); err != nil || p == nil || p.ABI != 0 {
		t.Errorf("best-effort without Landlock: %+v, %v", p, err)
	}
	cfg.Sandbox = config.SandboxOff
	if p, err := app.PlanSandbox(cfg, 7); err != nil || p != nil {
		t.Errorf("off: %+v, %v", p, err)
	}
	cfg.Sandbox = config.SandboxBestEffort
	cfg.Endpoints = []config.Endpoint{{JID: "a@x", Sandbox: config.EndpointSandbox{Read: []string{"/usr/share", filepath.Join(dir, "sub")}}}}
	if _, err := app.PlanSandbox(cfg, 7); err == nil || !strings.Contains(err.Error(), "endpoint[0].sandbox_read[1]") {
		t.Errorf("sandbox_read inside the gateway's directory: %v", err)
	}
	cfg.Endpoints = []config.Endpoint{{JID: "a@x", Dir: dir}}
	if _, err := app.PlanSandbox(cfg, 7); err == nil || !strings.Contains(err.Error(), "endpoint[0].dir") {
		t.Errorf("dir = the gateway's directory: %v", err)
	}
}
