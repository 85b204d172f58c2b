//go:build !unix

package mcpclient

import osexec "os/exec"

// setGroup does nothing where process groups do not exist.
func setGroup(*osexec.Cmd) {}

// signalGroup does nothing where process groups do not exist; the go-sdk
// has already stopped the process itself.
func signalGroup(int) {}
