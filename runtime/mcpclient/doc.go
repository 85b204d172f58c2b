// Package mcpclient is the mcp runtime: it bridges an upstream MCP server (a
// stdio command or a Streamable HTTP URL) to the tools of one endpoint,
// with the official go-sdk client and the thin layers it lacks (raw
// results, MCP Tasks). It implements the ProtoXEP's "MCP Mapping".
//
// Import (import.go) turns tools/list into an immutable manifest version;
// the session asks for MCP 2026-07-28 (current.go: MRTR and the tasks
// extension) and falls back to initialize at 2025-11-25 (tasks.go); a call
// is tools/call, its progress, input and result mapped to the runtime's
// reports. Header and environment values come only from files or the
// gateway's environment and never reach a manifest, a report or a log.
// docs/mcp.md ("The mcp runtime") has the mapping in full and every place
// where meaning is lost.
package mcpclient

import "log/slog"

// discardLogger silences the go-sdk: only the top of agentgw logs.
var discardLogger = slog.New(slog.DiscardHandler)
