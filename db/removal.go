package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Removal and retention (ProtoXEP "Registration Flow"): an inactive version
// that nothing retains may be removed, and an endpoint may be removed with
// all its versions. Every removed version leaves a permanent tombstone of
// (endpoint, version, hash): the same content may be registered again (a
// restore), different content under that version is ErrConflict forever.
//
// Retention is how the task layer keeps a version alive: it records a hold
// (endpoint, version, holder, retain_until) for every task or result that
// depends on the version, and removal is refused while a hold is in force.
// A hold lapses at retain_until; lapsed holds are pruned when the version is
// removed.

// Errors of the removal methods, wrapped with context. Both mean the version
// or endpoint is in use; the protocol answers <conflict/> for either.
var (
	// ErrActive means RemoveVersion named the endpoint's active version.
	ErrActive = errors.New("version is active")
	// ErrRetained means a task or result still retains the version.
	ErrRetained = errors.New("version is retained")
	// ErrRemoved means a registration offered other content than the
	// removed content under a tombstoned version. It wraps ErrConflict.
	ErrRemoved = fmt.Errorf("removed version: %w", ErrConflict)
)

// Tombstone records that a version was removed, and with which content.
type Tombstone struct {
	JID     string
	Version string
	// Hash is the SHA-256 of the removed canonical manifest: the only
	// content that version may ever hold again.
	Hash [32]byte
	// RemovedAt is when the version was last removed.
	RemovedAt time.Time
}

// Registration is an endpoint's status together with what its removal
// depends on, read in one transaction.
type Registration struct {
	EndpointStatus
	// Retained holds the versions that a hold in force retains.
	Retained map[string]bool
}

// Removable reports whether RemoveVersion would remove version: it must be
// registered, inactive and not retained.
func (r *Registration) Removable(version string) bool {
	if version == r.Active || r.Retained[version] {
		return false
	}
	for _, v := range r.Versions {
		if v.Version == version {
			return true
		}
	}
	return false
}

// RemoveVersion removes one inactive, unretained version and records its
// tombstone. An unknown endpoint or version is ErrNotFound, the active
// version is ErrActive, and a retained one is ErrRetained. The endpoint
// itself stays, even without versions; RemoveEndpoint removes it.
func (s *Store) RemoveVersion(ctx context.Context, jid, version string) error {
	tx, err := s.beginWrite(ctx)
	if err != nil {
		return fmt.Errorf("db: remove version: %w", err)
	}
	defer tx.rollback()
	var active string
	err = tx.queryRow(ctx, "SELECT version FROM active_endpoint WHERE jid = ?", jid).Scan(&active)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("db: remove version %s of %s: %w", version, jid, err)
	}
	if err := requireVersion(ctx, tx, jid, version); err != nil {
		return err
	}
	if version == active {
		return fmt.Errorf("db: remove version %s of %s: %w", version, jid, ErrActive)
	}
	if err := removeVersions(ctx, tx, jid, []string{version}); err != nil {
		return err
	}
	if err := tx.commit(); err != nil {
		return fmt.Errorf("db: remove version: %w", err)
	}
	return nil
}

// RemoveEndpoint deactivates the endpoint, removes every version with a
// tombstone each, and deletes the endpoint with its presence subscriptions
// and its chat state (consent, blocks, outbox and queue), so that an
// endpoint made again under the same JID starts with none of it.
// Nothing is removed if any version is retained (ErrRetained). An unknown
// endpoint is ErrNotFound.
func (s *Store) RemoveEndpoint(ctx context.Context, jid string) error {
	tx, err := s.beginWrite(ctx)
	if err != nil {
		return fmt.Errorf("db: remove endpoint: %w", err)
	}
	defer tx.rollback()
	st, err := endpointStatus(ctx, tx, jid)
	if err != nil {
		return err
	}
	versions := make([]string, len(st.Versions))
	for i, v := range st.Versions {
		versions[i] = v.Version
	}
	// The pointer goes first: it references a version being removed. A
	// DELETE (never a cascade alone) keeps the active_endpoints counter
	// right through its trigger.
	if _, err := tx.exec(ctx, "DELETE FROM active_endpoint WHERE jid = ?", jid); err != nil {
		return fmt.Errorf("db: remove endpoint %s: %w", jid, err)
	}
	if err := removeVersions(ctx, tx, jid, versions); err != nil {
		return err
	}
	if _, err := tx.exec(ctx, "DELETE FROM endpoint WHERE jid = ?", jid); err != nil {
		return fmt.Errorf("db: remove endpoint %s: %w", jid, err)
	}
	if err := deleteChatState(ctx, tx, jid); err != nil {
		return err
	}
	if err := tx.commit(); err != nil {
		return fmt.Errorf("db: remove endpoint: %w", err)
	}
	return nil
}

