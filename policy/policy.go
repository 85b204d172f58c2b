// Package policy decides who may see and who may invoke agentgw's endpoints.
//
// A tool whose manifest declares approvalRequired or names
// requiredPermissions runs only when an approve grant, as well as an invoke
// grant, names the caller, the endpoint and the tool, and vouches for each
// permission: manifests are declarations, never authority, and the ProtoXEP
// ("Security Considerations") requires such tools to fail closed.
//
// The zero Policy denies everything. Grants are additive and come only from
// trusted local configuration; identity comes only from the authenticated
// stanza 'from', reduced to its bare JID. Visibility (directory, search,
// endpoint info, vCard, presence, manifests, tools and schemas) and invocation
// are decided separately: one never implies the other, as the XMPP Agent
// Gateway ProtoXEP's §"Business Rules" requires.
package policy

import (
	"runtime"
	"slices"
	"sort"
	"sync"
	"weak"

	"mellium.im/xmpp/jid"
)

// Wildcard, written out explicitly in a grant, matches every endpoint (or,
// in an invoke grant's tools, every tool).
const Wildcard = "*"

// Principal is who a grant names: a whole domain, or one bare JID.
type Principal struct {
	// Domain is set for a domain principal ("example.org"): it matches every
	// JID whose domainpart equals it, and the domain itself.
	Domain string
	// JID is set for a bare-JID principal ("carol@remote.example").
	JID string
}

// ParsePrincipal parses and normalizes a principal. A string with a
// localpart is a bare-JID principal; one without is a domain principal. A
// resourcepart is refused.
func ParsePrincipal(s string) (Principal, error) {
	j, err := jid.Parse(s)
	if err != nil {
		return Principal{}, err
	}
	if j.Resourcepart() != "" {
		return Principal{}, errResource
	}
	if j.Localpart() == "" {
		return Principal{Domain: j.Domainpart()}, nil
	}
	return Principal{JID: j.Bare().String()}, nil
}

type policyError string

func (e policyError) Error() string { return string(e) }

const errResource = policyError("policy: a principal must not have a resourcepart")

func (p Principal) matches(requester jid.JID) bool {
	if p.Domain != "" {
		return requester.Domainpart() == p.Domain
	}
	return p.JID != "" && requester.Bare().String() == p.JID
}

// Grant gives its principals a right over endpoints. Endpoints holds
// normalized bare JIDs; AllEndpoints is true when the grant named "*".
type Grant struct {
	Principals   []Principal
	Endpoints    []string
	AllEndpoints bool
	// Tools applies to invoke and approve grants only: exact tool names,
	// or AllTools.
	Tools    []string
	AllTools bool
	// Permissions applies to approve grants only: the requiredPermissions
	// values the grant vouches for, or AllPermissions.
	Permissions    []string
	AllPermissions bool
}

func (g *Grant) matchesPrincipal(requester jid.JID) bool {
	for _, p := range g.Principals {
		if p.matches(requester) {
			return true
		}
	}
	return false
}

func (g *Grant) coversEndpoint(endpoint string) bool {
	if g.AllEndpoints {
		return true
	}
	for _, e := range g.Endpoints {
		if e == endpoint {
			return true
		}
	}
	return false
}

func (g *Grant) coversTool(tool string) bool {
	if g.AllTools {
		return true
	}
	for _, t := range g.Tools {
		if t == tool {
			return true
		}
	}
	return false
}

// Policy is the operator's authorization policy. It is immutable once built;
// a reload builds a new one and swaps it in.
type Policy struct {
	// LocalDomains are the domains whose accounts are this deployment's own
	// users (used by self-registration).
	LocalDomains []string
	// Admins are bare JIDs allowed to provision endpoints.
	Admins []string
	// SelfRegister lets accounts of LocalDomains register manifests for
	// their own bare JID (the Self Registration profile). False denies.
	SelfRegister bool
	// Visibility and Invoke are the grants, in configuration order.
	Visibility []Grant
	Invoke     []Grant
	// Approve are the approve grants ([[policy.approve]]), which let an
	// invoke grant run tools that declare approvalRequired or
	// requiredPermissions.
	Approve []Grant
	// Chat are the chat grants ([[policy.chat]]): who may exchange
	// messages with which endpoints (the Human Messaging profile). They
	// grant neither visibility nor invocation.
	Chat []Grant
}

// Scope is the set of endpoints a requester may see. The zero Scope sees
// nothing.
type Scope struct {
	All  bool
	JIDs []string // sorted, deduplicated, normalized bare JIDs
}

// VisibleScope returns what requester may see. A nil Policy denies. A
// scope that lists endpoints is built once per policy and bare JID (up to
// maxMemoScopes requesters) and shared: callers must not modify its JIDs.
func (p *Policy) VisibleScope(requester jid.JID) Scope {
	if p == nil {
		return Scope{}
	}
	matched := false
	for i := range p.Visibility {
		g := &p.Visibility[i]
		if g.matchesPrincipal(requester) {
			if g.AllEndpoints {
				return Scope{All: true}
			}
			matched = true
		}
	}
	if !matched {
		return Scope{}
	}
	memo := p.memo()
	key := requester.Bare().String()
	if sc, ok := memo.get(key); ok {
		return sc
	}
	sc := p.listedScope(requester)
	memo.put(key, sc)
	return sc
}

