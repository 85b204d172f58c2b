// Package mcpsync keeps the manifest of an mcp endpoint (an [[endpoint]]
// with runtime "mcp", docs/mcp.md) in step with its MCP server.
//
// The gateway owns that manifest, as it does for builtin endpoints. An
// import (Sync) lists the server's tools through runtime/mcpclient and
// records them (db.Store.RecordImport): a changed list registers and
// activates a new immutable version, an unchanged one changes nothing, and
// a tool that cannot be translated is skipped with its reason. Imports run
// at start, on notifications/tools/list_changed, whenever the server comes
// up, and on `agentgw endpoint sync`; Endpoint also makes the endpoint's
// presence follow the server. docs/mcp.md, "The gateway owns the
// manifest".
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
