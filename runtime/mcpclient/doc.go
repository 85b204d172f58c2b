// Package mcpclient is the mcp runtime: it bridges an upstream MCP server (a
// stdio command or a Streamable HTTP URL) to the tools of one endpoint,
// with the official go-sdk client (github.com/modelcontextprotocol/go-sdk)
// and the thin layers the go-sdk lacks (raw results, MCP Tasks). It
// implements the ProtoXEP's "MCP Mapping" (Implementation Appendix);
// docs/mcp.md has the full mapping and every place where meaning is lost.
//
// # Import
//
// Import turns every page of the server's tools/list into an immutable
// manifest version. Each tool keeps name, title, description, inputSchema,
// outputSchema, annotations, execution and _meta exactly as sent (the raw
// JSON, not the go-sdk's types, which drop execution.taskSupport).
// mcpProtocolVersion and implementation come from the session. The
// version is derived from the content, so identical tools give an
// identical version and hash. Draft-07 schemas are rewritten to JSON
// Schema 2020-12 where that is exact; a tool that cannot be represented
// under the version-0 rules is left out and reported, never silently.
//
// # Revisions
//
// The session asks for MCP 2026-07-28 (server/discover); a server that
// does not offer it is reached through initialize at 2025-11-25 (the
// go-sdk client falls back on its own). At 2026-07-28 the server asks for
// input inside results (MRTR) and may answer tools/call with a task of the
// tasks extension io.modelcontextprotocol/tasks (current.go); before, it
// sends elicitation/create and runs MCP Tasks of 2025-11-25 (tasks.go).
//
// # Calls
//
//   - An admitted task becomes tools/call with the validated arguments and
//     a progress token; a tool whose execution.taskSupport is "required"
//     becomes an MCP task (task-augmented tools/call, tasks/result,
//     tasks/get, tasks/cancel).
//   - notifications/progress becomes a progress report (progress/total as
//     percent, message); an MCP task's statusMessage becomes a progress
//     message.
//   - At 2026-07-28, an input_required result's form elicitations become
//     input requests, and the call is retried with the answers as
//     inputResponses; an extension task is polled with tasks/get, its
//     input requests answered with tasks/update, cancelled with
//     tasks/cancel.
//   - Form elicitation becomes an input request with the requested schema
//     (checked under the version-0 rules); the answer goes back as
//     "accept". URL elicitation fails the task (CodeURLElicitation).
//   - The CallToolResult is the completed result, preserved whole;
//     isError=true is still a completion.
//   - A JSON-RPC or transport failure fails the task with unavailable,
//     retryable.
//   - Cancellation becomes notifications/cancelled (or tasks/cancel).
//
// # Lifecycle
//
// One session serves every call of the endpoint. It is started lazily by
// a call when ColdStart is set (and stopped after IdleTimeout), or kept
// warm; it is restarted with backoff. Status and Options.OnStatus expose
// its availability so that presence can follow it.
//
// # Credentials
//
// Header and environment values for the upstream come only from files or
// the gateway's environment. They never reach a manifest, a report, a
// failure message or Status (they are redacted), and nothing of the
// caller (no JID, no token) is passed to the upstream.
package mcpclient

import "log/slog"

// discardLogger silences the go-sdk: only the top of agentgw logs.
var discardLogger = slog.New(slog.DiscardHandler)
