//go:build unix && !linux

package harness

import "syscall"

// setSysProcAttr puts the child in its own process group so that Stop can
// signal it and everything it forks.
func setSysProcAttr(a *syscall.SysProcAttr) {
	a.Setpgid = true
}
