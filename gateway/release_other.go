//go:build !linux

package gateway

import (
	"runtime"
	"runtime/debug"
)

// releaseMemory gives the free Go heap back to the operating system
// (release_linux.go also drops the executable's mapped pages), after a
// first collection that sets aside what sync.Pools hold.
func releaseMemory() {
	runtime.GC()
	debug.FreeOSMemory()
}
