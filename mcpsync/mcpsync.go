// Package mcpsync keeps the manifest of an mcp endpoint (an [[endpoint]]
// with runtime "mcp", docs/mcp.md) in step with its MCP server.
//
// The gateway owns that manifest, as it does for builtin endpoints. An
// import (Sync) lists the server's tools through package runtime/mcpclient,
// which derives the version from the content, and records it in the
// store (db.Store.RecordImport): a changed tool list registers a new
// immutable version (origin mcp) and activates it; an unchanged list
// changes nothing. A tool that cannot be translated, or breaks the
// version-0 rules, is left out; the store keeps the skipped tools with
// their reasons, for `agentgw endpoint status`. An import fails as a
// whole only when the server cannot be listed or the manifest as a whole
// is refused, and then nothing changes.
//
// Imports run when `agentgw serve` starts, when the server announces
// notifications/tools/list_changed, whenever it comes up (so a server that
// was unreachable at start is imported once it is up), and on `agentgw
// endpoint sync` (Endpoint and Sync). Endpoint also makes the endpoint's
// presence follow the server's availability.
package mcpsync

import (
	"context"
	"fmt"

	"agentgw/api"
	"agentgw/db"
	"agentgw/manifest"
	"agentgw/runtime/mcpclient"
)

// Importer lists an MCP server's tools as an endpoint manifest;
// *mcpclient.Runtime implements it.
type Importer interface {
	Import(ctx context.Context, jid string) (*mcpclient.Imported, error)
}

// Result is the outcome of one Sync.
type Result struct {
	// JID is the endpoint's bare JID.
	JID string
	// Version and Hash identify the imported manifest version.
	Version string
	Hash    [32]byte
	// Tools is the number of tools in the manifest.
	Tools int
	// Skipped lists the tools left out, with the reason; Notes what was
	// changed or left out of the tools kept (schema rewrites, members).
	Skipped []mcpclient.Skipped
	Notes   []mcpclient.Note
	// ImportOutcome says what the store changed.
	db.ImportOutcome
}

// Sync imports the tool list of the MCP server behind the endpoint jid
// and records it: see db.Store.RecordImport. The manifest must also be
// servable over XMPP (api.CheckServable), as for a registration. On error
// nothing is stored.
func Sync(ctx context.Context, store *db.Store, imp Importer, jid string) (*Result, error) {
	in, err := imp.Import(ctx, jid)
	if err != nil {
		return nil, err
	}
	m, err := manifest.Parse(in.Manifest, manifest.Options{})
	if err != nil {
		return nil, fmt.Errorf("mcpsync: imported manifest refused: %w", err)
	}
	if m.JID != jid {
		return nil, fmt.Errorf("mcpsync: imported manifest is for %s, not %s", m.JID, jid)
	}
	if err := api.CheckServable(m); err != nil {
		return nil, fmt.Errorf("mcpsync: imported manifest cannot be served: %w", err)
	}
	skipped := make([]db.SkippedTool, len(in.Skipped))
	for i, s := range in.Skipped {
		skipped[i] = db.SkippedTool{Tool: s.Tool, Reason: s.Reason}
	}
	v := db.Version{
		JID: m.JID, Version: m.Version, Hash: m.Hash, Canonical: m.Canonical,
		Name: m.Name, Title: m.Title, Description: m.Description,
	}
	out, err := store.RecordImport(ctx, v, skipped)
	if err != nil {
		return nil, err
	}
	return &Result{
		JID: m.JID, Version: m.Version, Hash: m.Hash, Tools: in.Tools,
		Skipped: in.Skipped, Notes: in.Notes, ImportOutcome: out,
	}, nil
}
