// Package directory implements the Core Directory profile of the XMPP Agent
// Gateway ProtoXEP (§"Service Discovery"): the gateway's XEP-0030 identity
// and features, the XEP-0059-paged agent directory, and endpoint information
// with its XEP-0128 form.
//
// Every answer about an endpoint first asks the store, then the policy, so
// that a hidden endpoint costs the same work as a visible one and fails with
// exactly the same error as a nonexistent one.
package directory

import (
	"context"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"

	"agentgw/db"
	"agentgw/policy"
	"agentgw/surface"
	"agentgw/wire"

	"mellium.im/xmpp/jid"
)

// Namespaces, features, identities and the form type of the profile.
const (
	// NS is the directory feature and node.
	NS = "urn:xmpp:agent-directory:0"
	// NSEndpoint is the endpoint feature var. It is not a node.
	NSEndpoint = "urn:xmpp:agent-endpoint:0"
	// FormEndpointInfo is the FORM_TYPE of the endpoint information form.
	FormEndpointInfo = "urn:xmpp:agent-endpoint-info:0"

	CategoryAutomation = "automation"
	TypeGateway        = "agent-gateway"
	TypeDirectory      = "agent-directory"
	TypeEndpoint       = "agent-endpoint"
	HashAlgo           = wire.HashAlgoSHA256
)

// GatewayFeatures are the features this package adds to the gateway's
// disco#info; EndpointFeatures those it adds to every endpoint's.
var (
	GatewayFeatures  = []string{wire.NSDiscoInfo, wire.NSDiscoItems, NS}
	EndpointFeatures = []string{wire.NSDiscoInfo, wire.NSDiscoItems, NSEndpoint}
)

// Service answers Core Directory queries from the store.
type Service struct {
	Store *db.Store
	// Name is the gateway identity's name.
	Name string
	// PageMax is the page cap; RSM max values above it are clamped.
	PageMax int
	// ReplaySeconds is advertised as request_replay_seconds.
	ReplaySeconds int
	// ColdStart holds the endpoints (normalized bare JIDs) whose runtime
	// starts on a call when it is stopped: they advertise
	// cold_start_supported 1, every other endpoint 0. It is read only.
	ColdStart map[string]bool
}

// GatewayInfo is the disco#info of the gateway JID. features is the full
// feature list, gathered by the caller from every protocol package, so that
// the advertisement cannot drift from what is routed.
func (s *Service) GatewayInfo(node string, features []string) (wire.InfoResult, error) {
	switch node {
	case "":
		return wire.InfoResult{
			Identities: []wire.Identity{{Category: CategoryAutomation, Type: TypeGateway, Name: s.Name}},
			Features:   features,
		}, nil
	case NS:
		return wire.InfoResult{
			Node:       NS,
			Identities: []wire.Identity{{Category: CategoryAutomation, Type: TypeDirectory, Name: s.Name}},
			Features:   []string{wire.NSDiscoInfo, wire.NSDiscoItems},
		}, nil
	}
	return wire.InfoResult{}, surface.ErrItemNotFound
}

// Items answers r, the disco#items of the gateway JID at node: the
// directory page of endpoints visible to r.From, in octetwise bare-JID
// order, the bare JID being the RSM id.
func (s *Service) Items(ctx context.Context, r surface.Request, node string) (wire.ItemsResult, error) {
	pol, requester, payload := r.Policy, r.From, r.Payload
	if node != "" && node != NS {
		return wire.ItemsResult{}, surface.ErrItemNotFound
	}
	rsm, _, err := wire.FindRSM(payload)
	if err != nil {
		return wire.ItemsResult{}, surface.ErrBadRequest
	}
	page := db.Page{Max: rsm.PageSize(s.PageMax), After: rsm.After, Before: rsm.Before, Index: rsm.Index}
	scope := pol.VisibleScope(requester)
	res, err := s.Store.Directory(ctx, db.Scope{All: scope.All, JIDs: scope.JIDs}, page)
	if err != nil {
		return wire.ItemsResult{}, err
	}
	out := wire.ItemsResult{Node: node}
	for _, it := range res.Items {
		out.Items = append(out.Items, wire.Item{JID: it.JID, Name: it.Name})
	}
	first, last := "", ""
	if n := len(res.Items); n > 0 {
		first, last = res.Items[0].JID, res.Items[n-1].JID
	}
	out.Set = rsm.Result(res.Count, len(res.Items), first, last)
	return out, nil
}

