package app

import (
	"context"
	"fmt"
	"io"
	"strings"

	"agentgw/config"
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
	name := target
	if strings.HasPrefix(target, "postgres://") || strings.HasPrefix(target, "postgresql://") {
		name = db.RedactURL(target)
	}
	dst, err := db.Open(ctx, target)
	if err != nil {
		return fmt.Errorf("store copy: target: %w", err)
	}
	defer dst.Close()
	rep, err := db.CopyMCP(ctx, src, dst)
	if err != nil {
		return fmt.Errorf("store copy to %s: %w", name, err)
	}
	var rows int64
	for _, tc := range rep.Tables {
		fmt.Fprintf(out, "%-22s %d\n", tc.Table, tc.Rows)
		rows += tc.Rows
	}
	fmt.Fprintf(out, "copied the mcp state of %s to %s: %d rows, counts checked\n", src.Path(), name, rows)
	return nil
}
