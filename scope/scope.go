// Package scope names the OAuth scopes of the "XMPP MCP Server" interface
// (the seed text in docs/mcp-server.md): one scope per operation. It has no
// dependencies and sits on the ground floor, so that both config (which
// checks the scopes of [[mcp.token]] and [[chat.token]]) and mcpface
// (which enforces them) can use it.
package scope

import "slices"

// The scopes, spelled as the seed interface spells them.
const (
	PresenceAccept      = "OAUTH.Scope.MCP.XMPP.Tools.Presence.Accept"
	PresenceDecline     = "OAUTH.Scope.MCP.XMPP.Tools.Presence.Decline"
	PresenceSubscribe   = "OAUTH.Scope.MCP.XMPP.Tools.Presence.Subscribe"
	PresenceUnsubscribe = "OAUTH.Scope.MCP.XMPP.Tools.Presence.Unsubscribe"
	RosterAdd           = "OAUTH.Scope.MCP.XMPP.Tools.Roster.Add"
	RosterRemove        = "OAUTH.Scope.MCP.XMPP.Tools.Roster.Remove"
	RosterUpdate        = "OAUTH.Scope.MCP.XMPP.Tools.Roster.Update"
	MessageGet          = "OAUTH.Scope.MCP.XMPP.Tools.Message.Get"
	MessageSend         = "OAUTH.Scope.MCP.XMPP.Tools.Message.Send"
	ResourcesList       = "OAUTH.Scope.MCP.XMPP.Resources.List"
	ResourcesRead       = "OAUTH.Scope.MCP.XMPP.Resources.Read"
	// AgentsSearch lists, searches and describes agent endpoints;
	// AgentsCall calls their tools (CallAgentTool, projected tools, and
	// the MCP tasks of those calls).
	AgentsSearch = "OAUTH.Scope.MCP.XMPP.Tools.Agents.Search"
	AgentsCall   = "OAUTH.Scope.MCP.XMPP.Tools.Agents.Call"
)

// Wildcard grants every scope.
const Wildcard = "*"

// All lists every scope, sorted.
var All = func() []string {
	s := []string{
		PresenceAccept, PresenceDecline, PresenceSubscribe, PresenceUnsubscribe,
		RosterAdd, RosterRemove, RosterUpdate, MessageGet, MessageSend,
		ResourcesList, ResourcesRead, AgentsSearch, AgentsCall,
	}
	slices.Sort(s)
	return s
}()

// Known reports whether s is a scope of the interface.
func Known(s string) bool {
	_, ok := slices.BinarySearch(All, s)
	return ok
}

// Set is the scopes one MCP client holds. The zero Set holds none.
type Set struct {
	all    bool
	scopes []string
}

// Every returns the Set holding every scope (the local user over stdio,
// or a token with "*").
func Every() Set { return Set{all: true} }

// Of returns the Set of the given scopes; Wildcard among them means every
// scope.
func Of(scopes []string) Set {
	if slices.Contains(scopes, Wildcard) {
		return Every()
	}
	return Set{scopes: slices.Clone(scopes)}
}

// Has reports whether the Set holds s.
func (st Set) Has(s string) bool { return st.all || slices.Contains(st.scopes, s) }
