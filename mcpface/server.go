// Package mcpface is `agentgw mcp`: an MCP server that logs in to XMPP
// as an account and offers the interface of the "XMPP MCP Server"
// (docs/mcp-server.md, after the seed text
// shared/spec/xmpp-mcp-server-tools.txt): ten tools with the seed's names,
// arguments, defaults and results, the xmpp: (roster contact) and mid:
// (received message) resources, and one OAuth scope per operation
// (package scope).
//
// Beyond the seed, received messages wait in SQLite (Store) so a restart
// loses none, and WaitForMessage lets a client wait instead of polling.
//
// One Server serves one Account, over stdio (the local user holds every
// scope) or Streamable HTTP (HTTPHandler: bearer tokens, each with its
// scopes).
package mcpface

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"agentgw/mcpface/layer"
	"agentgw/scope"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ProtocolVersions are the MCP revisions served, newest first: the
// current one (2026-07-28, sessionless) and the older ones, whose clients
// initialize a session.
var ProtocolVersions = layer.ProtocolVersions

// CodeForbidden is the JSON-RPC error code of a request outside the
// token's scopes.
const CodeForbidden = layer.CodeForbidden

// Version is the implementation version announced in serverInfo.
var Version = "dev"

// Options configure a Server.
type Options struct {
	// CheckScopes enforces the scopes of each request's bearer token
	// (HTTP). Without it every request holds every scope (stdio).
	CheckScopes bool
	Log         *slog.Logger
	// Agents are projected as MCP tools of their own, their active
	// versions polled every AgentPoll (zero: DefaultAgentPoll).
	Agents    []AgentProjection
	AgentPoll time.Duration
}

// Server is the MCP face of one account.
type Server struct {
	acct   *Account
	store  *Store
	mcp    *mcp.Server
	opts   Options
	agents *agents

	mu       sync.Mutex
	contacts map[string]bool // xmpp: resources registered, by bare JID
	messages map[string]bool // mid: resources registered, by ID
	// updates are the URIs whose resources/updated is yet to be sent, by
	// the updater goroutine: go-sdk sends it synchronously (up to 10 s per
	// slow subscriber), and the account's session must not wait for that.
	updates map[string]bool
	wake    chan struct{}
	// taskWait wakes tasks/result and tasks/cancel, and waits counts
	// those waiting, by owner (tasks.go).
	taskWait map[string]chan struct{}
	waits    map[string]int
	// inputs are the input sides of followed MCP tasks, by task ID, and
	// elicits the elicitations the layer sent, by request ID
	// (taskinput.go).
	inputs  map[string]*taskInput
	elicits map[string]elicitWait
	// sinks are where the status changes of MCP tasks are sent, by task
	// ID (taskstatus.go).
	sinks map[string]*statusSink
	// mailboxes are the askers of extension tasks, and progress their
	// last progress, by task ID (tasksext.go).
	mailboxes map[string]*mailbox
	progress  map[string]taskProgress
	// mrtrKey seals the requestState of MRTR answers (mrtr.go).
	mrtrKey []byte
	// runCtx is the server's lifetime: MCP tasks are followed within it.
	runCtx context.Context

	// limits bound each token's live HTTP sessions and WaitForMessage
	// calls (limits.go).
	limits TokenLimits
	// sessions bound each token's live HTTP sessions (the front's).
	sessions layer.Sessions
	// refused, if set, hears the requests the scope check refuses.
	refused func(ctx context.Context, method, missing string)
}

