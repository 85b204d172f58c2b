package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"agentgw/app"
)

// backup writes a consistent copy of the configured database to DEST while
// the gateway may be serving (db.Store.Backup, VACUUM INTO). It refuses an
// existing DEST. README says how to restore.
func backup(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("backup", flag.ContinueOnError)
	path := fs.String("config", "", "configuration file")
	pos, err := parse(fs, args, 1, 1)
	if err != nil {
		return err
	}
	if err := requireConfig("backup", *path); err != nil {
		return err
	}
	adm, err := app.OpenAdmin(ctx, *path, os.Stderr)
	if err != nil {
		return err
	}
	defer adm.Close()
	if err := adm.Store.Backup(ctx, pos[0]); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "backed up %s to %s\n", adm.Database(), pos[0])
	return nil
}
