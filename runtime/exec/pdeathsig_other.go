//go:build unix && !linux

package exec

import "syscall"

// sysProcAttr puts the tool in a process group of its own. The parent-death
// signal is Linux only; elsewhere a tool may outlive a crashed gateway.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
