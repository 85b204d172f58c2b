package app

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"agentgw/config"
	"agentgw/mcpface"
)

// MCP is what `agentgw mcp` serves: the received-message store, and one
// XMPP session and one MCP server per account.
type MCP struct {
	// Servers maps an account's bare JID to its MCP server.
	Servers map[string]*mcpface.Server

	store  *mcpface.Store
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// StartMCP opens the store of cfg ([mcp] database) and starts, for each of
// accounts, its session (logged in and reconnected until Close) and its
// MCP server. checkScopes makes every server check the token's scopes
// (Streamable HTTP); stdio has none.
func StartMCP(ctx context.Context, cfg *config.MCPServer, accounts []config.MCPAccount, checkScopes bool, log *slog.Logger) (*MCP, error) {
	store, err := mcpface.OpenStore(ctx, cfg.Database)
	if err != nil {
		return nil, err
	}
	if m := store.Migrated(); m.Backup != "" {
		log.Info("mcp store migrated", "path", cfg.Database, "from_schema", m.From, "to_schema", m.To, "backup", m.Backup)
	}
	ctx, cancel := context.WithCancel(ctx)
	m := &MCP{Servers: map[string]*mcpface.Server{}, store: store, cancel: cancel}
	var projected []mcpface.AgentProjection
	for _, ag := range cfg.Agents {
		projected = append(projected, mcpface.AgentProjection{JID: ag.JID, Tools: ag.Tools, Prefix: ag.Prefix})
	}
	for _, a := range accounts {
		acct := mcpface.NewAccount(mcpface.AccountOptions{
			JID: a.JID, Password: string(a.Password), Server: a.Server,
			QueueMax: cfg.QueueMax, QueueMaxBytes: cfg.QueueMaxBytes, AcceptFrom: a.AcceptFrom,
			SenderRate: cfg.SenderRateLimit, SenderBurst: cfg.SenderRateBurst, Store: store, Log: log,
		})
		srv, err := mcpface.New(ctx, acct, store, mcpface.Options{CheckScopes: checkScopes, Log: log,
			Agents: projected, AgentPoll: time.Duration(cfg.AgentPollSeconds) * time.Second})
		if err != nil {
			m.Close()
			return nil, err
		}
		m.Servers[a.JID.String()] = srv
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			acct.Run(ctx)
		}()
	}
	return m, nil
}

// Close ends every session, waits for them, and closes the store.
func (m *MCP) Close() error {
	m.cancel()
	m.wg.Wait()
	return m.store.Close()
}
