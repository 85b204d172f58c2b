package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"agentgw/c2s"
	"agentgw/internal/harness"
	"agentgw/task"
)

// No orphans (issue 12): kill -9 of the gateway during a slow exec tool
// and a slow MCP call, each of which has forked a grandchild; once the
// gateway has started again, no process of the old run survives.

// orphanEndpoint is an mcp endpoint whose stdio server is a shell script
// that forks a sleep, then runs server-everything.
const orphanEndpoint = "orphan-mcp@" + harness.ComponentDomain

// orphanScripts writes the two commands: the exec tool answers nothing
// and sleeps, with a sleep of its own in the background; the MCP server
// forks a sleep, then becomes server-everything. Each appends the PID of
// its background sleep to its file, at every start.
func orphanScripts(t *testing.T, dir, node, index string) (tool, toolPIDs, server, serverPIDs string) {
	t.Helper()
	tool, toolPIDs = filepath.Join(dir, "orphan-tool.sh"), filepath.Join(dir, "tool.pids")
	server, serverPIDs = filepath.Join(dir, "orphan-mcp.sh"), filepath.Join(dir, "server.pids")
	files := map[string]string{
		tool: `#!/bin/sh
IFS= read -r invoke
sleep 3600 &
echo $! >>"$1"
sleep 3600
`,
		server: fmt.Sprintf(`#!/bin/sh
sleep 3600 &
echo $! >>"$1"
exec %q %q
`, node, index),
	}
	for f, body := range files {
		if err := os.WriteFile(f, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return tool, toolPIDs, server, serverPIDs
}

// procInfo is one process as /proc shows it.
type procInfo struct {
	pid, ppid int
	state     string
	start     string
	cmdline   string
}

func readProc(pid int) (procInfo, bool) {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return procInfo{}, false
	}
	s := string(stat)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 20 {
		return procInfo{}, false
	}
	ppid, _ := strconv.Atoi(f[1])
	cmd, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	return procInfo{pid: pid, ppid: ppid, state: f[0], start: f[19], cmdline: strings.ReplaceAll(string(cmd), "\x00", " ")}, true
}

// descendants lists every process below pid.
func descendants(t *testing.T, pid int) []procInfo {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	children := map[int][]procInfo{}
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := readProc(n); ok {
			children[p.ppid] = append(children[p.ppid], p)
		}
	}
	var out []procInfo
	queue := []int{pid}
	for len(queue) > 0 {
		for _, c := range children[queue[0]] {
			out = append(out, c)
			queue = append(queue, c.pid)
		}
		queue = queue[1:]
	}
	return out
}

