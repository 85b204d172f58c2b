//go:build linux

package mcpclient

import "syscall"

// sysProcAttr puts the stdio server in a process group of its own and
// kills it when the gateway dies. Without the parent-death signal a server
// outlives a crashed gateway, with calls of tasks that the restarted
// gateway settles as failed.
//
// Linux delivers it when the thread that forked the child exits, not the
// process; the Go runtime does not end its threads except for goroutines
// that exit while locked to one, which this package never does. What the
// server starts gets no such signal: the gateway kills its recorded groups
// when it starts again (Options.Tracker).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
