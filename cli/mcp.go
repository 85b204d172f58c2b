package cli

import (
	"context"
	"flag"
	"io"

	"agentgw/app"
)

// runMCP is `agentgw mcp -config FILE [-account JID] [-http ADDR]`; app
// builds and runs it (app.RunMCP). Logs go to stderr only: over stdio,
// stdout is the protocol.
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
	return app.RunMCP(ctx, app.MCPCommand{Path: *path, Account: *account, HTTP: *httpAddr}, stdin, stdout, stderr)
}
