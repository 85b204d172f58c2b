package app

import (
	"context"
	"fmt"
	"time"

	"agentgw/config"
	"agentgw/db"
	"agentgw/mcpsync"
	"agentgw/runtime/mcpclient"
)

// syncTerminateGrace is how long SyncEndpoint gives the MCP server it
// started to exit, before SIGTERM and again before SIGKILL.
const syncTerminateGrace = 300 * time.Millisecond

// SyncEndpoint imports the tool list of the mcp endpoint jid of cfg, whose
// server it starts itself and stops when done, and records it in store
// (mcpsync.Sync): a changed list is registered and activated, an unchanged
// one changes nothing. A running serve reads the store, so it serves the
// new version at once.
func SyncEndpoint(ctx context.Context, cfg *config.Config, store *db.Store, jid string) (*mcpsync.Result, error) {
	var ep *config.Endpoint
	for i := range cfg.Endpoints {
		if cfg.Endpoints[i].JID == jid {
			ep = &cfg.Endpoints[i]
		}
	}
	if ep == nil || ep.Runtime != config.RuntimeMCP {
		return nil, fmt.Errorf("%s is not an [[endpoint]] with runtime %q in %s", jid, config.RuntimeMCP, cfg.Path)
	}
	opts := mcpsync.Options(*ep)
	opts.TerminateGrace = syncTerminateGrace
	rt, err := mcpclient.New(opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", jid, err)
	}
	defer rt.Close()
	res, err := mcpsync.Sync(ctx, store, rt, jid)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", jid, err)
	}
	return res, nil
}
