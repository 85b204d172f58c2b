package api

import (
	"context"
	"encoding/xml"
	"errors"

	"agentgw/db"
	"agentgw/manifest"
	"agentgw/policy"
	"agentgw/surface"
	"agentgw/wire"

	"mellium.im/xmpp/jid"
)

// selfRegistrant reports whether from may use self-registration at all:
// the policy enables it and from is an account of a local domain. Federation
// never grants it, and neither does the component domain, whose JIDs are
// virtual endpoints, never accounts.
func (s *Service) selfRegistrant(p *policy.Policy, from jid.JID) bool {
	return p != nil && p.SelfRegister && from.Localpart() != "" &&
		from.Domainpart() != s.Domain.Domainpart() && p.IsLocal(from)
}

// Register answers <register/> at the gateway JID. An admin registers a
// virtual endpoint (agent.jid under the component domain, origin admin); a
// self-registrant registers its own account (agent.jid equal to its bare
// JID, origin self). Anyone else is forbidden before the manifest is read.
// Registering identical content again is idempotent and answers the same
// <registered/>; other content under a registered or removed version is
// <conflict/>.
func (s *Service) Register(ctx context.Context, req Request) (xml.TokenReader, error) {
	admin := req.Policy.IsAdmin(req.From)
	self := s.selfRegistrant(req.Policy, req.From)
	if !admin && !self {
		return nil, surface.ErrForbidden
	}
	r, err := ParseRegister(req.Payload)
	if err != nil {
		return nil, surface.ErrBadRequest
	}
	// The domain rule depends on the path, which depends on agent.jid:
	// parse without it, then apply the path's rule.
	m, err := manifest.Parse([]byte(r.Manifest), manifest.Options{})
	if err != nil {
		return nil, manifestError(err)
	}
	endpoint, err := jid.Parse(m.JID)
	if err != nil {
		return nil, err // Parse returned it normalized: a local fault
	}
	var origin string
	switch {
	case admin && endpoint.Domainpart() == s.Domain.Domainpart():
		origin = db.OriginAdmin
	case self && m.JID == req.From.Bare().String():
		origin = db.OriginSelf
	case admin:
		// An admin provisions virtual endpoints only: an account's
		// manifest is registered by that account.
		return nil, surface.ErrNotAcceptable
	default:
		return nil, surface.ErrForbidden
	}
	if err := CheckServable(m); err != nil {
		return nil, manifestError(err)
	}
	// A self-registrant's versions are bounded (MaxSelfVersions); an
	// identical re-registration always passes.
	max := 0
	if origin == db.OriginSelf {
		max = s.MaxSelfVersions
	}
	if _, err := s.Store.RegisterVersionWithin(ctx, versionOf(m), origin, max); err != nil {
		return nil, storeError(err)
	}
	return Registered{JID: m.JID, Version: m.Version, Hash: wire.Hash(m.Hash)}.TokenReader(), nil
}

// authorize decides a provisioning operation on the endpoint named by the
// payload's jid attribute. Admins may do anything; when owner is set, the
// account that self-registered the endpoint may act on it too. Everyone else
// is forbidden, whatever the rest of the payload says.
func (s *Service) authorize(ctx context.Context, req Request, owner bool) error {
	if req.Policy.IsAdmin(req.From) {
		return nil
	}
	if !owner || !s.selfRegistrant(req.Policy, req.From) {
		return surface.ErrForbidden
	}
	attr, _ := req.Payload.AttrValue("jid")
	endpoint, err := parseEndpointJID(attr)
	if err != nil || endpoint != req.From.Bare().String() {
		return surface.ErrForbidden
	}
	st, err := s.Store.Status(ctx, endpoint)
	switch {
	case errors.Is(err, db.ErrNotFound):
		return surface.ErrForbidden
	case err != nil:
		return err
	case st.Origin != db.OriginSelf:
		return surface.ErrForbidden
	}
	return nil
}

