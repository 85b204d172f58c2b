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
// The contracts a caller keeps (admission order, persistence, retention,
// timers, restart) are in docs/task-package.md.
package task
