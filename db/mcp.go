package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Imports of mcp endpoints. The gateway owns the manifest of an endpoint
// whose runtime is an MCP server: each import of the server's tool list
// yields a manifest version (derived from its content) and the tools it
// had to leave out, with their reasons. The store keeps, per imported
// version, that skipped list and which import came last, so that an
// unchanged list changes nothing and a changed one is activated.

// SkippedTool is a tool an import left out of the manifest.
type SkippedTool struct {
	// Tool is the tool's name as the server gave it (quoted if it is not
	// printable), or "#N" for one without a usable name.
	Tool string `json:"tool"`
	// Reason names a location and a rule, never a value.
	Reason string `json:"reason"`
}

// Import is what an import of an mcp endpoint's tool list produced.
type Import struct {
	// Version is the manifest version the import yielded.
	Version string
	// Skipped lists the tools left out, in the server's order.
	Skipped []SkippedTool
	// ImportedAt is when an import last yielded this version after
	// yielding another (or for the first time).
	ImportedAt time.Time
	// Latest marks the endpoint's last import.
	Latest bool
}

// ImportOutcome is what RecordImport changed.
type ImportOutcome struct {
	// Registered means the version was not stored before.
	Registered bool
	// Changed means the version differs from the endpoint's last import
	// (or is its first): it is now the last import, and active.
	Changed bool
	// Activated means the active version changed.
	Activated bool
	// Active is the endpoint's active version after the call, "" if it is
	// inactive (an unchanged import leaves a deactivation alone).
	Active string
}

// RecordImport stores one import of an mcp endpoint's tool list in one
// transaction. The version is registered (origin mcp for a new endpoint;
// identical content is not stored twice) and its skipped tools recorded.
// If it is the version of the endpoint's last import, nothing else
// changes, whatever is active: an unchanged list changes nothing, and an
// operator's deactivation or activation stands. Otherwise it becomes the
// last import and is activated.
func (s *Store) RecordImport(ctx context.Context, v Version, skipped []SkippedTool) (ImportOutcome, error) {
	if err := validateVersion(&v, OriginMCP); err != nil {
		return ImportOutcome{}, err
	}
	if skipped == nil {
		skipped = []SkippedTool{}
	}
	list, err := json.Marshal(skipped)
	if err != nil {
		return ImportOutcome{}, fmt.Errorf("db: record import: %w", err)
	}
	tx, err := s.beginWrite(ctx)
	if err != nil {
		return ImportOutcome{}, fmt.Errorf("db: record import: %w", err)
	}
	defer tx.rollback()
	out, err := recordImport(ctx, tx, &v, string(list))
	if err != nil {
		return ImportOutcome{}, err
	}
	if err := tx.commit(); err != nil {
		return ImportOutcome{}, fmt.Errorf("db: record import: %w", err)
	}
	return out, nil
}

func recordImport(ctx context.Context, tx *txn, v *Version, skipped string) (ImportOutcome, error) {
	var out ImportOutcome
	var err error
	if out.Registered, err = registerVersion(ctx, tx, v, OriginMCP, tx.now); err != nil {
		return out, err
	}
	var last, lastSkipped string
	err = tx.queryRow(ctx, `SELECT version, skipped FROM mcp_import
		WHERE endpoint_jid = ? AND latest = 1`, v.JID).Scan(&last, &lastSkipped)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return out, fmt.Errorf("db: last import of %s: %w", v.JID, err)
	}
	active, err := activeOf(ctx, tx, v.JID)
	if err != nil {
		return out, err
	}
	if last == v.Version {
		// The same tools. A changed skipped list (a tool that cannot be
		// imported came or went) is still recorded: status reports it.
		if lastSkipped != skipped {
			if _, err := tx.exec(ctx, `UPDATE mcp_import SET skipped = ?
				WHERE endpoint_jid = ? AND version = ?`, skipped, v.JID, v.Version); err != nil {
				return out, fmt.Errorf("db: record import of %s: %w", v.JID, err)
			}
		}
		out.Active = active
		return out, nil
	}
	out.Changed = true
	if _, err := tx.exec(ctx, `UPDATE mcp_import SET latest = 0
		WHERE endpoint_jid = ? AND latest = 1`, v.JID); err != nil {
		return out, fmt.Errorf("db: record import of %s: %w", v.JID, err)
	}
	if _, err := tx.exec(ctx, `INSERT INTO mcp_import (endpoint_jid, version, skipped, imported_at, latest)
		VALUES (?, ?, ?, ?, 1)
		ON CONFLICT (endpoint_jid, version) DO UPDATE
		SET skipped = excluded.skipped, imported_at = excluded.imported_at, latest = 1`,
		v.JID, v.Version, skipped, millis(tx.now)); err != nil {
		return out, fmt.Errorf("db: record import of %s: %w", v.JID, err)
	}
	if err := activateVersion(ctx, tx, v.JID, v.Version, &v.Hash); err != nil {
		return out, err
	}
	out.Activated = active != v.Version
	out.Active = v.Version
	return out, nil
}

// activeOf returns the endpoint's active version, or "".
func activeOf(ctx context.Context, tx *txn, jid string) (string, error) {
	var active string
	err := tx.queryRow(ctx, "SELECT version FROM active_endpoint WHERE jid = ?", jid).Scan(&active)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("db: active version of %s: %w", jid, err)
	}
	return active, nil
}

// Imports returns the recorded imports of an endpoint, ordered by
// version like EndpointStatus.Versions; none for an endpoint that was
// never imported (or does not exist).
func (s *Store) Imports(ctx context.Context, jid string) ([]Import, error) {
	tx, err := s.beginRead(ctx)
	if err != nil {
		return nil, fmt.Errorf("db: imports: %w", err)
	}
	defer tx.rollback()
	rows, err := tx.query(ctx, `SELECT version, skipped, imported_at, latest FROM mcp_import
		WHERE endpoint_jid = ? ORDER BY version`, jid)
	if err != nil {
		return nil, fmt.Errorf("db: imports of %s: %w", jid, err)
	}
	defer rows.Close()
	var out []Import
	for rows.Next() {
		var (
			imp     Import
			skipped string
			at      int64
		)
		if err := rows.Scan(&imp.Version, &skipped, &at, &imp.Latest); err != nil {
			return nil, fmt.Errorf("db: imports of %s: %w", jid, err)
		}
		if err := json.Unmarshal([]byte(skipped), &imp.Skipped); err != nil {
			return nil, fmt.Errorf("db: imports of %s: skipped tools of %s: %w", jid, imp.Version, err)
		}
		imp.ImportedAt = fromMillis(at)
		out = append(out, imp)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("db: imports of %s: %w", jid, err)
	}
	if err := tx.commit(); err != nil {
		return nil, fmt.Errorf("db: imports: %w", err)
	}
	return out, nil
}