// New returns the MCP server of acct, whose messages are in store. It
// registers the resources of the messages already stored, and becomes
// acct's Events receiver.
func New(ctx context.Context, acct *Account, store *Store, opts Options) (*Server, error) {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	s := &Server{acct: acct, store: store, opts: opts, contacts: map[string]bool{}, messages: map[string]bool{},
		updates: map[string]bool{}, wake: make(chan struct{}, 1), taskWait: map[string]chan struct{}{}, waits: map[string]int{},
		inputs: map[string]*taskInput{}, elicits: map[string]elicitWait{}, sinks: map[string]*statusSink{}, runCtx: ctx,
		mrtrKey: newMRTRKey()}
	go s.updater(ctx)
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "agentgw-xmpp", Title: "XMPP MCP Server (agentgw)", Version: Version}, &mcp.ServerOptions{
		Instructions: "This server is the XMPP account " + acct.JID().String() + ". Received messages wait as mid: resources " +
			"(PopMessage, GetMessage, WaitForMessage); roster contacts are xmpp: resources. Ask a contact for a presence subscription before messaging. " +
			"Federated XMPP agents: find them with ListAgents and SearchAgents, read their tools with DescribeAgent, call them with CallAgentTool.",
		Logger:                    slog.New(floor{opts.Log.Handler(), slog.LevelWarn}),
		SupportedProtocolVersions: ProtocolVersions,
		SetCacheable:              layer.SetCacheable,
		// Resources come and go with the roster and the queue: advertise
		// them even while there are none. Prompts: go-sdk answers
		// prompts/list (empty) anyway, so declare it (a server that
		// answers it must, at 2026-07-28).
		Capabilities:       &mcp.ServerCapabilities{Resources: &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true}, Prompts: &mcp.PromptCapabilities{}},
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	for _, t := range tools {
		s.mcp.AddTool(t.mcpTool(), s.handler(t))
	}
	s.agents = newAgents(s, opts.Log)
	for _, t := range agentTools {
		s.mcp.AddTool(t.tool, s.agents.handler(t))
	}
	if len(opts.Agents) > 0 {
		s.agents.proj.cfg, s.agents.proj.poll, s.agents.proj.ready = opts.Agents, opts.AgentPoll, make(chan struct{})
		if s.agents.proj.poll <= 0 {
			s.agents.proj.poll = DefaultAgentPoll
		}
		go s.agents.proj.run(ctx)
	}
	s.mcp.AddReceivingMiddleware(s.scopes)
	// The tasks extension of the current revision (outside the scope
	// check: it checks the scopes it needs itself).
	s.registerExtTasks()
	s.mcp.AddReceivingMiddleware(s.extTasks)
	stored, err := store.List(ctx, acct.JID().String())
	if err != nil {
		return nil, fmt.Errorf("mcp server: %w", err)
	}
	for _, st := range stored {
		s.addMessage(st)
	}
	if err := s.resumeTasks(ctx); err != nil {
		return nil, fmt.Errorf("mcp server: tasks: %w", err)
	}
	acct.SetEvents(s)
	for _, c := range acct.Contacts() {
		s.ContactChanged(c.BareJid)
	}
	return s, nil
}

// MCP returns the go-sdk server, to run on a transport.
func (s *Server) MCP() *mcp.Server { return s.mcp }

// requestScopes returns the scopes of the request's bearer token.
func (s *Server) requestScopes(req mcp.Request) scope.Set {
	if !s.opts.CheckScopes {
		return scope.Every()
	}
	if ex := req.GetExtra(); ex != nil && ex.TokenInfo != nil {
		return scope.Of(ex.TokenInfo.Scopes)
	}
	return scope.Set{}
}

func forbidden(what, sc string) error { return layer.Forbidden(what, sc) }

// scopes is the receiving middleware that enforces the token's scopes:
// the MCP layer's one check (layer.Scopes), with this face's tools.
func (s *Server) scopes(next mcp.MethodHandler) mcp.MethodHandler {
	return layer.Scopes(layer.ScopeCheck{
		Held:      s.requestScopes,
		ToolScope: s.toolScope,
		Ready:     func(ctx context.Context) { s.agents.proj.waitReady(ctx) },
		Refused: func(ctx context.Context, method, missing string) {
			if s.refused != nil {
				s.refused(ctx, method, missing)
			}
		},
	})(next)
}

// toolScope returns the scope a tool needs, or "" for an unknown tool.
func (s *Server) toolScope(name string) string {
	if sc := toolScope(name); sc != "" {
		return sc
	}
	for _, t := range agentTools {
		if t.tool.Name == name {
			return t.scope
		}
	}
	if s.agents.proj.isProjected(name) {
		return scope.AgentsCall
	}
	return ""
}

// ContactChanged implements Events: the contact's resource is added or
// removed as needed, and its subscribers are told.
func (s *Server) ContactChanged(bare string) {
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
func (s *Server) updater(ctx context.Context) {
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
func (s *Server) MessageQueued(st Stored, dropped []string) {
	for _, id := range dropped {
		s.messageRemoved(id)
	}
	s.addMessage(st)
}

func (s *Server) addMessage(st Stored) {
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
func (s *Server) messageRemoved(id string) {
	s.mu.Lock()
	had := s.messages[id]
	delete(s.messages, id)
	s.mu.Unlock()
	if had {
		s.mcp.RemoveResources(MessageURI(id))
	}
}

func (s *Server) readContact(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
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
func (s *Server) readMessage(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
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

// floor passes on only records at or above its level: go-sdk logs every
// notification at info, which would drown the account's own lines.
type floor struct {
	slog.Handler
	min slog.Level
}

func (f floor) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= f.min && f.Handler.Enabled(ctx, l)
}

func (f floor) WithAttrs(a []slog.Attr) slog.Handler { return floor{f.Handler.WithAttrs(a), f.min} }
func (f floor) WithGroup(n string) slog.Handler      { return floor{f.Handler.WithGroup(n), f.min} }
