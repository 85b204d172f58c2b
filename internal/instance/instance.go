// Package instance names one running gateway process among several that
// share a store: the holder of its task leases and outbox claims.
//
// An ID is random, followed where the system allows by the process's
// identity (boot ID, PID, start time in clock ticks), so that another
// gateway of the same machine can tell at once that the process has gone,
// without waiting for its leases to lapse.
package instance

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"agentgw/internal/procgroup"
)

// New makes a fresh instance ID.
func New() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	id := "gw-" + hex.EncodeToString(b[:])
	if p, err := procgroup.Self(); err == nil {
		id += fmt.Sprintf("@%s:%d:%d", p.BootID, p.PID, p.Start)
	}
	return id
}

// Gone reports whether the process of instance ID id is known to have
// ended: it ran on this machine, in this boot, and runs no more. An ID
// without a process identity, or of another machine, is never known gone.
func Gone(id string) bool {
	_, ident, ok := strings.Cut(id, "@")
	if !ok {
		return false
	}
	f := strings.Split(ident, ":")
	if len(f) != 3 {
		return false
	}
	pid, err1 := strconv.Atoi(f[1])
	start, err2 := strconv.ParseUint(f[2], 10, 64)
	if err1 != nil || err2 != nil {
		return false
	}
	return procgroup.Gone(procgroup.Process{BootID: f[0], PID: pid, Start: start})
}