// Endpoint returns the active version of endpoint, canonical bytes
// included, if requester may see it, and surface.ErrItemNotFound otherwise, whether the
// endpoint is hidden, inactive or nonexistent. The first look at the store
// reads only the summary row, whose cost does not depend on the manifest's
// size, and is made in every case; the manifest is read only for a requester
// who may see it. So a hidden endpoint answers like a missing one, in bytes
// and in time.
//
// The bytes are those of the version the summary names, read by its exact
// key: the answer is one version, never the summary's decision with the
// bytes of a version activated since (the summary may lag another
// process's write by its bound, db/snapshot.go).
func (s *Service) Endpoint(ctx context.Context, pol *policy.Policy, requester jid.JID, endpoint jid.JID) (db.Version, error) {
	bare := endpoint.Bare().String()
	sum, err := s.visible(ctx, pol, requester, bare)
	if err != nil {
		return db.Version{}, err
	}
	v, err := s.Store.Version(ctx, bare, sum.Version)
	if errors.Is(err, db.ErrNotFound) {
		// Deactivated and removed in between.
		return db.Version{}, surface.ErrItemNotFound
	}
	return v, err
}

// EndpointSummary is Endpoint without the canonical bytes, for answers that
// need only the names, version and hash (endpoint info, ping).
func (s *Service) EndpointSummary(ctx context.Context, pol *policy.Policy, requester jid.JID, endpoint jid.JID) (db.Version, error) {
	return s.visible(ctx, pol, requester, endpoint.Bare().String())
}

func (s *Service) visible(ctx context.Context, pol *policy.Policy, requester jid.JID, bare string) (db.Version, error) {
	v, err := s.Store.ActiveSummary(ctx, bare)
	visible := pol.CanSee(requester, bare)
	switch {
	case errors.Is(err, db.ErrNotFound):
		return db.Version{}, surface.ErrItemNotFound
	case err != nil:
		return db.Version{}, err
	case !visible:
		return db.Version{}, surface.ErrItemNotFound
	}
	return v, nil
}

// EndpointInfo is the node-less disco#info of a visible endpoint. features
// is the endpoint's feature list, gathered by the caller.
func (s *Service) EndpointInfo(v db.Version, features []string) wire.InfoResult {
	title := v.Title
	if title == "" {
		title = v.Name
	}
	fields := []wire.Field{
		{Var: "server_name", Values: []string{v.Name}},
		{Var: "server_title", Values: []string{title}},
	}
	// All eight fields are always present. description is text-multi in
	// the registered form type: one value per line, none when empty.
	var desc []string
	if v.Description != "" {
		desc = strings.Split(v.Description, "\n")
	}
	coldStart := "0"
	if s.ColdStart[v.JID] {
		coldStart = "1"
	}
	fields = append(fields,
		wire.Field{Var: "description", Values: desc},
		wire.Field{Var: "version", Values: []string{v.Version}},
		wire.Field{Var: "manifest_hash_algo", Values: []string{HashAlgo}},
		wire.Field{Var: "manifest_hash_value", Values: []string{base64.StdEncoding.EncodeToString(v.Hash[:])}},
		wire.Field{Var: "cold_start_supported", Values: []string{coldStart}},
		wire.Field{Var: "request_replay_seconds", Values: []string{strconv.Itoa(s.ReplaySeconds)}},
	)
	return wire.InfoResult{
		Identities: []wire.Identity{{Category: CategoryAutomation, Type: TypeEndpoint, Name: title}},
		Features:   features,
		Forms:      []wire.Form{{Type: "result", FormType: FormEndpointInfo, Fields: fields}},
	}
}