// maxMemoScopes bounds the requesters whose listed scope is kept per
// policy; past it such a scope is built per request.
const maxMemoScopes = 4096

// scopeMemo maps bare JIDs to their listed scopes under one policy.
type scopeMemo struct {
	mu sync.RWMutex
	m  map[string]Scope
}

func (m *scopeMemo) get(key string) (Scope, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	sc, ok := m.m[key]
	return sc, ok
}

func (m *scopeMemo) put(key string, sc Scope) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.m) < maxMemoScopes {
		m.m[key] = sc
	}
}

// scopeMemos holds each live policy's scopeMemo, keyed weakly: a policy
// replaced by a reload takes its memo with it when it is collected. It
// lives outside Policy so that a copy of a policy (which may then be
// edited) never shares the original's memo.
var scopeMemos sync.Map // weak.Pointer[Policy] → *scopeMemo

func (p *Policy) memo() *scopeMemo {
	key := weak.Make(p)
	if m, ok := scopeMemos.Load(key); ok {
		return m.(*scopeMemo)
	}
	m, loaded := scopeMemos.LoadOrStore(key, &scopeMemo{m: map[string]Scope{}})
	if !loaded {
		runtime.AddCleanup(p, func(k weak.Pointer[Policy]) { scopeMemos.Delete(k) }, key)
	}
	return m.(*scopeMemo)
}

// listedScope builds the scope of a requester that no wildcard grant
// matches.
func (p *Policy) listedScope(requester jid.JID) Scope {
	set := map[string]struct{}{}
	for i := range p.Visibility {
		g := &p.Visibility[i]
		if !g.matchesPrincipal(requester) {
			continue
		}
		if g.AllEndpoints {
			return Scope{All: true}
		}
		for _, e := range g.Endpoints {
			set[e] = struct{}{}
		}
	}
	if len(set) == 0 {
		return Scope{}
	}
	out := make([]string, 0, len(set))
	for e := range set {
		out = append(out, e)
	}
	sort.Strings(out)
	return Scope{JIDs: out}
}

// CanSee reports whether requester may see endpoint (a normalized bare JID).
func (p *Policy) CanSee(requester jid.JID, endpoint string) bool {
	if p == nil {
		return false
	}
	for i := range p.Visibility {
		g := &p.Visibility[i]
		if g.matchesPrincipal(requester) && g.coversEndpoint(endpoint) {
			return true
		}
	}
	return false
}

// CanInvoke reports whether requester may invoke tool on endpoint.
func (p *Policy) CanInvoke(requester jid.JID, endpoint, tool string) bool {
	if p == nil {
		return false
	}
	for i := range p.Invoke {
		g := &p.Invoke[i]
		if g.matchesPrincipal(requester) && g.coversEndpoint(endpoint) && g.coversTool(tool) {
			return true
		}
	}
	return false
}

// CanChat reports whether requester may exchange chat messages with
// endpoint (a normalized bare JID): a [[policy.chat]] grant names both. A
// nil Policy denies.
func (p *Policy) CanChat(requester jid.JID, endpoint string) bool {
	if p == nil {
		return false
	}
	for i := range p.Chat {
		g := &p.Chat[i]
		if g.matchesPrincipal(requester) && g.coversEndpoint(endpoint) {
			return true
		}
	}
	return false
}

// Approved reports whether requester may run tool on endpoint given what
// the tool's manifest declares: approval (approvalRequired) and
// permissions (requiredPermissions). A tool that declares neither needs
// nothing beyond CanInvoke. Otherwise at least one approve grant must name
// requester, endpoint and tool, and each permission must be vouched for by
// one of those grants. Approved does not check CanInvoke: both are needed.
// A nil Policy denies a tool that declares either.
func (p *Policy) Approved(requester jid.JID, endpoint, tool string, approval bool, permissions []string) bool {
	if !approval && len(permissions) == 0 {
		return true
	}
	if p == nil {
		return false
	}
	var matching []*Grant
	for i := range p.Approve {
		g := &p.Approve[i]
		if g.matchesPrincipal(requester) && g.coversEndpoint(endpoint) && g.coversTool(tool) {
			matching = append(matching, g)
		}
	}
	if len(matching) == 0 {
		return false
	}
	for _, perm := range permissions {
		if !slices.ContainsFunc(matching, func(g *Grant) bool {
			return g.AllPermissions || slices.Contains(g.Permissions, perm)
		}) {
			return false
		}
	}
	return true
}

// IsAdmin reports whether requester's bare JID is a configured admin.
func (p *Policy) IsAdmin(requester jid.JID) bool {
	if p == nil || requester.Localpart() == "" {
		return false
	}
	bare := requester.Bare().String()
	for _, a := range p.Admins {
		if a == bare {
			return true
		}
	}
	return false
}

// IsLocal reports whether requester's domain is one of the local domains.
func (p *Policy) IsLocal(requester jid.JID) bool {
	if p == nil {
		return false
	}
	for _, d := range p.LocalDomains {
		if requester.Domainpart() == d {
			return true
		}
	}
	return false
}
