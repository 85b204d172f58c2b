//go:build !linux

package gateway

import "runtime/debug"

// releaseMemory gives the free Go heap back to the operating system
// (release_linux.go also drops the executable's mapped pages).
func releaseMemory() { debug.FreeOSMemory() }
