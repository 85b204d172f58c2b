//go:build !linux

package sandbox

import (
	"errors"
	"syscall"
)

// ABI returns 0: Landlock is Linux's.
func ABI() int { return 0 }

// confineAndExec execs args with env; only Linux confines.
func confineAndExec(r *Rules, args, env []string) error {
	if r.Landlock {
		return errors.New("sandbox-exec: Landlock is Linux's")
	}
	return syscall.Exec(args[0], args, env)
}
