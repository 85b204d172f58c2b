package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"
)

// Origins of an endpoint: who first registered it.
const (
	// OriginAdmin is an endpoint created by an operator (CLI or import).
	OriginAdmin = "admin"
	// OriginBuiltin is an endpoint the gateway provides itself.
	OriginBuiltin = "builtin"
	// OriginSelf is an agent that registered its own manifest.
	OriginSelf = "self"
	// OriginMCP is an endpoint fronting an MCP server.
	OriginMCP = "mcp"
)

// Version is one immutable manifest version of an endpoint.
type Version struct {
	// JID is the endpoint's normalized bare JID; normalizing is the
	// caller's job.
	JID string
	// Version is the manifest's version string.
	Version string
	// Hash is the SHA-256 of Canonical.
	Hash [32]byte
	// Canonical is the canonical manifest bytes.
	Canonical []byte
	// Name, Title and Description are copied from the manifest.
	Name, Title, Description string
	// CreatedAt is when the version was first registered. The store sets
	// it; RegisterVersion ignores the value passed in.
	CreatedAt time.Time
}

// displayName is what a directory lists for the version.
func (v *Version) displayName() string {
	if v.Title != "" {
		return v.Title
	}
	return v.Name
}

// VersionInfo summarizes one version in an EndpointStatus.
type VersionInfo struct {
	Version   string
	Hash      [32]byte
	CreatedAt time.Time
}

// EndpointStatus describes an endpoint and all its versions.
type EndpointStatus struct {
	JID    string
	Origin string
	// Active is the active version, or "" if the endpoint is inactive.
	Active string
	// Versions holds every registered version, ordered by the bytes of
	// the version string (so "1.10" sorts before "1.9").
	Versions  []VersionInfo
	CreatedAt time.Time
}

// RegisterVersion stores an immutable version, creating the endpoint row with
// origin if needed; an existing endpoint keeps its origin. Registering
// identical content (same hash) again returns created=false and no error; the
// same version with a different hash is ErrConflict, and so is content other
// than the removed content under a tombstoned version (see RemoveVersion).
func (s *Store) RegisterVersion(ctx context.Context, v Version, origin string) (created bool, err error) {
	return s.RegisterVersionWithin(ctx, v, origin, 0)
}

// ImportVersions is the bulk path: it registers every version in one
// transaction, with origin admin for new endpoints, and if activate is set
// points each endpoint at its last version in vs. Versions already stored
// with the same content are skipped; any conflict or other error aborts the
// whole import and nothing is written. A non-zero CreatedAt is kept, so an
// export re-imports faithfully; a zero one becomes the transaction's instant.
// It runs each statement prepared once, so 100,000 versions take seconds
// where RegisterVersion and Activate would take two durable commits each.
func (s *Store) ImportVersions(ctx context.Context, vs []Version, activate bool) error {
	for i := range vs {
		if err := validateVersion(&vs[i], OriginAdmin); err != nil {
			return err
		}
	}
	tx, err := s.beginWrite(ctx)
	if err != nil {
		return fmt.Errorf("db: import versions: %w", err)
	}
	defer tx.rollback()
	last := make(map[string]int, len(vs))
	for i := range vs {
		at := tx.now
		if !vs[i].CreatedAt.IsZero() {
			at = vs[i].CreatedAt
		}
		if _, err := registerVersion(ctx, tx, &vs[i], OriginAdmin, at); err != nil {
			return err
		}
		last[vs[i].JID] = i
	}
	if activate {
		// Activate in input order so the result does not depend on map
		// iteration order.
		for i := range vs {
			if last[vs[i].JID] != i {
				continue
			}
			h := vs[i].Hash
			if err := activateVersion(ctx, tx, vs[i].JID, vs[i].Version, &h); err != nil {
				return err
			}
		}
	}
	if err := tx.commit(); err != nil {
		return fmt.Errorf("db: import versions: %w", err)
	}
	return nil
}

// Activate points the endpoint at one of its stored versions. If hash is not
// nil it must equal the version's stored hash, else ErrHashMismatch. An
// unknown endpoint or version is ErrNotFound. Activating the version that is
// already active changes nothing.
func (s *Store) Activate(ctx context.Context, jid, version string, hash *[32]byte) error {
	tx, err := s.beginWrite(ctx)
	if err != nil {
		return fmt.Errorf("db: activate: %w", err)
	}
	defer tx.rollback()
	if err := activateVersion(ctx, tx, jid, version, hash); err != nil {
		return err
	}
	if err := tx.commit(); err != nil {
		return fmt.Errorf("db: activate: %w", err)
	}
	return nil
}

