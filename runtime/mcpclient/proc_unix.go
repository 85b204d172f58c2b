//go:build unix

package mcpclient

import (
	osexec "os/exec"
	"syscall"
)

// setGroup makes the stdio server the leader of a new process group, so
// that it and everything it starts can be killed together, and on Linux
// kills it when the gateway dies (sysProcAttr).
func setGroup(cmd *osexec.Cmd) {
	cmd.SysProcAttr = sysProcAttr()
}

// signalGroup kills the process group led by pid. A group that no longer
// exists is not an error.
func signalGroup(pid int) {
	_ = syscall.Kill(-pid, syscall.SIGKILL)
}