// RegistrationStatus describes one endpoint and which of its versions are
// retained, or returns ErrNotFound.
func (s *Store) RegistrationStatus(ctx context.Context, jid string) (Registration, error) {
	tx, err := s.beginRead(ctx)
	if err != nil {
		return Registration{}, fmt.Errorf("db: registration status: %w", err)
	}
	defer tx.rollback()
	st, err := endpointStatus(ctx, tx, jid)
	if err != nil {
		return Registration{}, err
	}
	reg := Registration{EndpointStatus: st, Retained: map[string]bool{}}
	rows, err := tx.query(ctx, `SELECT DISTINCT version FROM version_retention
		WHERE endpoint_jid = ? AND retain_until > ?`, jid, millis(tx.now))
	if err != nil {
		return Registration{}, fmt.Errorf("db: retained versions of %s: %w", jid, err)
	}
	defer rows.Close()
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return Registration{}, fmt.Errorf("db: retained versions of %s: %w", jid, err)
		}
		reg.Retained[v] = true
	}
	if err := rows.Err(); err != nil {
		return Registration{}, fmt.Errorf("db: retained versions of %s: %w", jid, err)
	}
	if err := tx.commit(); err != nil {
		return Registration{}, fmt.Errorf("db: registration status: %w", err)
	}
	return reg, nil
}

// Tombstones lists the endpoint's removed versions in version order. The
// endpoint need not exist any more: tombstones outlive it.
func (s *Store) Tombstones(ctx context.Context, jid string) ([]Tombstone, error) {
	tx, err := s.beginRead(ctx)
	if err != nil {
		return nil, fmt.Errorf("db: tombstones: %w", err)
	}
	defer tx.rollback()
	rows, err := tx.query(ctx, `SELECT version, hash, removed_at FROM version_tombstone
		WHERE endpoint_jid = ? ORDER BY version`, jid)
	if err != nil {
		return nil, fmt.Errorf("db: tombstones of %s: %w", jid, err)
	}
	defer rows.Close()
	var out []Tombstone
	for rows.Next() {
		ts := Tombstone{JID: jid}
		var hash []byte
		var removed int64
		if err := rows.Scan(&ts.Version, &hash, &removed); err != nil {
			return nil, fmt.Errorf("db: tombstones of %s: %w", jid, err)
		}
		if ts.Hash, err = scanHash(hash); err != nil {
			return nil, fmt.Errorf("db: tombstones of %s: %w", jid, err)
		}
		ts.RemovedAt = fromMillis(removed)
		out = append(out, ts)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("db: tombstones of %s: %w", jid, err)
	}
	if err := tx.commit(); err != nil {
		return nil, fmt.Errorf("db: tombstones: %w", err)
	}
	return out, nil
}

// RetainVersion records that holder (for example "task:ID") depends on a
// version until the instant until, or moves an existing hold of that holder
// to until. While a hold is in force the version cannot be removed. An
// unknown version is ErrNotFound.
func (s *Store) RetainVersion(ctx context.Context, jid, version, holder string, until time.Time) error {
	if holder == "" {
		return fmt.Errorf("db: retain version %s of %s: empty holder", version, jid)
	}
	tx, err := s.beginWrite(ctx)
	if err != nil {
		return fmt.Errorf("db: retain version: %w", err)
	}
	defer tx.rollback()
	if err := requireVersion(ctx, tx, jid, version); err != nil {
		return err
	}
	if _, err := tx.exec(ctx, `INSERT INTO version_retention (endpoint_jid, version, holder, retain_until)
		VALUES (?, ?, ?, ?)
		ON CONFLICT (endpoint_jid, version, holder) DO UPDATE SET retain_until = excluded.retain_until`,
		jid, version, holder, millis(until)); err != nil {
		return fmt.Errorf("db: retain version %s of %s: %w", version, jid, err)
	}
	if err := tx.commit(); err != nil {
		return fmt.Errorf("db: retain version: %w", err)
	}
	return nil
}

// ReleaseVersion drops holder's hold on a version. Releasing a hold that
// does not exist succeeds.
func (s *Store) ReleaseVersion(ctx context.Context, jid, version, holder string) error {
	tx, err := s.beginWrite(ctx)
	if err != nil {
		return fmt.Errorf("db: release version: %w", err)
	}
	defer tx.rollback()
	if _, err := tx.exec(ctx, `DELETE FROM version_retention
		WHERE endpoint_jid = ? AND version = ? AND holder = ?`, jid, version, holder); err != nil {
		return fmt.Errorf("db: release version %s of %s: %w", version, jid, err)
	}
	if err := tx.commit(); err != nil {
		return fmt.Errorf("db: release version: %w", err)
	}
	return nil
}

