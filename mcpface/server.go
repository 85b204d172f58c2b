// Package mcpface is `agentgw mcp`: an MCP server per XMPP account. Each
// Server puts together the account face (package account: the "XMPP MCP
// Server" seed tools and resources), the agent directory and the
// federated agents projected as MCP tools, with MCP Tasks (2025-11-25),
// the tasks extension and MRTR (2026-07-28), all behind the MCP layer's
// scope check (package layer). Store holds the account's message queue
// and the tasks.
//
// A Server serves one account, over stdio (the local user holds every
// scope) or Streamable HTTP (NewHTTPHandler: bearer tokens, each with
// its scopes). docs/mcp-server.md and docs/mcp.md say what clients see.
package mcpface

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"agentgw/mcpface/account"
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
	acct   *account.Account
	store  *Store
	mcp    *mcp.Server
	opts   Options
	face   *account.Face // the seed's tools and resources
	agents *agents

	mu sync.Mutex
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

	// sessions bound each token's live HTTP sessions (the front's).
	sessions layer.Sessions
	// refused, if set, hears the requests the scope check refuses.
	refused func(ctx context.Context, method, missing string)
}

// New returns the MCP server of acct, whose messages are in store. Its
// account face (account.NewFace) registers the resources of the messages
// already stored and becomes acct's Events receiver.
func New(ctx context.Context, acct *account.Account, store *Store, opts Options) (*Server, error) {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	s := &Server{acct: acct, store: store, opts: opts, taskWait: map[string]chan struct{}{}, waits: map[string]int{},
		inputs: map[string]*taskInput{}, elicits: map[string]elicitWait{}, sinks: map[string]*statusSink{}, runCtx: ctx,
		mrtrKey: newMRTRKey()}
	// Over stdio (the HTTP front replaces it with its listener's): a
	// refusal is logged once and counted, as on every listener.
	s.refused = func(_ context.Context, method, missing string) {
		layer.Refused.Inc("stdio", layer.ReasonScope)
		opts.Log.Info("mcp: refused", "listener", "stdio", "reason", layer.ReasonScope, "method", method, "missing", missing)
	}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "agentgw-xmpp", Title: "XMPP MCP Server (agentgw)", Version: layer.Version}, &mcp.ServerOptions{
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
	face, err := account.NewFace(ctx, acct, store.Store, s.mcp)
	if err != nil {
		return nil, fmt.Errorf("mcp server: %w", err)
	}
	s.face = face
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
	if err := s.resumeTasks(ctx); err != nil {
		return nil, fmt.Errorf("mcp server: tasks: %w", err)
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
	if sc := account.ToolScope(name); sc != "" {
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
