//go:build unix

package exec

import (
	osexec "os/exec"
	"syscall"
)

// setGroup makes the child the leader of a new process group, so that the
// tool and everything it starts can be signalled together.
func setGroup(cmd *osexec.Cmd) {
	cmd.SysProcAttr = sysProcAttr()
}

// signalGroup sends sig to the process group led by pid. A group that no
// longer exists is not an error.
func signalGroup(pid int, kill bool) {
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	_ = syscall.Kill(-pid, sig)
}
