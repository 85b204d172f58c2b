package cli

import (
	"context"
	"flag"
	"fmt"
	"io"

	"agentgw/app"
)

// store runs the store subcommands: copy, of the gateway's store, or
// with -mcp of the state of `agentgw mcp`.
func store(ctx context.Context, sub string, args []string, stdout io.Writer) error {
	if sub != "copy" {
		return fmt.Errorf("%w: store takes the subcommand copy", errUsage)
	}
	fs := flag.NewFlagSet("store copy", flag.ContinueOnError)
	path := fs.String("config", "", "configuration file")
	mcpState := fs.Bool("mcp", false, "copy the state of agentgw mcp from mcp.database alone, into a target whose other tables may hold rows")
	pos, err := parse(fs, args, 1, 1)
	if err != nil {
		return err
	}
	if err := requireConfig("store copy", *path); err != nil {
		return err
	}
	if *mcpState {
		return app.CopyMCPStore(ctx, *path, pos[0], stdout)
	}
	return app.CopyStore(ctx, *path, pos[0], stdout)
}
