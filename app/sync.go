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
	opts := MCPClientOptions(*ep)
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

// MCPClientOptions returns the runtime options of an [[endpoint]] with
// runtime "mcp": the config.Endpoint keys, one for one (the table in
// docs/mcp.md).
func MCPClientOptions(ep config.Endpoint) mcpclient.Options {
	o := mcpclient.Options{Command: ep.Command, Dir: ep.Dir, Env: ep.Env}
	m := ep.MCP
	if m == nil {
		return o
	}
	o.URL = m.URL
	o.EnvFiles, o.EnvPass, o.HeaderFiles = m.EnvFiles, m.EnvPass, m.HeaderFiles
	o.ColdStart, o.KeepWarm, o.IdleTimeout = m.ColdStart, m.KeepWarm, m.IdleTimeout
	o.AgentName, o.AgentTitle, o.AgentDescription = m.Name, m.Title, m.Description
	o.DefaultTimeoutSeconds = int(m.DefaultTimeout / time.Second)
	o.MaximumTimeoutSeconds = int(m.MaxTimeout / time.Second)
	return o
}
