// Package mcpclient is the mcp runtime: it bridges an upstream MCP server (a
// stdio command or a Streamable HTTP URL) to the tools of one endpoint,
// with the official go-sdk client and the thin layers it lacks (raw
// results, MCP Tasks). It implements the ProtoXEP's "MCP Mapping";
// docs/mcp.md ("The mcp runtime") has the mapping in full and every place
// where meaning is lost.
//
//   - Import (import.go) turns the server's tools/list into an immutable
//     manifest version, each tool kept as the raw JSON sent; the same tools
//     give the same version and hash.
//   - The session asks for MCP 2026-07-28 (server/discover) and falls back
//     to initialize at 2025-11-25. At 2026-07-28, input comes inside
//     results (MRTR) and tasks are the io.modelcontextprotocol/tasks
//     extension (current.go); before, elicitation/create and the MCP Tasks
//     of 2025-11-25 (tasks.go).
//   - A call is tools/call with a progress token; progress, input requests,
//     the whole CallToolResult and cancellation map to the runtime's
//     reports; a transport failure fails the task unavailable, retryable.
//   - One session serves every call of the endpoint, started lazily or kept
//     warm, restarted with backoff; Status feeds presence.
//   - Header and environment values come only from files or the gateway's
//     environment, and never reach a manifest, a report or a log; nothing
//     of the caller (no JID, no token) reaches the upstream.
package mcpclient

import "log/slog"

// discardLogger silences the go-sdk: only the top of agentgw logs.
var discardLogger = slog.New(slog.DiscardHandler)
