//go:build !linux

package compstream

import "runtime/debug"

// ReleaseMemory gives the free Go heap back to the operating system
// (release_linux.go also drops the executable's mapped pages).
func ReleaseMemory() { debug.FreeOSMemory() }