// Deactivate removes the endpoint's active-version pointer, hiding it from
// the directory. An unknown endpoint is ErrNotFound; deactivating an inactive
// endpoint succeeds and changes nothing.
func (s *Store) Deactivate(ctx context.Context, jid string) error {
	tx, err := s.beginWrite(ctx)
	if err != nil {
		return fmt.Errorf("db: deactivate: %w", err)
	}
	defer tx.rollback()
	if err := requireEndpoint(ctx, tx, jid); err != nil {
		return err
	}
	if _, err := tx.exec(ctx, "DELETE FROM active_endpoint WHERE jid = ?", jid); err != nil {
		return fmt.Errorf("db: deactivate %s: %w", jid, err)
	}
	if err := tx.commit(); err != nil {
		return fmt.Errorf("db: deactivate: %w", err)
	}
	return nil
}

// Status describes one endpoint, or returns ErrNotFound.
func (s *Store) Status(ctx context.Context, jid string) (EndpointStatus, error) {
	tx, err := s.beginRead(ctx)
	if err != nil {
		return EndpointStatus{}, fmt.Errorf("db: status: %w", err)
	}
	defer tx.rollback()
	st, err := endpointStatus(ctx, tx, jid)
	if err != nil {
		return EndpointStatus{}, err
	}
	if err := tx.commit(); err != nil {
		return EndpointStatus{}, fmt.Errorf("db: status: %w", err)
	}
	return st, nil
}

// Endpoints describes every endpoint, active or not, ordered by JID.
func (s *Store) Endpoints(ctx context.Context) ([]EndpointStatus, error) {
	tx, err := s.beginRead(ctx)
	if err != nil {
		return nil, fmt.Errorf("db: endpoints: %w", err)
	}
	defer tx.rollback()
	all, err := allEndpoints(ctx, tx)
	if err != nil {
		return nil, err
	}
	if err := tx.commit(); err != nil {
		return nil, fmt.Errorf("db: endpoints: %w", err)
	}
	return all, nil
}

// ActiveVersion returns the endpoint's active version. It returns ErrNotFound
// if the endpoint does not exist or is inactive; the two are deliberately
// indistinguishable.
func (s *Store) ActiveVersion(ctx context.Context, jid string) (Version, error) {
	tx, err := s.beginRead(ctx)
	if err != nil {
		return Version{}, fmt.Errorf("db: active version: %w", err)
	}
	defer tx.rollback()
	row := tx.queryRow(ctx, activeVersionQuery, jid)
	v, err := scanVersion(row)
	if errors.Is(err, sql.ErrNoRows) {
		return Version{}, fmt.Errorf("db: no active version of %s: %w", jid, ErrNotFound)
	} else if err != nil {
		return Version{}, fmt.Errorf("db: active version of %s: %w", jid, err)
	}
	if err := tx.commit(); err != nil {
		return Version{}, fmt.Errorf("db: active version: %w", err)
	}
	return v, nil
}

// activeVersionQuery is ActiveVersion's query. No answer reads it: they
// take the version from the summary and its bytes by exact key
// (versionQuery), so that version and bytes come from one decision.
const activeVersionQuery = `SELECT m.endpoint_jid, m.version, m.hash, m.canonical,
		m.name, m.title, m.description, m.created_at
	FROM active_endpoint AS a
	JOIN manifest_version AS m ON m.endpoint_jid = a.jid AND m.version = a.version
	WHERE a.jid = ?`

// versionQuery is Version's query: every manifest, schema or tool node
// that names a version (or misses the parsed cache) reads by it, so it is
// one of the hot reads prepared once (hotReads).
const versionQuery = `SELECT endpoint_jid, version, hash, canonical,
		name, title, description, created_at
	FROM manifest_version
	WHERE endpoint_jid = ? AND version = ?`

// Version returns one stored version, active or not, or ErrNotFound.
func (s *Store) Version(ctx context.Context, jid, version string) (Version, error) {
	tx, err := s.beginRead(ctx)
	if err != nil {
		return Version{}, fmt.Errorf("db: version: %w", err)
	}
	defer tx.rollback()
	row := tx.queryRow(ctx, versionQuery, jid, version)
	v, err := scanVersion(row)
	if errors.Is(err, sql.ErrNoRows) {
		return Version{}, fmt.Errorf("db: no version %s of %s: %w", version, jid, ErrNotFound)
	} else if err != nil {
		return Version{}, fmt.Errorf("db: version %s of %s: %w", version, jid, err)
	}
	if err := tx.commit(); err != nil {
		return Version{}, fmt.Errorf("db: version: %w", err)
	}
	return v, nil
}

