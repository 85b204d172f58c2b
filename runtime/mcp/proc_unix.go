//go:build unix

package mcp

import (
	osexec "os/exec"
	"syscall"
)

// setGroup makes the stdio server the leader of a new process group, so
// that it and everything it starts can be killed together.
func setGroup(cmd *osexec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// signalGroup kills the process group led by pid. A group that no longer
// exists is not an error.
func signalGroup(pid int) {
	_ = syscall.Kill(-pid, syscall.SIGKILL)
}