// Activate answers <activate/>: select a registered version after checking
// the hash child against it (<conflict/> if it does not match).
func (s *Service) Activate(ctx context.Context, req Request) (xml.TokenReader, error) {
	if err := s.authorize(ctx, req, true); err != nil {
		return nil, err
	}
	a, err := ParseActivate(req.Payload)
	if err != nil {
		return nil, surface.ErrBadRequest
	}
	endpoint, err := parseEndpointJID(a.JID)
	if err != nil {
		return nil, surface.ErrBadRequest
	}
	digest := [32]byte(a.Hash)
	if err := s.Store.Activate(ctx, endpoint, a.Version, &digest); err != nil {
		return nil, storeError(err)
	}
	return Active{JID: endpoint, Version: a.Version}.TokenReader(), nil
}

// Deactivate answers <deactivate/>: remove the active-version pointer and
// keep every manifest.
func (s *Service) Deactivate(ctx context.Context, req Request) (xml.TokenReader, error) {
	endpoint, err := s.endpointOp(ctx, req, NameDeactivate, true)
	if err != nil {
		return nil, err
	}
	if err := s.Store.Deactivate(ctx, endpoint); err != nil {
		return nil, storeError(err)
	}
	return EndpointOp{Name: NameDeactivated, JID: endpoint}.TokenReader(), nil
}

// RegistrationStatus answers <registration-status/>: every registered
// version with its hash, whether it is active, and whether it is removable.
func (s *Service) RegistrationStatus(ctx context.Context, req Request) (xml.TokenReader, error) {
	endpoint, err := s.endpointOp(ctx, req, NameRegistrationStatus, true)
	if err != nil {
		return nil, err
	}
	reg, err := s.Store.RegistrationStatus(ctx, endpoint)
	if err != nil {
		return nil, storeError(err)
	}
	out := Registration{JID: endpoint}
	for _, v := range reg.Versions {
		out.Versions = append(out.Versions, RegisteredVersion{
			ID: v.Version, Active: v.Version == reg.Active, Removable: reg.Removable(v.Version), Hash: wire.Hash(v.Hash),
		})
	}
	return out.TokenReader(), nil
}

// RemoveVersion answers <remove-version/> (admins only): remove an
// inactive, unretained version, leaving its tombstone. The active or a
// retained version is <conflict/>.
func (s *Service) RemoveVersion(ctx context.Context, req Request) (xml.TokenReader, error) {
	if err := s.authorize(ctx, req, false); err != nil {
		return nil, err
	}
	rv, err := ParseRemoveVersion(req.Payload)
	if err != nil {
		return nil, surface.ErrBadRequest
	}
	endpoint, err := parseEndpointJID(rv.JID)
	if err != nil {
		return nil, surface.ErrBadRequest
	}
	if err := s.Store.RemoveVersion(ctx, endpoint, rv.Version); err != nil {
		return nil, storeError(err)
	}
	return Removed{JID: endpoint, Version: rv.Version}.TokenReader(), nil
}

// RemoveEndpoint answers <remove-endpoint/> (admins only): deactivate and
// remove every version, each leaving its tombstone, unless one is retained
// (<conflict/>).
func (s *Service) RemoveEndpoint(ctx context.Context, req Request) (xml.TokenReader, error) {
	endpoint, err := s.endpointOp(ctx, req, NameRemoveEndpoint, false)
	if err != nil {
		return nil, err
	}
	if err := s.Store.RemoveEndpoint(ctx, endpoint); err != nil {
		return nil, storeError(err)
	}
	return Removed{JID: endpoint}.TokenReader(), nil
}

// endpointOp authorizes and parses a request of the endpointOperation type
// and returns the normalized endpoint JID.
func (s *Service) endpointOp(ctx context.Context, req Request, name xml.Name, owner bool) (string, error) {
	if err := s.authorize(ctx, req, owner); err != nil {
		return "", err
	}
	op, err := ParseEndpointOp(req.Payload, name)
	if err != nil {
		return "", surface.ErrBadRequest
	}
	endpoint, err := parseEndpointJID(op.JID)
	if err != nil {
		return "", surface.ErrBadRequest
	}
	return endpoint, nil
}
