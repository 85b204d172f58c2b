package api

import (
	"context"
	"encoding/xml"

	"agentgw/db"
	"agentgw/manifest"
	"agentgw/surface"
	"agentgw/wire"
)

// visibleVersion resolves a version of the addressed endpoint for a
// discovery or metadata operation. Visibility comes first and is the
// directory's (hidden, inactive and nonexistent fail with ErrNotFound);
// then an empty version selects the active one, any other must be
// registered. The answer is exactly the version fixed before any bytes are
// read, never "whatever is active now", so a warm tool node costs no read
// and a lagging summary may answer the previous active version but never a
// named one with another (docs/provisioning.md, "Which version answers").
func (s *Service) visibleVersion(ctx context.Context, req Request, version string) (db.Version, error) {
	active, err := s.Dir.EndpointSummary(ctx, req.Policy, req.From, req.To)
	if err != nil {
		return db.Version{}, err
	}
	if version == "" {
		version = active.Version
	}
	if version == active.Version {
		if m, ok := parsedManifests.lookup(active.Hash); ok {
			active.Canonical = m.Canonical
			return active, nil
		}
	}
	v, err := s.Store.Version(ctx, active.JID, version)
	if err != nil {
		return db.Version{}, storeError(err)
	}
	return v, nil
}

// parsed returns the manifest stored as v, from the cache when it can.
func (s *Service) parsed(v db.Version) (*manifest.Manifest, error) {
	m, err := parsedManifests.parse(v.Canonical, v.Hash)
	if err != nil {
		return nil, errInconsistent(v.JID, v.Version, err)
	}
	return m, nil
}

// ManifestRequest answers <manifest-request/> at an endpoint: the active
// version, or the exact version asked for, with its hash and the canonical
// bytes that were hashed.
func (s *Service) ManifestRequest(ctx context.Context, req Request) (xml.TokenReader, error) {
	mr, err := ParseManifestRequest(req.Payload)
	if err != nil {
		return nil, surface.ErrBadRequest
	}
	v, err := s.visibleVersion(ctx, req, mr.Version)
	if err != nil {
		return nil, err
	}
	// Registration refuses what cannot be served; this guards rows written
	// before that rule, which must never reach the wire and cost the stream.
	if wire.EscapedLen(v.Canonical) > MaxServedJSONBytes {
		return nil, surface.ErrResourceConstraint
	}
	return Manifest{Version: v.Version, Hash: wire.Hash(v.Hash), JSON: string(v.Canonical)}.TokenReader(), nil
}

// SchemaRequest answers <schema-request/> at an endpoint. After the
// visibility decision and the version, the pinned manifest hash must select
// the registered object (else <conflict/>); then the tool and the direction
// must exist (else <item-not-found/>).
func (s *Service) SchemaRequest(ctx context.Context, req Request) (xml.TokenReader, error) {
	sr, err := ParseSchemaRequest(req.Payload)
	if err != nil {
		return nil, surface.ErrBadRequest
	}
	v, err := s.visibleVersion(ctx, req, sr.Version)
	if err != nil {
		return nil, err
	}
	if sr.Hash != v.Hash {
		return nil, surface.ErrConflict
	}
	m, err := s.parsed(v)
	if err != nil {
		return nil, err
	}
	t, ok := m.Tool(sr.Tool)
	if !ok {
		return nil, surface.ErrItemNotFound
	}
	schema, digest := t.InputSchema, t.InputHash
	if sr.Direction == DirectionOutput {
		schema, digest = t.OutputSchema, t.OutputHash
	}
	if schema == nil {
		return nil, surface.ErrItemNotFound
	}
	return Schema{
		Tool: t.Name, Version: v.Version, Direction: sr.Direction,
		ManifestHash: wire.Hash(v.Hash), SchemaHash: wire.Hash(digest),
		JSON: string(schema),
	}.TokenReader(), nil
}
