// Package storecopy moves a store from one engine to the other: every row
// that is not derived, in one write transaction of the target read from
// one snapshot of the source, then checked (`agentgw store copy`).
package storecopy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"

	"agentgw/db"
	"agentgw/db/internal/storetx"
)

// copyTables are the tables Copy moves, parents first (foreign keys). The
// rest of the schema is derived from them by triggers or by the write
// path (derivedTables), and the target builds its own as the rows arrive.
var copyTables = []string{
	"endpoint",
	"manifest_version",
	"active_endpoint",
	"presence_subscription",
	"version_tombstone",
	"version_retention",
	"mcp_import",
	"task",
	"task_event",
	"task_input",
	"task_lease",
	"task_signal",
	"chat_contact",
	"chat_outbox",
	"chat_queue",
	"mcp_message",
	"mcp_dropped",
	"mcp_task",
}

// derivedTables are not copied: counters and the search index follow the
// copied rows on the target; the generations are the target's own; and
// runtime_process and chat_outbox_claim name processes of the machine the
// store was on. (A task's lease is copied: it lapses on the target, and
// the first gateway there takes the task up as after a restart.)
var derivedTables = []string{
	"stat",
	"search_text",
	"search_gram",
	"search_gram_count",
	"search_pending",
	"search_generation",
	"store_generation",
	"caller_usage",
	"endpoint_count",
	"runtime_process",
	"chat_outbox_claim",
	"agentgw_schema",
}

// Report is what Copy moved: rows per table, in copyTables' order.
type Report struct {
	Tables []TableCount
}

// TableCount is one table's row count.
type TableCount struct {
	Table string
	Rows  int64
}

// ErrNotEmpty means Copy's target already holds rows.
var ErrNotEmpty = fmt.Errorf("db: copy: the target store is not empty")

// Copy copies every row of src that is not derived into dst, which must be
// empty, in one write transaction of dst read from one snapshot of src:
// either engine to either. It then checks dst against src: the row count
// of every table, every manifest version's hash (stored and recomputed
// from its canonical bytes), and the counters the target derived.
// A write to src after the snapshot is not in dst: stop the gateways
// first.
func Copy(ctx context.Context, src, dst *db.Store) (Report, error) {
	return copyStore(ctx, src, dst, copyTables)
}

// mcpTables are the tables of the state of `agentgw mcp` (db/mcpstate).
var mcpTables = []string{"mcp_message", "mcp_dropped", "mcp_task"}

// CopyMCP copies the state of `agentgw mcp` alone (its queue, drop counts
// and MCP tasks) from src into dst, as Copy does, and checks the row
// counts. Only those tables of dst must be empty: dst may be the store of
// a gateway, such as a PostgreSQL database that `[mcp] database` and
// `[database] url` share.
func CopyMCP(ctx context.Context, src, dst *db.Store) (Report, error) {
	return copyStore(ctx, src, dst, mcpTables)
}

// copyStore copies tables, a subsequence of copyTables, from src to dst;
// the manifests and counters are checked when they are copied.
func copyStore(ctx context.Context, src, dst *db.Store, tables []string) (Report, error) {
	var rep Report
	if err := checkEmpty(ctx, dst, tables); err != nil {
		return rep, err
	}
	rt, err := storetx.Of(src).BeginRead(ctx)
	if err != nil {
		return rep, fmt.Errorf("db: copy: %w", err)
	}
	defer rt.Rollback()
	wt, err := storetx.Of(dst).BeginWrite(ctx)
	if err != nil {
		return rep, fmt.Errorf("db: copy: %w", err)
	}
	defer wt.Rollback()
	for _, table := range tables {
		n, err := copyTable(ctx, rt, wt, table)
		if err != nil {
			return rep, fmt.Errorf("db: copy: %s: %w", table, err)
		}
		rep.Tables = append(rep.Tables, TableCount{table, n})
	}
	if err := wt.ResetIdentities(ctx); err != nil {
		return rep, fmt.Errorf("db: copy: %w", err)
	}
	if err := wt.Commit(); err != nil {
		return rep, fmt.Errorf("db: copy: commit: %w", err)
	}
	return rep, verifyCopy(ctx, rt, dst, rep, slices.Contains(tables, "manifest_version"))
}

