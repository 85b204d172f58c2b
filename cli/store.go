package cli

import (
	"context"
	"flag"
	"fmt"
	"io"

	"agentgw/app"
)

// store runs the store subcommands: copy.
func store(ctx context.Context, sub string, args []string, stdout io.Writer) error {
	if sub != "copy" {
		return fmt.Errorf("%w: store takes the subcommand copy", errUsage)
	}
	fs := flag.NewFlagSet("store copy", flag.ContinueOnError)
	path := fs.String("config", "", "configuration file")
	pos, err := parse(fs, args, 1, 1)
	if err != nil {
		return err
	}
	if err := requireConfig("store copy", *path); err != nil {
		return err
	}
	return app.CopyStore(ctx, *path, pos[0], stdout)
}
