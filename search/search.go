// Package search implements XEP-0055 (Jabber Search) for the agent
// directory: the Jabber Search Compatibility profile of the XMPP Agent
// Gateway ProtoXEP (§"Agent Directory Search"), at the gateway JID, with
// XEP-0004 forms and XEP-0059 paging.
//
// A get returns the search fields (a legacy <nick/> and the equivalent
// form); a set searches with either and is answered in kind. The nick
// matches an endpoint's localpart, name or title as a case-insensitive
// substring after Unicode folding (db.SearchFold). Visibility is the
// directory's, so a hidden endpoint never appears in results nor in a
// count. Unknown fields are refused, not ignored: dropping a criterion the
// requester thought applied would return wrong results. The errors in
// full: docs/gateway.md, "Directory search".
package search

import (
	"context"
	"encoding/xml"

	"agentgw/db"
	"agentgw/surface"
	"agentgw/wire"
)

// NS is the XEP-0055 namespace; it is also the search form's FORM_TYPE.
const NS = "jabber:iq:search"

// Name is the search payload, <query xmlns='jabber:iq:search'/>.
var Name = xml.Name{Space: NS, Local: "query"}

// Features are the gateway features this package adds: search, and data
// forms for its XEP-0004 extensibility.
var Features = []string{NS, wire.NSData}

// The fields and texts of the gateway's search form (the ProtoXEP's example).
const (
	FieldNick    = "nick"
	FieldJID     = "jid"
	Instructions = "Enter a nickname to search for matching agents."
	FormTitle    = "Agent Directory Search"
	NickLabel    = "Nickname"
	JIDLabel     = "Jabber ID"
)

// Limits of a search request.
const (
	// maxNickBytes bounds the nick; a longer one is not-acceptable. It is
	// longer than any title or name a manifest may have.
	maxNickBytes = 1024
)

// GatewayFields is the answer to a search get at the gateway.
func GatewayFields() Fields {
	return Fields{
		Instructions: Instructions,
		Legacy:       []string{FieldNick},
		Form: &wire.Form{
			Type:     "form",
			FormType: NS,
			Title:    FormTitle,
			Fields:   []wire.Field{{Var: FieldNick, Type: "text-single", Label: NickLabel}},
		},
	}
}

// reportedColumns are the columns of a result form.
var reportedColumns = []wire.Field{
	{Var: FieldJID, Type: "jid-single", Label: JIDLabel},
	{Var: FieldNick, Type: "text-single", Label: NickLabel},
}

// Service answers searches from the store.
type Service struct {
	Store *db.Store
	// PageMax is the page cap; RSM max values above it are clamped. It is
	// the directory's (config gateway.page_max).
	PageMax int
}

// Search answers a search set, whose payload is the <query/>, for r.From
// under r.Policy. Errors are surface.ErrBadRequest and
// surface.ErrNotAcceptable for the request, or store errors.
func (s *Service) Search(ctx context.Context, r surface.Request) (Result, error) {
	pol, requester, payload := r.Policy, r.From, r.Payload
	req, err := ParseRequest(payload)
	if err != nil {
		return Result{}, err
	}
	var rsm wire.RSMRequest
	if req.RSM != nil {
		rsm = *req.RSM
	}
	page := db.Page{Max: rsm.PageSize(s.PageMax), After: rsm.After, Before: rsm.Before, Index: rsm.Index}
	// The same visibility decision as the directory listing.
	scope := pol.VisibleScope(requester)
	found, err := s.Store.Search(ctx, db.Scope{All: scope.All, JIDs: scope.JIDs}, req.Nick, page)
	if err != nil {
		return Result{}, err
	}
	out := Result{Legacy: req.Legacy}
	for _, it := range found.Items {
		out.Items = append(out.Items, Item{JID: it.JID, Nick: it.Name})
	}
	first, last := "", ""
	if n := len(found.Items); n > 0 {
		first, last = found.Items[0].JID, found.Items[n-1].JID
	}
	out.Set = rsm.Result(found.Count, len(found.Items), first, last)
	return out, nil
}