// checkEmpty fails with ErrNotEmpty if any of tables of s has a row.
func checkEmpty(ctx context.Context, s *db.Store, tables []string) error {
	t, err := storetx.Of(s).BeginRead(ctx)
	if err != nil {
		return fmt.Errorf("db: copy: %w", err)
	}
	defer t.Rollback()
	for _, table := range tables {
		var one int
		err := t.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM `+table+` LIMIT 1) AS one`).Scan(&one)
		if err != nil {
			return fmt.Errorf("db: copy: %s: %w", table, err)
		}
		if one > 0 {
			return fmt.Errorf("%w: %s has rows", ErrNotEmpty, table)
		}
	}
	return nil
}

// copyTable copies table's rows from rt to wt, column by name, in the
// order of its first column.
func copyTable(ctx context.Context, rt, wt storetx.Tx, table string) (int64, error) {
	rows, err := rt.Query(ctx, `SELECT * FROM `+table+` ORDER BY 1`)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return 0, err
	}
	insert := `INSERT INTO ` + table + ` (` + strings.Join(cols, ", ") + `) VALUES (` +
		strings.TrimSuffix(strings.Repeat("?, ", len(cols)), ", ") + `)`
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var n int64
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return n, err
		}
		if _, err := wt.Exec(ctx, insert, vals...); err != nil {
			return n, err
		}
		n++
	}
	return n, rows.Err()
}

// verifyCopy checks dst against the snapshot rt of src: counts, and with
// full the manifest hashes and the counters dst derived.
func verifyCopy(ctx context.Context, rt storetx.Tx, dst *db.Store, rep Report, full bool) error {
	t, err := storetx.Of(dst).BeginRead(ctx)
	if err != nil {
		return fmt.Errorf("db: copy: verify: %w", err)
	}
	defer t.Rollback()
	for _, tc := range rep.Tables {
		var n int64
		if err := t.QueryRow(ctx, `SELECT count(*) FROM `+tc.Table).Scan(&n); err != nil {
			return fmt.Errorf("db: copy: verify: %s: %w", tc.Table, err)
		}
		if n != tc.Rows {
			return fmt.Errorf("db: copy: verify: %s has %d rows, the source %d", tc.Table, n, tc.Rows)
		}
	}
	if !full {
		return nil
	}
	want, err := versionHashes(ctx, rt)
	if err != nil {
		return fmt.Errorf("db: copy: verify: source: %w", err)
	}
	got, err := versionHashes(ctx, t)
	if err != nil {
		return fmt.Errorf("db: copy: verify: %w", err)
	}
	if !slices.EqualFunc(want, got, func(a, b versionHash) bool {
		return a.jid == b.jid && a.version == b.version && a.hash == b.hash
	}) {
		return fmt.Errorf("db: copy: verify: the manifest versions differ from the source's")
	}
	t.Rollback()
	drift, err := dst.CheckCounters(ctx)
	if err != nil {
		return fmt.Errorf("db: copy: verify: %w", err)
	}
	if len(drift) > 0 {
		return fmt.Errorf("db: copy: verify: counters differ: %s", strings.Join(drift, "; "))
	}
	return nil
}

// versionHash is one manifest version's identity and stored hash.
type versionHash struct {
	jid, version string
	hash         [32]byte
}

// versionHashes lists every manifest version with its stored hash, after
// checking the hash against the canonical bytes it was made from.
func versionHashes(ctx context.Context, t storetx.Tx) ([]versionHash, error) {
	rows, err := t.Query(ctx, `SELECT endpoint_jid, version, hash, canonical FROM manifest_version ORDER BY endpoint_jid, version`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []versionHash
	for rows.Next() {
		var v versionHash
		var hash, canonical []byte
		if err := rows.Scan(&v.jid, &v.version, &hash, &canonical); err != nil {
			return nil, err
		}
		sum := sha256.Sum256(canonical)
		if !bytes.Equal(hash, sum[:]) {
			return nil, fmt.Errorf("%s %s: the stored hash is not its manifest's", v.jid, v.version)
		}
		v.hash = sum
		out = append(out, v)
	}
	return out, rows.Err()
}