// VersionRetained reports whether a hold in force retains the version.
func (s *Store) VersionRetained(ctx context.Context, jid, version string) (bool, error) {
	tx, err := s.beginRead(ctx)
	if err != nil {
		return false, fmt.Errorf("db: version retained: %w", err)
	}
	defer tx.rollback()
	retained, err := versionRetained(ctx, tx, jid, version)
	if err != nil {
		return false, err
	}
	if err := tx.commit(); err != nil {
		return false, fmt.Errorf("db: version retained: %w", err)
	}
	return retained, nil
}

// versionRetained reports whether a hold on the version lasts beyond the
// transaction's instant, or a task not yet purged pinned it.
func versionRetained(ctx context.Context, tx *txn, jid, version string) (bool, error) {
	var one int
	err := tx.queryRow(ctx, `SELECT 1 FROM version_retention
			WHERE endpoint_jid = ? AND version = ? AND retain_until > ?
		UNION ALL
		SELECT 1 FROM task WHERE target = ? AND api_version = ?
		LIMIT 1`,
		jid, version, millis(tx.now), jid, version).Scan(&one)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("db: retention of %s %s: %w", jid, version, err)
	}
	return true, nil
}

// requireVersion returns ErrNotFound unless the version is registered.
func requireVersion(ctx context.Context, tx *txn, jid, version string) error {
	var one int
	err := tx.queryRow(ctx, `SELECT 1 FROM manifest_version
		WHERE endpoint_jid = ? AND version = ?`, jid, version).Scan(&one)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		if err := requireEndpoint(ctx, tx, jid); err != nil {
			return err
		}
		return fmt.Errorf("db: no version %s of %s: %w", version, jid, ErrNotFound)
	case err != nil:
		return fmt.Errorf("db: look up version %s of %s: %w", version, jid, err)
	}
	return nil
}

// removeVersions checks that no version is retained, then tombstones and
// deletes each one. Lapsed holds are pruned first; the foreign key from
// version_retention would refuse the delete otherwise, which also makes the
// database itself refuse to drop a version a hold still names.
func removeVersions(ctx context.Context, tx *txn, jid string, versions []string) error {
	for _, v := range versions {
		retained, err := versionRetained(ctx, tx, jid, v)
		if err != nil {
			return err
		}
		if retained {
			return fmt.Errorf("db: remove version %s of %s: %w", v, jid, ErrRetained)
		}
	}
	for _, v := range versions {
		if _, err := tx.exec(ctx, `DELETE FROM version_retention
			WHERE endpoint_jid = ? AND version = ? AND retain_until <= ?`, jid, v, millis(tx.now)); err != nil {
			return fmt.Errorf("db: remove version %s of %s: %w", v, jid, err)
		}
		// A restored version is removed again under its first tombstone,
		// whose hash checkTombstone has already proved equal.
		if _, err := tx.exec(ctx, `INSERT INTO version_tombstone (endpoint_jid, version, hash, removed_at)
			SELECT endpoint_jid, version, hash, ? FROM manifest_version
			WHERE endpoint_jid = ? AND version = ?
			ON CONFLICT (endpoint_jid, version) DO UPDATE SET removed_at = excluded.removed_at`,
			millis(tx.now), jid, v); err != nil {
			return fmt.Errorf("db: tombstone version %s of %s: %w", v, jid, err)
		}
		if _, err := tx.exec(ctx, `DELETE FROM manifest_version
			WHERE endpoint_jid = ? AND version = ?`, jid, v); err != nil {
			return fmt.Errorf("db: remove version %s of %s: %w", v, jid, err)
		}
	}
	return nil
}

// checkTombstone refuses to register content under a removed version unless
// it is the content that was removed: a tombstone is permanent.
func checkTombstone(ctx context.Context, tx *txn, v *Version) error {
	var stored []byte
	err := tx.queryRow(ctx, `SELECT hash FROM version_tombstone
		WHERE endpoint_jid = ? AND version = ?`, v.JID, v.Version).Scan(&stored)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil
	case err != nil:
		return fmt.Errorf("db: tombstone of %s %s: %w", v.JID, v.Version, err)
	case string(stored) != string(v.Hash[:]):
		return fmt.Errorf("db: version %s of %s was removed and may only be restored with identical content: %w", v.Version, v.JID, ErrRemoved)
	}
	return nil
}
