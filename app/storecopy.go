package app

import (
	"context"
	"fmt"
	"io"
	"strings"

	"agentgw/db"
)

// CopyStore copies the store the configuration at path names into the
// empty store at target (a SQLite path or a postgres:// URL), checks the
// copy, and says on out what it moved. It refuses a target that holds
// rows.
func CopyStore(ctx context.Context, path, target string, out io.Writer) error {
	adm, err := OpenAdmin(ctx, path, out)
	if err != nil {
		return err
	}
	defer adm.Close()
	name := target
	if strings.HasPrefix(target, "postgres://") || strings.HasPrefix(target, "postgresql://") {
		name = db.RedactURL(target)
	}
	dst, err := db.Open(ctx, target)
	if err != nil {
		return fmt.Errorf("store copy: target: %w", err)
	}
	defer dst.Close()
	rep, err := db.Copy(ctx, adm.Store, dst)
	if err != nil {
		return fmt.Errorf("store copy to %s: %w", name, err)
	}
	var rows int64
	for _, tc := range rep.Tables {
		fmt.Fprintf(out, "%-22s %d\n", tc.Table, tc.Rows)
		rows += tc.Rows
	}
	fmt.Fprintf(out, "copied %s to %s: %d rows, counts, manifest hashes and counters checked\n", adm.Database(), name, rows)
	return nil
}
