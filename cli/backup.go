package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
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
	cfg, store, err := openStore(ctx, *path)
	if err != nil {
		return err
	}
	defer store.Close()
	if err := store.Backup(ctx, pos[0]); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "backed up %s to %s\n", cfg.DatabasePath, pos[0])
	return nil
}
