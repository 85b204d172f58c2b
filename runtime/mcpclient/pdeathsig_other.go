//go:build unix && !linux

package mcpclient

import "syscall"

// sysProcAttr puts the stdio server in a process group of its own. The
// parent-death signal is Linux only; elsewhere a server may outlive a
// crashed gateway.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
