// Package task implements the task model of the XMPP Agent Gateway
// ProtoXEP (urn:xmpp:agent-task:0): the state machine, admission checks,
// replay fingerprints, lifecycle events and their wire form.
//
// It is pure: a Machine holds configuration and a schema cache, and every
// method takes the committed Task, a command and the current time and
// returns data (the new Task, the events, the input records) or a protocol
// *Error. It reads no clock, touches no store and sends nothing. The
// gateway persists, sends and drives the runtimes (package runtime).
//
// The contracts a caller keeps are in docs/task-package.md: the order of
// admission checks (authorization before anything reveals validity), the
// persistence contract (every Step written in ONE transaction, its events
// sent only after the commit, commands on one task serialized, Deadline
// stored at nanosecond resolution), retention and purging, the timers
// (Machine.Tick at Task.NextWake), restart, and the features to
// advertise. Config bounds sizes, event counts and task lifetime; see the
// Default constants.
package task