// pidsIn reads the PIDs a script appended to file.
func pidsIn(t *testing.T, file string) []int {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []int
	for _, l := range strings.Fields(string(raw)) {
		if n, err := strconv.Atoi(l); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// awaitRunning polls a task until it is running.
func awaitRunning(t *testing.T, w *taskWire, c *c2s.Client, ep, taskID string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; {
		el, raw := w.taskIQ(c, "get", ep, marshalTask(t, task.TaskStateRequest{TaskID: taskID}))
		st, err := task.ParseTaskState(el.Children()[0])
		if err != nil {
			t.Fatalf("task state: %v %s", err, raw)
		}
		if st.State == task.StateRunning {
			return
		}
		if st.State.Terminal() || time.Now().After(deadline) {
			t.Fatalf("task %s is %s, never running", taskID, st.State)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestNoOrphansAfterKill(t *testing.T) {
	need(t)
	node, index := everything(t)
	dir := t.TempDir()
	tool, toolPIDs, server, serverPIDs := orphanScripts(t, dir, node, index)
	extra := fmt.Sprintf(`
[[endpoint]]
jid = %[1]q
runtime = "exec"
command = [%[2]q, %[3]q]
sandbox_write = [%[8]q]

[[endpoint]]
jid = %[4]q
runtime = "mcp"
command = [%[5]q, %[6]q]
cold_start_supported = true
sandbox_read = [%[9]q]
sandbox_write = [%[8]q]

[[policy.invoke]]
principals = [%[7]q]
endpoints = [%[1]q, %[4]q]
tools = ["*"]
`, ledgerEndpoint, tool, toolPIDs, orphanEndpoint, server, serverPIDs, harness.HomeDomain, dir, npmPrefix(t, index))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if out, err := agentgw(ctx, "endpoint", "register", "-config", suite.config, "-activate", ledgerManifest); err != nil {
		t.Fatalf("register ledger: %v %s", err, out)
	}
	useConfig(t, extra, ledgerEndpoint, orphanEndpoint)

	w := newTaskWire(t)
	alice := login(t, "alice", harness.HomeDomain)
	w.drain(alice)
	execTask, raw := ledgerInvoke(t, w, alice, "orphan-"+newRequestID(t)[4:16], 0)
	if execTask == "" {
		t.Fatalf("exec invocation refused: %s", raw)
	}
	version, hash := activeVersion(t, orphanEndpoint)
	el, raw := w.taskIQ(alice, "set", orphanEndpoint, marshalTask(t, task.Invoke{
		RequestID: newRequestID(t), Tool: "trigger-long-running-operation", APIVersion: version, ManifestHash: mustDigest(t, hash),
		Arguments: `{"duration":120,"steps":120}`,
	}))
	acc, err := task.ParseAccepted(el.Children()[0])
	if err != nil {
		t.Fatalf("mcp invocation: %v %s", err, raw)
	}
	mcpTask := acc.TaskID
	awaitRunning(t, w, alice, ledgerEndpoint, execTask)
	awaitRunning(t, w, alice, orphanEndpoint, mcpTask)
	// Both grandchildren have been forked.
	for deadline := time.Now().Add(20 * time.Second); len(pidsIn(t, toolPIDs)) == 0 || len(pidsIn(t, serverPIDs)) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the scripts never forked their sleeps")
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond) // the MCP call reaches the server

	// Everything the old run started.
	old := suite.gateway
	procs := descendants(t, old.cmd.Process.Pid)
	seen := map[int]bool{}
	for _, p := range procs {
		seen[p.pid] = true
	}
	for _, pid := range append(pidsIn(t, toolPIDs), pidsIn(t, serverPIDs)...) {
		if p, ok := readProc(pid); ok && p.state != "Z" && !seen[pid] {
			procs = append(procs, p)
			seen[pid] = true
		}
	}
	var sawExec, sawMCP bool
	for _, p := range procs {
		sawExec = sawExec || strings.Contains(p.cmdline, tool)
		sawMCP = sawMCP || strings.Contains(p.cmdline, index)
	}
	if !sawExec || !sawMCP {
		t.Fatalf("the tool (%v) or the MCP server (%v) is not running under the gateway: %+v", sawExec, sawMCP, procs)
	}
	if err := old.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-old.done
	g, err := startGateway(ctx)
	if err != nil {
		t.Fatalf("restart after kill -9: %v", err)
	}
	suite.gateway = g

	for _, p := range procs {
		if now, ok := readProc(p.pid); ok && now.start == p.start && now.state != "Z" {
			t.Errorf("process %d (%s) of the killed run survived the restart", p.pid, p.cmdline)
		}
	}
	t.Logf("%d processes of the killed run, none left after the restart", len(procs))

	// The restart settled both tasks; nothing of the old run changed them.
	for _, c := range []struct{ ep, id string }{{ledgerEndpoint, execTask}, {orphanEndpoint, mcpTask}} {
		st := w.awaitSettled(alice, c.ep, c.id)
		if st.State != task.StateFailed {
			t.Errorf("task %s settled %s after the restart", c.id, st.State)
		}
	}
	if !strings.Contains(g.logText(), "killed processes a previous run left behind") {
		t.Errorf("the restarted gateway did not say it killed anything:\n%s", tail(g.logText(), 30))
	}
}
