package app

import (
	"context"
	"fmt"
	"io"

	"agentgw/config"
	"agentgw/db"
	"agentgw/db/storecopy"
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
	return copyInto(ctx, adm.Store, target, out, storecopy.Copy,
		"copied "+adm.Database(), "counts, manifest hashes and counters checked")
}

// CopyMCPStore copies the state of `agentgw mcp` (its queue, drop counts
// and MCP tasks) from the store that mcp.database names in the
// configuration at path into target, whose tables of that state must be
// empty: target may already hold a gateway, such as the PostgreSQL
// database of database.url. An old agentgw-mcp.db is converted in place
// first, after a backup, as `agentgw mcp` would.
func CopyMCPStore(ctx context.Context, path, target string, out io.Writer) error {
	cfg, err := config.LoadMCP(path)
	if err != nil {
		return err
	}
	src, err := db.Open(ctx, cfg.MCP.Database)
	if err != nil {
		return fmt.Errorf("mcp.database: %w", err)
	}
	defer src.Close()
	if m := src.Migrated(); m.Backup != "" {
		fmt.Fprintf(out, "migrated %s from schema %d to %d; the copy before is %s\n", src.Path(), m.From, m.To, m.Backup)
	}
	return copyInto(ctx, src, target, out, storecopy.CopyMCP,
		"copied the mcp state of "+src.Path(), "counts checked")
}

// copyInto opens target, copies src into it with copy, and prints the rows
// of each table, then what was copied, to the target's name (without a
// password), the rows in all and what was checked.
func copyInto(ctx context.Context, src *db.Store, target string, out io.Writer,
	copy func(context.Context, *db.Store, *db.Store) (storecopy.Report, error), what, checked string) error {
	name := db.RedactURL(target)
	dst, err := db.Open(ctx, target)
	if err != nil {
		return fmt.Errorf("store copy: target: %w", err)
	}
	defer dst.Close()
	rep, err := copy(ctx, src, dst)
	if err != nil {
		return fmt.Errorf("store copy to %s: %w", name, err)
	}
	var rows int64
	for _, tc := range rep.Tables {
		fmt.Fprintf(out, "%-22s %d\n", tc.Table, tc.Rows)
		rows += tc.Rows
	}
	fmt.Fprintf(out, "%s to %s: %d rows, %s\n", what, name, rows, checked)
	return nil
}
