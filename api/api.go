// Package api implements the urn:xmpp:agent-api:0 surface of the XMPP
// Agent Gateway ProtoXEP: Tool Discovery (tool collections and nodes,
// manifest and schema retrieval), Administrative Provisioning and Self
// Registration, with a wire type for every element of the XML Schema.
//
// Visibility is discovery's: an endpoint that is inactive, hidden or
// nonexistent answers <item-not-found/> for every version, with the same
// bytes. Provisioning is for policy.admins and for the owner of a
// self-registered endpoint; everyone else gets <forbidden/> before the
// payload is read, and JSON is never echoed. The rules and limits in full:
// docs/provisioning.md and docs/self-registration.md.
package api

import (
	"errors"
	"fmt"
	"slices"

	"agentgw/db"
	"agentgw/directory"
	"agentgw/manifest"
	"agentgw/policy"
	"agentgw/surface"

	"mellium.im/xmpp/jid"
)

// Namespaces, features, identities, form types and media types.
const (
	// NS is the Agent API XML namespace.
	NS = manifest.NS
	// FeatureManifest is advertised by endpoints that answer
	// <manifest-request/>.
	FeatureManifest = NS + "#manifest"
	// FeatureSchema is advertised by endpoints that answer
	// <schema-request/>.
	FeatureSchema = NS + "#schema"
	// FeatureSelfRegister is advertised by the gateway when
	// self-registration is enabled.
	FeatureSelfRegister = NS + "#self-register"
	// FeatureAdmin is advertised by the gateway when admins are configured.
	FeatureAdmin = NS + "#admin"
	// FeatureTool is the feature var of tool nodes, and the prefix of
	// their node names.
	FeatureTool = manifest.NSTool
	// FormToolInfo is the FORM_TYPE of the tool information form.
	FormToolInfo = "urn:xmpp:agent-tool-info:0"
	// TypeToolCollection and TypeTool are the identity types, in the
	// automation category, of collection and tool nodes.
	TypeToolCollection = "agent-tool-collection"
	TypeTool           = "agent-tool"
	// MediaTypeJSON is the media type of manifests.
	MediaTypeJSON = "application/json"
	// MediaTypeSchema is the media type of tool schemas.
	MediaTypeSchema = "application/schema+json"
)

// Task features a tool node may advertise (ProtoXEP "Tool Information"). A
// tool node lists one only if the gateway implements it (Service.TaskFeatures)
// and the tool declares it in its urn:xmpp:agent-api:0 extension object.
const (
	FeatureTaskProgress = "urn:xmpp:agent-task:0#progress"
	FeatureTaskCancel   = "urn:xmpp:agent-task:0#cancel"
	FeatureTaskInput    = "urn:xmpp:agent-task:0#input"
)

// EndpointFeatures are the features this package adds to every endpoint's
// disco#info.
var EndpointFeatures = []string{FeatureManifest, FeatureSchema}

// GatewayFeatures are the features this package adds to the gateway's
// disco#info under policy p: #admin when admins are configured,
// #self-register when self-registration is on. They are computed from the
// policy in force, so they follow a SIGHUP reload exactly as the handlers do.
func GatewayFeatures(p *policy.Policy) []string {
	var out []string
	if p == nil {
		return out
	}
	if len(p.Admins) > 0 {
		out = append(out, FeatureAdmin)
	}
	if p.SelfRegister && len(p.LocalDomains) > 0 {
		out = append(out, FeatureSelfRegister)
	}
	return out
}

// Service answers the agent API from the store, under the visibility
// decision of the directory.
type Service struct {
	Store *db.Store
	// Dir makes the visibility decision (Dir.Endpoint) and sets the page
	// cap of tool listings (Dir.PageMax).
	Dir *directory.Service
	// Domain is the component domain: admin-provisioned endpoints must lie
	// under it, and no account of it may self-register.
	Domain jid.JID
	// TaskFeatures are the task features the gateway implements, among
	// FeatureTaskProgress, FeatureTaskCancel and FeatureTaskInput. A tool
	// node advertises those its tool declares. Empty until the task layer
	// exists: nothing may be advertised that is not implemented.
	TaskFeatures []string
	// MaxSelfVersions is the quota of manifest versions one
	// self-registrant keeps ([quotas] versions_per_registrant); a new
	// version past it is <resource-constraint/>. 0 is no quota.
	MaxSelfVersions int
}

// Request is an IQ get or set as the handlers see it: the one request
// type of every surface.
type Request = surface.Request

// manifestError maps a validation failure to its stanza error. Diagnostics
// are dropped: the error carries only the condition.
func manifestError(err error) error {
	var me *manifest.Error
	if !errors.As(err, &me) {
		return err
	}
	switch me.Kind {
	case manifest.KindTooLarge:
		return surface.ErrResourceConstraint
	case manifest.KindMalformed:
		return surface.ErrBadRequest
	}
	return surface.ErrNotAcceptable
}

// storeError maps the store's sentinel errors to stanza errors; anything
// else is returned unchanged and becomes internal-server-error.
func storeError(err error) error {
	switch {
	case errors.Is(err, db.ErrNotFound):
		return surface.ErrItemNotFound
	case errors.Is(err, db.ErrConflict), errors.Is(err, db.ErrHashMismatch),
		errors.Is(err, db.ErrActive), errors.Is(err, db.ErrRetained):
		return surface.ErrConflict
	case errors.Is(err, db.ErrQuota):
		return surface.ErrResourceConstraint
	}
	return err
}

// parseEndpointJID normalizes the jid attribute of a provisioning request:
// a bare JID with a localpart.
func parseEndpointJID(s string) (string, error) {
	j, err := jid.Parse(s)
	if err != nil || j.Localpart() == "" || j.Resourcepart() != "" {
		return "", parseErr("jid", "must be a bare JID with a localpart")
	}
	return j.Bare().String(), nil
}

// versionOf turns a validated manifest into a store row.
func versionOf(m *manifest.Manifest) db.Version {
	return db.Version{
		JID: m.JID, Version: m.Version, Hash: m.Hash, Canonical: m.Canonical,
		Name: m.Name, Title: m.Title, Description: m.Description,
	}
}

// toolTaskFeatures lists the task features of a tool node: those the gateway
// implements and the tool declares. This is the hook for the task layer.
func (s *Service) toolTaskFeatures(t *manifest.Tool) []string {
	var out []string
	for _, f := range s.TaskFeatures {
		declared := false
		switch f {
		case FeatureTaskProgress:
			declared = t.Ext.SupportsProgress
		case FeatureTaskCancel:
			declared = t.Ext.SupportsCancellation
		case FeatureTaskInput:
			declared = t.Ext.SupportsInput
		}
		if declared && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// errInconsistent reports stored content that no longer parses or hashes to
// its stored hash: a local fault, never the requester's.
func errInconsistent(jid, version string, err error) error {
	return fmt.Errorf("api: stored manifest %s %s: %w", jid, version, err)
}
