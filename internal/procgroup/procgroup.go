// Package procgroup finds and kills the process groups of runtime
// processes (exec tools, stdio MCP servers) that a previous run of the
// gateway started and did not live to stop.
//
// The gateway records each group as it starts (Identify,
// db.RecordProcessGroup) and, when it starts again, kills whatever is
// left of the recorded groups (KillStale) before it recovers any task. A
// group is killed only if its gateway no longer runs and it is still the
// recorded one; why that test suffices: docs/faults.md, "Stale process
// groups".
package procgroup

import "time"

// Group identifies a process group.
type Group struct {
	// PGID is the process group ID, the PID of its leader.
	PGID int
	// BootID is the machine's boot ID when the group started; StartTicks
	// the leader's start time in clock ticks since that boot.
	BootID     string
	StartTicks uint64
	// OwnerPID and OwnerStart identify the gateway process that started
	// the group (its PID and start time): while it runs, the group is not
	// stale, even for another gateway started on the same database.
	OwnerPID   int
	OwnerStart uint64
}

// killWait bounds how long KillStale waits for the processes it killed
// to be gone.
const killWait = 5 * time.Second

// Process identifies one process across the reuse of its PID: the boot
// it ran in, its PID and its start time in clock ticks since that boot.
type Process struct {
	BootID string
	PID    int
	Start  uint64
}
