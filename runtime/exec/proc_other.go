//go:build !unix

package exec

import (
	"os"
	osexec "os/exec"
)

// setGroup does nothing where process groups do not exist.
func setGroup(*osexec.Cmd) {}

// signalGroup can only kill the process itself here.
func signalGroup(pid int, _ bool) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}