// validateVersion rejects what the schema would reject, with a clearer error,
// and what would break ordering: directory paging bounds rely on JIDs being
// valid UTF-8 (see directory.go).
func validateVersion(v *Version, origin string) error {
	switch {
	case v.JID == "" || !utf8.ValidString(v.JID):
		return fmt.Errorf("db: invalid endpoint jid %q", v.JID)
	case v.Version == "":
		return fmt.Errorf("db: empty version for %s", v.JID)
	case len(v.Canonical) == 0:
		return fmt.Errorf("db: empty canonical manifest for version %s of %s", v.Version, v.JID)
	}
	switch origin {
	case OriginAdmin, OriginBuiltin, OriginSelf, OriginMCP:
		return nil
	}
	return fmt.Errorf("db: unknown endpoint origin %q", origin)
}

// registerVersion inserts the endpoint if missing and then the version unless
// the same content is already stored; rows it creates are dated at.
func registerVersion(ctx context.Context, tx *txn, v *Version, origin string, at time.Time) (bool, error) {
	if _, err := tx.exec(ctx, `INSERT INTO endpoint (jid, origin, created_at)
		VALUES (?, ?, ?) ON CONFLICT (jid) DO NOTHING`,
		v.JID, origin, millis(at)); err != nil {
		return false, fmt.Errorf("db: register endpoint %s: %w", v.JID, err)
	}
	var stored []byte
	err := tx.queryRow(ctx, `SELECT hash FROM manifest_version
		WHERE endpoint_jid = ? AND version = ?`, v.JID, v.Version).Scan(&stored)
	switch {
	case err == nil:
		if string(stored) == string(v.Hash[:]) {
			return false, nil
		}
		return false, fmt.Errorf("db: version %s of %s is registered with different content: %w", v.Version, v.JID, ErrConflict)
	case !errors.Is(err, sql.ErrNoRows):
		return false, fmt.Errorf("db: register version %s of %s: %w", v.Version, v.JID, err)
	}
	if err := checkTombstone(ctx, tx, v); err != nil {
		return false, err
	}
	if _, err := tx.exec(ctx, `INSERT INTO manifest_version
		(endpoint_jid, version, hash, canonical, name, title, description, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		v.JID, v.Version, v.Hash[:], v.Canonical, v.Name, v.Title, v.Description, millis(at)); err != nil {
		return false, fmt.Errorf("db: register version %s of %s: %w", v.Version, v.JID, err)
	}
	return true, nil
}

// activateVersion sets the active-version pointer. It INSERTs when the
// endpoint was inactive and UPDATEs when switching versions, so that the
// active_endpoints counter triggers count each endpoint once.
func activateVersion(ctx context.Context, tx *txn, jid, version string, hash *[32]byte) error {
	var stored []byte
	var v Version
	err := tx.queryRow(ctx, `SELECT hash, name, title FROM manifest_version
		WHERE endpoint_jid = ? AND version = ?`, jid, version).Scan(&stored, &v.Name, &v.Title)
	if errors.Is(err, sql.ErrNoRows) {
		if err := requireEndpoint(ctx, tx, jid); err != nil {
			return err
		}
		return fmt.Errorf("db: no version %s of %s: %w", version, jid, ErrNotFound)
	} else if err != nil {
		return fmt.Errorf("db: activate %s %s: %w", jid, version, err)
	}
	if hash != nil && string(stored) != string(hash[:]) {
		return fmt.Errorf("db: hash does not select version %s of %s: %w", version, jid, ErrHashMismatch)
	}

	var current string
	err = tx.queryRow(ctx, "SELECT version FROM active_endpoint WHERE jid = ?", jid).Scan(&current)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		_, err = tx.exec(ctx, `INSERT INTO active_endpoint (jid, version, display_name, activated_at)
			VALUES (?, ?, ?, ?)`, jid, version, v.displayName(), millis(tx.now))
	case err != nil:
	case current == version:
		return nil
	default:
		_, err = tx.exec(ctx, `UPDATE active_endpoint
			SET version = ?, display_name = ?, activated_at = ?
			WHERE jid = ?`, version, v.displayName(), millis(tx.now), jid)
	}
	if err != nil {
		return fmt.Errorf("db: activate %s %s: %w", jid, version, err)
	}
	return nil
}

// requireEndpoint returns ErrNotFound unless the endpoint exists.
func requireEndpoint(ctx context.Context, tx *txn, jid string) error {
	var one int
	err := tx.queryRow(ctx, "SELECT 1 FROM endpoint WHERE jid = ?", jid).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("db: no endpoint %s: %w", jid, ErrNotFound)
	} else if err != nil {
		return fmt.Errorf("db: look up endpoint %s: %w", jid, err)
	}
	return nil
}

// endpointStatus reads one endpoint and its versions.
func endpointStatus(ctx context.Context, tx *txn, jid string) (EndpointStatus, error) {
	st := EndpointStatus{JID: jid}
	var created int64
	err := tx.queryRow(ctx, `SELECT e.origin, e.created_at, coalesce(a.version, '')
		FROM endpoint AS e
		LEFT JOIN active_endpoint AS a ON a.jid = e.jid
		WHERE e.jid = ?`, jid).Scan(&st.Origin, &created, &st.Active)
	if errors.Is(err, sql.ErrNoRows) {
		return EndpointStatus{}, fmt.Errorf("db: no endpoint %s: %w", jid, ErrNotFound)
	} else if err != nil {
		return EndpointStatus{}, fmt.Errorf("db: status of %s: %w", jid, err)
	}
	st.CreatedAt = fromMillis(created)

	rows, err := tx.query(ctx, `SELECT version, hash, created_at FROM manifest_version
		WHERE endpoint_jid = ? ORDER BY version`, jid)
	if err != nil {
		return EndpointStatus{}, fmt.Errorf("db: versions of %s: %w", jid, err)
	}
	defer rows.Close()
	for rows.Next() {
		vi, err := scanVersionInfo(rows)
		if err != nil {
			return EndpointStatus{}, fmt.Errorf("db: versions of %s: %w", jid, err)
		}
		st.Versions = append(st.Versions, vi)
	}
	if err := rows.Err(); err != nil {
		return EndpointStatus{}, fmt.Errorf("db: versions of %s: %w", jid, err)
	}
	return st, nil
}

// allEndpoints reads every endpoint, then every version in the same order,
// and merges the two sorted lists.
func allEndpoints(ctx context.Context, tx *txn) ([]EndpointStatus, error) {
	rows, err := tx.query(ctx, `SELECT e.jid, e.origin, e.created_at, coalesce(a.version, '')
		FROM endpoint AS e
		LEFT JOIN active_endpoint AS a ON a.jid = e.jid
		ORDER BY e.jid`)
	if err != nil {
		return nil, fmt.Errorf("db: endpoints: %w", err)
	}
	defer rows.Close()
	var all []EndpointStatus
	for rows.Next() {
		var st EndpointStatus
		var created int64
		if err := rows.Scan(&st.JID, &st.Origin, &created, &st.Active); err != nil {
			return nil, fmt.Errorf("db: endpoints: %w", err)
		}
		st.CreatedAt = fromMillis(created)
		all = append(all, st)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("db: endpoints: %w", err)
	}
	rows.Close()

	rows, err = tx.query(ctx, `SELECT endpoint_jid, version, hash, created_at
		FROM manifest_version ORDER BY endpoint_jid, version`)
	if err != nil {
		return nil, fmt.Errorf("db: endpoint versions: %w", err)
	}
	defer rows.Close()
	i := 0
	for rows.Next() {
		var jid string
		var vi VersionInfo
		var hash []byte
		var created int64
		if err := rows.Scan(&jid, &vi.Version, &hash, &created); err != nil {
			return nil, fmt.Errorf("db: endpoint versions: %w", err)
		}
		if vi.Hash, err = scanHash(hash); err != nil {
			return nil, fmt.Errorf("db: endpoint versions: %w", err)
		}
		vi.CreatedAt = fromMillis(created)
		// Both lists are in jid order and every version has an
		// endpoint (foreign key), so advancing i finds its owner.
		for i < len(all) && all[i].JID < jid {
			i++
		}
		if i == len(all) || all[i].JID != jid {
			return nil, fmt.Errorf("db: endpoint versions: version %s of %s has no endpoint", vi.Version, jid)
		}
		all[i].Versions = append(all[i].Versions, vi)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("db: endpoint versions: %w", err)
	}
	return all, nil
}

// scanVersion reads the columns of a full Version, in struct order.
func scanVersion(row *sql.Row) (Version, error) {
	var v Version
	var hash []byte
	var created int64
	if err := row.Scan(&v.JID, &v.Version, &hash, &v.Canonical,
		&v.Name, &v.Title, &v.Description, &created); err != nil {
		return Version{}, err
	}
	h, err := scanHash(hash)
	if err != nil {
		return Version{}, err
	}
	v.Hash = h
	v.CreatedAt = fromMillis(created)
	return v, nil
}

// scanVersionInfo reads version, hash and created_at.
func scanVersionInfo(rows *sql.Rows) (VersionInfo, error) {
	var vi VersionInfo
	var hash []byte
	var created int64
	if err := rows.Scan(&vi.Version, &hash, &created); err != nil {
		return VersionInfo{}, err
	}
	h, err := scanHash(hash)
	if err != nil {
		return VersionInfo{}, err
	}
	vi.Hash = h
	vi.CreatedAt = fromMillis(created)
	return vi, nil
}
