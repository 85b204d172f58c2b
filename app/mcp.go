package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"agentgw/config"
	"agentgw/internal/loopback"
	"agentgw/mcpface"
	"agentgw/mcpface/account"
	"agentgw/metrics"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"mellium.im/xmpp/jid"
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
		// db's error names the server without the URL's password.
		return nil, fmt.Errorf("mcp.database: %w", err)
	}
	if m := store.Migrated(); m.Backup != "" {
		log.Info("mcp store migrated", "store", store.Name(), "from_schema", m.From, "to_schema", m.To, "backup", m.Backup)
	}
	ctx, cancel := context.WithCancel(ctx)
	m := &MCP{Servers: map[string]*mcpface.Server{}, store: store, cancel: cancel}
	var projected []mcpface.AgentProjection
	for _, ag := range cfg.Agents {
		projected = append(projected, mcpface.AgentProjection(ag))
	}
	for _, a := range accounts {
		acct := account.New(account.Options{
			JID: a.JID, Password: string(a.Password), Server: a.Server, AcceptFrom: a.AcceptFrom,
			Queue: account.Queue(cfg.MCPQueue), Store: store.Store, Log: log,
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

// mcpShutdownGrace bounds how long HTTP requests may finish at shutdown.
const mcpShutdownGrace = 5 * time.Second

// MCPCommand is `agentgw mcp` as its flags set it.
type MCPCommand struct {
	// Path is the configuration file (-config).
	Path string
	// Account is the [[mcp.account]] to serve (-account): by default the
	// only one, or over HTTP all.
	Account string
	// HTTP serves Streamable HTTP at HTTP/mcp instead of stdio (-http).
	HTTP string
}

// RunMCP is `agentgw mcp`: the XMPP MCP Server (docs/mcp-server.md) over
// stdio, or Streamable HTTP at c.HTTP/mcp, logging to stderr as [log]
// says. Over stdio, stdout is the protocol.
func RunMCP(ctx context.Context, c MCPCommand, stdin io.Reader, stdout, stderr io.Writer) error {
	cfg, err := config.LoadMCP(c.Path)
	if err != nil {
		return err
	}
	log := newLogger(cfg.Log, stderr)

	accounts, err := mcpAccounts(cfg.MCP, c.Account, c.HTTP != "")
	if err != nil {
		return err
	}
	var tokens []mcpface.Token
	if c.HTTP != "" {
		if err := mcpHTTPAllowed(c.HTTP, cfg.MCP); err != nil {
			return err
		}
		for _, t := range cfg.MCP.Tokens {
			for _, a := range accounts {
				if a.JID.String() == t.Account {
					tokens = append(tokens, mcpface.Token{Value: t.Token, Account: t.Account, Scopes: t.Scopes})
				}
			}
		}
		if len(tokens) == 0 {
			return errors.New("mcp.token: -http needs at least one [[mcp.token]] for the accounts served")
		}
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	served, err := StartMCP(ctx, cfg.MCP, accounts, c.HTTP != "", log)
	if err != nil {
		return err
	}
	defer served.Close()
	servers := served.Servers

	if c.HTTP == "" {
		srv := servers[accounts[0].JID.String()]
		log.Info("mcp stdio serving", "account", accounts[0].JID.String())
		// Over stdio the MCP Tasks layer serves the account's tasks.
		err := srv.MCP().Run(ctx, srv.TasksTransport(&mcp.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{stdout}}))
		if ctx.Err() != nil || err == nil || errors.Is(err, io.EOF) {
			return nil
		}
		return fmt.Errorf("mcp stdio: %w", err)
	}
	h := mcpface.NewHTTPHandler(servers, tokens, mcpface.HTTPOptions{Log: log, AllowedOrigins: cfg.MCP.AllowedOrigins,
		MaxSessionsPerToken: cfg.MCP.MaxSessionsPerToken, Metrics: metrics.Handler()})
	return serveMCPHTTP(ctx, c.HTTP, cfg.MCP, h, log)
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// mcpAccounts picks the accounts served: -account, else the only one (or,
// over HTTP, all).
func mcpAccounts(m *config.MCPServer, want string, all bool) ([]config.MCPAccount, error) {
	if want != "" {
		j, err := jid.Parse(want)
		if err != nil {
			return nil, fmt.Errorf("%w: mcp: -account %q is not a JID", ErrUsage, want)
		}
		a := m.Account(j.Bare().String())
		if a == nil {
			return nil, fmt.Errorf("mcp: -account %s is not an [[mcp.account]] of the configuration", j.Bare())
		}
		return []config.MCPAccount{*a}, nil
	}
	if len(m.Accounts) > 1 && !all {
		return nil, fmt.Errorf("%w: mcp: the configuration has %d accounts: choose one with -account JID", ErrUsage, len(m.Accounts))
	}
	return m.Accounts, nil
}

// mcpHTTPAllowed applies the component stream's rule: plain HTTP only on a
// loopback address, TLS (mcp.tls_cert, mcp.tls_key) anywhere else.
func mcpHTTPAllowed(addr string, m *config.MCPServer) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%w: mcp: -http %q must be host:port", ErrUsage, addr)
	}
	if !loopback.Host(host) && m.TLSCert == "" {
		return fmt.Errorf("mcp.tls_cert: -http %s is not a loopback address: set mcp.tls_cert and mcp.tls_key (plain HTTP is allowed only on loopback)", addr)
	}
	return nil
}

func serveMCPHTTP(ctx context.Context, addr string, m *config.MCPServer, h http.Handler, log *slog.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("mcp http: %w", err)
	}
	hs := mcpface.NewHTTPServer(h)
	scheme := "http"
	if m.TLSCert != "" {
		scheme = "https"
	}
	log.Info("mcp http listening", "url", scheme+"://"+ln.Addr().String()+mcpface.Path)
	errc := make(chan error, 1)
	go func() {
		if m.TLSCert != "" {
			errc <- hs.ServeTLS(ln, m.TLSCert, m.TLSKey)
		} else {
			errc <- hs.Serve(ln)
		}
	}()
	select {
	case err := <-errc:
		return fmt.Errorf("mcp http: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), mcpShutdownGrace)
	defer cancel()
	_ = hs.Shutdown(sctx)
	return nil
}
