// Command agentgw is an XMPP agent gateway: an XEP-0114 component that hosts
// AI agent endpoints, with a SQLite store and a deny-by-default policy. See
// README.md, and `agentgw help` for the commands.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"agentgw/cli"
	"agentgw/runtime/sandbox"
)

func main() {
	// A runtime child starts as `agentgw sandbox-exec`, which confines
	// itself and execs the tool; it never reaches the commands below.
	sandbox.RunIfHelper()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
