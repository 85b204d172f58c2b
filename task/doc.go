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
// # Admission
//
// The gateway handles <invoke/> (ParseInvoke) in this order:
//
//  1. ParseInvoke: pure syntax, <bad-request/>;
//  2. authorization of the sender for the endpoint and exact tool
//     (policy): ErrNotFound, before anything reveals validity;
//  3. load the manifest of inv.APIVersion (none: ErrNotFound);
//  4. Machine.Prepare: tool, stale hash (<conflict/>), I-JSON and input
//     schema (<not-acceptable/>), and the replay fingerprint;
//  5. in ONE transaction: look up the task by (caller, target, request
//     ID), Machine.Admit (replay, <conflict/>, deadline already passed:
//     <not-acceptable/>), insert the new task; commit; then send
//     Admission.Accepted();
//  6. in a new transaction: Machine.Start; commit; send its events; then
//     runtime.Start.
//
// # Persistence contract
//
// Every Step must be written in ONE transaction, and its events sent only
// after the commit: replace the task row with Step.Task, insert every
// Step.Events row (keyed by task ID and revision, both unique), and insert
// or replace every Step.Inputs record (keyed by task ID and request ID). A
// Step without events writes nothing. A method may return a Step with
// events and an error together (the deadline or an input expiry preempted
// the command): commit the step, then answer with the error. Commands on
// one task must be serialized (the store's single writer does that): load
// the task, apply, write, commit.
//
// The task row keeps every field of Task. Times are at millisecond
// resolution (the package truncates them) except Deadline, which must be
// stored at nanosecond resolution, because deadlines are compared exactly
// (Instant). Task and InputRecord round-trip exactly through encoding/json,
// so a store may keep the task as one JSON document beside the columns it
// indexes (ID; Caller, Target, RequestID; NextWake). The admission replay
// record is the task row itself: a unique index on (Caller, Target,
// RequestID), kept until PurgeAfter.
//
// # Retention
//
// Every task has an effective deadline (Task.Deadline), so every task
// settles by then. RetainUntil is the deadline plus Config.Retention;
// until then a settled task's state and result are queryable, and after it
// they answer <item-not-found/> (Task.Expired). The task row, its events,
// its input records (with the cancellation kept in the row) and so the
// replay record are deleted together once Task.Purgeable: settled and past
// PurgeAfter, the later of RetainUntil and created plus
// Config.ReplayWindow. This is the longest retention the ProtoXEP asks for
// any of them.
//
// # Timers
//
// Call Machine.Tick when Task.NextWake is reached: it settles a task at
// its deadline (failed, deadline-expired) and handles an expired input
// request (re-issued with a new request ID while runtime.InputRequest
// re-issues remain, else failed with CodeInputExpired). Every mutating
// method runs the same timers first, so a late sweeper never lets a
// mutation commit after the deadline.
//
// # Restart
//
// For each non-terminal task: Tick first; a task still accepted was never
// dispatched and is started normally; otherwise Resume it if its runtime
// CanResume, else Machine.Interrupt (failed, unavailable, retryable).
//
// # Discovery
//
// EndpointFeatures and ToolFeatures give the task features to advertise
// for a manifest and a tool; Implemented is what api.Service.TaskFeatures
// should hold.
//
// # Limits
//
// Config bounds argument, input, result and schema sizes, the number of
// progress and input events per task, and task lifetime; see the Default
// constants. JSON limits beyond size are those of manifest.Limits (depth
// 64, 4096 members, 128-byte numbers).
package task
