package config

import (
	"fmt"
	"slices"

	"agentgw/policy"

	"mellium.im/xmpp/jid"
)

// PolicyFile is the [policy] table as written.
type PolicyFile struct {
	LocalDomains []string       `toml:"local_domains"`
	Admins       []string       `toml:"admins"`
	SelfRegister bool           `toml:"self_register"`
	Visibility   []GrantFile    `toml:"visibility"`
	Invoke       []InvokeGrant  `toml:"invoke"`
	Approve      []ApproveGrant `toml:"approve"`
	// Chat are the [[policy.chat]] grants (chat.go).
	Chat []GrantFile `toml:"chat"`
}

// ApproveGrant is one [[policy.approve]] entry: it vouches, for its
// principals, for the approval and the permissions that the named tools
// declare (approvalRequired, requiredPermissions). It adds to an invoke
// grant; it grants nothing by itself.
type ApproveGrant struct {
	Principals  []string `toml:"principals"`
	Endpoints   []string `toml:"endpoints"`
	Tools       []string `toml:"tools"`
	Permissions []string `toml:"permissions"`
}

// GrantFile is one [[policy.visibility]] entry.
type GrantFile struct {
	Principals []string `toml:"principals"`
	Endpoints  []string `toml:"endpoints"`
}

// InvokeGrant is one [[policy.invoke]] entry.
type InvokeGrant struct {
	Principals []string `toml:"principals"`
	Endpoints  []string `toml:"endpoints"`
	Tools      []string `toml:"tools"`
}

func (pf PolicyFile) build(domain string, p *problems) *policy.Policy {
	out := &policy.Policy{}
	for i, d := range pf.LocalDomains {
		key := fmt.Sprintf("policy.local_domains[%d]", i)
		j, err := jid.Parse(d)
		if err != nil || j.Localpart() != "" || j.Resourcepart() != "" {
			p.bad(key, "must be a domain")
			continue
		}
		out.LocalDomains = append(out.LocalDomains, j.Domainpart())
	}
	for i, a := range pf.Admins {
		key := fmt.Sprintf("policy.admins[%d]", i)
		j, err := jid.Parse(a)
		if err != nil || j.Localpart() == "" || j.Resourcepart() != "" {
			p.bad(key, "must be a bare JID such as admin@example.org")
			continue
		}
		out.Admins = append(out.Admins, j.Bare().String())
	}
	out.SelfRegister = pf.SelfRegister
	if pf.SelfRegister && len(pf.LocalDomains) == 0 {
		p.bad("policy.self_register", "requires policy.local_domains: only their accounts may self-register")
	}
	// Endpoints live under the component domain, or are self-registered
	// accounts of a local domain.
	endpointDomains := append([]string{domain}, out.LocalDomains...)
	for i, g := range pf.Visibility {
		key := fmt.Sprintf("policy.visibility[%d]", i)
		grant := buildGrant(key, g.Principals, g.Endpoints, endpointDomains, p)
		out.Visibility = append(out.Visibility, grant)
	}
	for i, g := range pf.Invoke {
		key := fmt.Sprintf("policy.invoke[%d]", i)
		grant := buildGrant(key, g.Principals, g.Endpoints, endpointDomains, p)
		if len(g.Tools) == 0 {
			p.bad(key+".tools", "required: list tool names, or \"*\" for every tool")
		}
		for k, t := range g.Tools {
			switch {
			case t == policy.Wildcard:
				grant.AllTools = true
			case t == "":
				p.bad(fmt.Sprintf("%s.tools[%d]", key, k), "must not be empty")
			default:
				grant.Tools = append(grant.Tools, t)
			}
		}
		out.Invoke = append(out.Invoke, grant)
	}
	for i, g := range pf.Approve {
		key := fmt.Sprintf("policy.approve[%d]", i)
		grant := buildGrant(key, g.Principals, g.Endpoints, endpointDomains, p)
		grant.Tools, grant.AllTools = grantList(key+".tools", g.Tools, true, p)
		grant.Permissions, grant.AllPermissions = grantList(key+".permissions", g.Permissions, false, p)
		out.Approve = append(out.Approve, grant)
	}
	for i, g := range pf.Chat {
		key := fmt.Sprintf("policy.chat[%d]", i)
		out.Chat = append(out.Chat, buildGrant(key, g.Principals, g.Endpoints, endpointDomains, p))
	}
	return out
}

// grantList builds a list of names that may be "*" for all; an empty list
// is an error when required.
func grantList(key string, list []string, required bool, p *problems) (names []string, all bool) {
	if required && len(list) == 0 {
		p.bad(key, "required: list names, or \"*\" for all")
	}
	for k, t := range list {
		switch {
		case t == policy.Wildcard:
			all = true
		case t == "":
			p.bad(fmt.Sprintf("%s[%d]", key, k), "must not be empty")
		default:
			names = append(names, t)
		}
	}
	return names, all
}

// buildGrant builds one grant. Endpoint JIDs must lie under one of domains:
// the component domain first, then the local domains. An empty component
// domain (itself already reported) disables the check.
func buildGrant(key string, principals, endpoints []string, domains []string, p *problems) policy.Grant {
	var g policy.Grant
	if len(principals) == 0 {
		p.bad(key+".principals", "required: list domains or bare JIDs")
	}
	for k, s := range principals {
		principal, err := policy.ParsePrincipal(s)
		if err != nil || s == policy.Wildcard {
			p.bad(fmt.Sprintf("%s.principals[%d]", key, k), "must be a domain or a bare JID")
			continue
		}
		g.Principals = append(g.Principals, principal)
	}
	if len(endpoints) == 0 {
		p.bad(key+".endpoints", "required: list endpoint bare JIDs, or \"*\" for every endpoint")
	}
	for k, e := range endpoints {
		ek := fmt.Sprintf("%s.endpoints[%d]", key, k)
		if e == policy.Wildcard {
			g.AllEndpoints = true
			continue
		}
		j, err := jid.Parse(e)
		if err != nil || j.Localpart() == "" || j.Resourcepart() != "" {
			p.bad(ek, "must be an endpoint bare JID or \"*\"")
			continue
		}
		if domains[0] != "" && !slices.Contains(domains, j.Domainpart()) {
			p.bad(ek, "%s is not under component.domain %s nor a local domain", j.Bare(), domains[0])
			continue
		}
		g.Endpoints = append(g.Endpoints, j.Bare().String())
	}
	return g
}
