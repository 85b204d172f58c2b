package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// activeSummaryQuery reads an active endpoint without its canonical bytes.
const activeSummaryQuery = `SELECT m.endpoint_jid, m.version, m.hash,
		m.name, m.title, m.description, m.created_at
	FROM active_endpoint AS a
	JOIN manifest_version AS m ON m.endpoint_jid = a.jid AND m.version = a.version
	WHERE a.jid = ?`

// ActiveSummary is ActiveVersion without the canonical bytes (Canonical is
// nil). Its cost does not depend on the manifest's size, so answering "no
// such endpoint" and "hidden endpoint" takes the same time whether the
// manifest is small or a megabyte; read the bytes only for a requester who
// may see them.
//
// It answers from the in-memory index when it can (snapshot.go).
func (s *Store) ActiveSummary(ctx context.Context, jid string) (Version, error) {
	if idx, err := s.snapshot(ctx); err != nil {
		return Version{}, fmt.Errorf("db: active summary: %w", err)
	} else if idx != nil {
		return idx.summary(jid)
	}
	tx, err := s.beginRead(ctx)
	if err != nil {
		return Version{}, fmt.Errorf("db: active summary: %w", err)
	}
	defer tx.rollback()
	var (
		v       Version
		hash    []byte
		created int64
	)
	err = tx.queryRow(ctx, activeSummaryQuery, jid).Scan(&v.JID, &v.Version, &hash, &v.Name, &v.Title, &v.Description, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return Version{}, fmt.Errorf("db: no active version of %s: %w", jid, ErrNotFound)
	} else if err != nil {
		return Version{}, fmt.Errorf("db: active summary of %s: %w", jid, err)
	}
	if v.Hash, err = scanHash(hash); err != nil {
		return Version{}, fmt.Errorf("db: active summary of %s: %w", jid, err)
	}
	v.CreatedAt = fromMillis(created)
	if err := tx.commit(); err != nil {
		return Version{}, fmt.Errorf("db: active summary: %w", err)
	}
	return v, nil
}
