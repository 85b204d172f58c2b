package runtime

// ProcessTracker records the process groups that runtimes start (exec
// tools, stdio MCP servers), so that whatever a gateway that died left of
// them can be killed when it starts again (internal/procgroup). Each
// process leads a group of its own; pid is its PID and the group's ID.
type ProcessTracker interface {
	// Started is called once the process has started, before it is given
	// any work. It returns once the group is recorded (or recording has
	// failed, which it logs).
	Started(pid int)
	// Ended is called once the whole group has been killed or has ended.
	// It must not block.
	Ended(pid int)
}
