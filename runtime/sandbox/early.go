package sandbox

// The helper runs from this package's initialization, not from main: Go
// initializes packages in import-path order as their imports are ready,
// and this one (with few imports) is ready long before the gateway's heavy
// dependencies (JSON Schema, SQLite, XMPP), whose initialization the
// helper would otherwise pay at every child start for nothing. Measured on
// the agentgw binary: 95 packages initialized instead of 143, and about
// half the processor time per start (docs/BENCHMARKS.md). RunIfHelper
// does nothing in a process that is not a helper, and main calls it too.
func init() { RunIfHelper() }
