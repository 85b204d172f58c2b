//go:build !linux

package procgroup

import "errors"

// Supported reports whether process groups can be identified here.
const Supported = false

var errUnsupported = errors.New("procgroup: not supported on this system")

// BootID is not supported here.
func BootID() (string, error) { return "", errUnsupported }

// Identify is not supported here: nothing is recorded, and a runtime
// process may outlive a gateway that crashed.
func Identify(int) (Group, error) { return Group{}, errUnsupported }

// KillStale does nothing here.
func KillStale([]Group) (int, error) { return 0, nil }

// Self is not supported here.
func Self() (Process, error) { return Process{}, errUnsupported }

// Gone never knows a process to be gone here.
func Gone(Process) bool { return false }
