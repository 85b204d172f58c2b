// Package account is the account face of `agentgw mcp`: an MCP client
// logs in to XMPP as an account through it, with the interface of the
// "XMPP MCP Server" (docs/mcp-server.md, after the seed text
// shared/spec/xmpp-mcp-server-tools.txt): ten tools with the seed's
// names, arguments, defaults and results, the xmpp: (roster contact) and
// mid: (received message) resources, and one OAuth scope per operation
// (package scope).
//
// Beyond the seed, received messages wait in the store (Store) so a
// restart loses none, and WaitForMessage lets a client wait instead of
// polling. Account is the XMPP session; Face serves its tools and
// resources on an MCP server (package mcpface builds one).
package account

import (
	"context"
	"encoding/json"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Face serves one account's seed tools and its resources (xmpp: per
// contact, mid: per queued message) on an MCP server, and tells the
// server's subscribers when they change. It is the account's Events
// receiver.
type Face struct {
	acct  *Account
	store *Store
	mcp   *mcp.Server

	mu       sync.Mutex
	contacts map[string]bool // xmpp: resources registered, by bare JID
	messages map[string]bool // mid: resources registered, by ID
	// updates are the URIs whose resources/updated is yet to be sent, by
	// the updater goroutine: go-sdk sends it synchronously (up to 10 s per
	// slow subscriber), and the account's session must not wait for that.
	updates map[string]bool
	wake    chan struct{}

	// limits bound each token's WaitForMessage calls (limits.go).
	limits TokenLimits
}

// NewFace adds the seed's tools to srv, and a resource for each message
// already stored and each contact, and becomes acct's Events receiver.
// Its updater runs until ctx ends.
func NewFace(ctx context.Context, acct *Account, store *Store, srv *mcp.Server) (*Face, error) {
	s := &Face{acct: acct, store: store, mcp: srv, contacts: map[string]bool{}, messages: map[string]bool{},
		updates: map[string]bool{}, wake: make(chan struct{}, 1)}
	go s.updater(ctx)
	for _, t := range tools {
		srv.AddTool(t.mcpTool(), s.handler(t))
	}
	stored, err := store.List(ctx, acct.JID().String())
	if err != nil {
		return nil, err
	}
	for _, st := range stored {
		s.addMessage(st)
	}
	acct.SetEvents(s)
	for _, c := range acct.Contacts() {
		s.ContactChanged(c.BareJid)
	}
	return s, nil
}

// ContactChanged implements Events: the contact's resource is added or
// removed as needed, and its subscribers are told.
func (s *Face) ContactChanged(bare string) {
	uri := ContactURI(bare)
	_, exists := s.acct.Contact(bare)
	s.mu.Lock()
	had := s.contacts[bare]
	if exists {
		s.contacts[bare] = true
	} else {
		delete(s.contacts, bare)
	}
	s.mu.Unlock()
	switch {
	case exists && !had:
		s.mcp.AddResource(&mcp.Resource{
			URI: uri, Name: bare, Title: "XMPP contact " + bare, MIMEType: "application/json",
			Description: "Roster entry, subscription state and last presence of " + bare,
		}, s.readContact)
	case !exists && had:
		s.mcp.RemoveResources(uri)
	}
	s.mu.Lock()
	s.updates[uri] = true
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default: // the updater is already due to run
	}
}

// updater sends the pending resources/updated notifications, each URI once
// however often it changed meanwhile, until ctx ends.
func (s *Face) updater(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.wake:
		}
		s.mu.Lock()
		uris := make([]string, 0, len(s.updates))
		for u := range s.updates {
			uris = append(uris, u)
		}
		clear(s.updates)
		s.mu.Unlock()
		for _, u := range uris {
			_ = s.mcp.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: u})
		}
	}
}

// MessageQueued implements Events.
func (s *Face) MessageQueued(st Stored, dropped []string) {
	for _, id := range dropped {
		s.messageRemoved(id)
	}
	s.addMessage(st)
}

func (s *Face) addMessage(st Stored) {
	s.mu.Lock()
	s.messages[st.ID] = true
	s.mu.Unlock()
	from := st.Message.FromBareJid
	if from == "" {
		from = st.Message.From
	}
	desc := st.Message.Subject
	if desc == "" {
		desc = st.Message.Body
	}
	if len(desc) > 120 {
		desc = strings.ToValidUTF8(desc[:120], "") + "…"
	}
	typ := "Normal"
	if st.Message.Type != nil {
		typ = *st.Message.Type
	}
	s.mcp.AddResource(&mcp.Resource{
		URI: MessageURI(st.ID), Name: "message " + st.ID, MIMEType: "application/json",
		Title:       typ + " message from " + from,
		Description: desc,
	}, s.readMessage)
}

// messageRemoved drops the resource of a message no longer queued.
func (s *Face) messageRemoved(id string) {
	s.mu.Lock()
	had := s.messages[id]
	delete(s.messages, id)
	s.mu.Unlock()
	if had {
		s.mcp.RemoveResources(MessageURI(id))
	}
}

func (s *Face) readContact(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	bare, ok := ParseContactURI(req.Params.URI)
	if !ok {
		return nil, mcp.ResourceNotFoundError(req.Params.URI)
	}
	c, ok := s.acct.Contact(bare)
	if !ok {
		return nil, mcp.ResourceNotFoundError(req.Params.URI)
	}
	raw, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "application/json", Text: string(raw)}}}, nil
}

// readMessage returns the message and pops it, as the seed says.
func (s *Face) readMessage(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	id, ok := messageID(req.Params.URI)
	if !ok || !strings.HasPrefix(req.Params.URI, "mid:") {
		return nil, mcp.ResourceNotFoundError(req.Params.URI)
	}
	st, err := s.store.Take(ctx, s.acct.JID().String(), id)
	if err != nil {
		return nil, mcp.ResourceNotFoundError(req.Params.URI)
	}
	s.messageRemoved(id)
	raw, err := json.Marshal(st.response("message read and removed from the received messages"))
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "application/json", Text: string(raw)}}}, nil
}
