//go:build linux

package procgroup_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"agentgw/internal/procgroup"
)

// startGroup starts a shell in a group of its own that forks a sleep (a
// grandchild of the test) and writes its PID to a file, then waits.
func startGroup(t *testing.T) (*exec.Cmd, int) {
	t.Helper()
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	cmd := exec.Command("/bin/sh", "-c", `sleep 300 & echo $! > "$1"; wait`, "sh", pidFile)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
	for deadline := time.Now().Add(10 * time.Second); ; {
		b, err := os.ReadFile(pidFile)
		if s := strings.TrimSpace(string(b)); err == nil && s != "" {
			pid, err := strconv.Atoi(s)
			if err != nil {
				t.Fatal(err)
			}
			return cmd, pid
		}
		if time.Now().After(deadline) {
			t.Fatal("the shell never wrote its child's PID")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return f[0] != "Z"
}

// TestKillStale: the leader of a recorded group dies (as a runtime process
// does with its parent-death signal); its grandchild lives on in the group
// until KillStale kills it.
func TestKillStale(t *testing.T) {
	cmd, child := startGroup(t)
	g, err := procgroup.Identify(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if g.OwnerPID != os.Getpid() {
		t.Fatalf("owner %d, want this process %d", g.OwnerPID, os.Getpid())
	}
	cmd.Process.Kill()
	cmd.Wait()
	if !running(child) {
		t.Fatal("the grandchild died with its parent: nothing to test")
	}
	// Its gateway (this process) still runs: not stale.
	if n, err := procgroup.KillStaleAny([]procgroup.Group{g}); err != nil || n != 0 {
		t.Fatalf("KillStale of a group whose owner runs = %d, %v", n, err)
	}
	// The gateway that started it is gone.
	g.OwnerPID, g.OwnerStart = 0, 0
	n, err := procgroup.KillStaleAny([]procgroup.Group{g})
	if err != nil || n != 1 {
		t.Fatalf("KillStale = %d, %v; want 1 killed", n, err)
	}
	if running(child) {
		t.Fatal("the grandchild survived KillStale")
	}
}

// TestKillStaleNotOurs: a group recorded in another boot, or whose members
// started before the recorded leader, is left alone.
func TestKillStaleNotOurs(t *testing.T) {
	cmd, child := startGroup(t)
	g, err := procgroup.Identify(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	g.OwnerPID, g.OwnerStart = 0, 0
	other := g
	other.BootID = "another-boot"
	later := g
	later.StartTicks += 1 << 40
	for _, r := range []procgroup.Group{other, later} {
		if n, err := procgroup.KillStaleAny([]procgroup.Group{r}); err != nil || n != 0 {
			t.Fatalf("KillStale(%+v) = %d, %v; want nothing killed", r, n, err)
		}
	}
	if !running(child) || !running(cmd.Process.Pid) {
		t.Fatal("a group that is not the recorded one was killed")
	}
}
