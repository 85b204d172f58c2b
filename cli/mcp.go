package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"agentgw/app"
	"agentgw/config"
	"agentgw/mcpface"
	"agentgw/metrics"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"mellium.im/xmpp/jid"
)

// mcpShutdownGrace bounds how long HTTP requests may finish at shutdown.
const mcpShutdownGrace = 5 * time.Second

// runMCP is `agentgw mcp -config FILE [-account JID] [-http ADDR]`: the
// XMPP MCP Server (docs/mcp-server.md) over stdio, or Streamable HTTP at
// ADDR/mcp. Logs go to stderr only: over stdio, stdout is the protocol.
func runMCP(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("mcp", flag.ContinueOnError)
	path := fs.String("config", "", "configuration file")
	account := fs.String("account", "", "the [[mcp.account]] to serve (default: the only one; over HTTP: all)")
	httpAddr := fs.String("http", "", "serve Streamable HTTP at ADDR/mcp instead of stdio")
	if _, err := parse(fs, args, 0, 0); err != nil {
		return err
	}
	if err := requireConfig("mcp", *path); err != nil {
		return err
	}
	cfg, err := config.LoadMCP(*path)
	if err != nil {
		return err
	}
	level, _ := config.LogLevel(cfg.LogLevel)
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	accounts, err := mcpAccounts(cfg.MCP, *account, *httpAddr != "")
	if err != nil {
		return err
	}
	var tokens []mcpface.Token
	if *httpAddr != "" {
		if err := mcpHTTPAllowed(*httpAddr, cfg.MCP); err != nil {
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
	served, err := app.StartMCP(ctx, cfg.MCP, accounts, *httpAddr != "", log)
	if err != nil {
		return err
	}
	defer served.Close()
	servers := served.Servers

	if *httpAddr == "" {
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
	return serveMCPHTTP(ctx, *httpAddr, cfg.MCP, h, log)
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// mcpAccounts picks the accounts served: -account, else the only one (or,
// over HTTP, all).
func mcpAccounts(m *config.MCPServer, want string, all bool) ([]config.MCPAccount, error) {
	if want != "" {
		j, err := jid.Parse(want)
		if err != nil {
			return nil, fmt.Errorf("%w: mcp: -account %q is not a JID", errUsage, want)
		}
		a := m.Account(j.Bare().String())
		if a == nil {
			return nil, fmt.Errorf("mcp: -account %s is not an [[mcp.account]] of the configuration", j.Bare())
		}
		return []config.MCPAccount{*a}, nil
	}
	if len(m.Accounts) > 1 && !all {
		return nil, fmt.Errorf("%w: mcp: the configuration has %d accounts: choose one with -account JID", errUsage, len(m.Accounts))
	}
	return m.Accounts, nil
}

// mcpHTTPAllowed applies the component stream's rule: plain HTTP only on a
// loopback address, TLS (mcp.tls_cert, mcp.tls_key) anywhere else.
func mcpHTTPAllowed(addr string, m *config.MCPServer) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%w: mcp: -http %q must be host:port", errUsage, addr)
	}
	if !config.LoopbackHost(host) && m.TLSCert == "" {
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
