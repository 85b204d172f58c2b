//go:build linux

package harness

import "syscall"

// setSysProcAttr puts the child in its own process group (so that Stop can
// signal it and everything it forks) and asks the kernel to SIGKILL it if the
// harness dies without stopping it.
func setSysProcAttr(a *syscall.SysProcAttr) {
	a.Setpgid = true
	a.Pdeathsig = syscall.SIGKILL
}
