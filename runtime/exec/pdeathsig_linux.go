//go:build linux

package exec

import "syscall"

// sysProcAttr puts the tool in a process group of its own and kills it when
// the gateway dies. Without the parent-death signal a tool outlives a
// crashed gateway and can finish its side effect after the restarted
// gateway has settled its task failed (unavailable, retryable), which
// invites the caller to retry a side effect that happened.
//
// Linux delivers it when the thread that forked the child exits, not the
// process; the Go runtime does not end its threads except for goroutines
// that exit while locked to one, which this package never does.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
