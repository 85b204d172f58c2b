// Package chatface lets MCP clients answer as a hosted endpoint whose chat
// is "queue" (docs/messaging.md): over Streamable HTTP at layer.Path, a
// [[chat.token]] bearer token acts as one endpoint and gets the seed's
// messaging tools with their exact names, arguments and result types
// (account.ToolDef): SendChatMessage through the chat service's outbox
// where consent and blocking allow; PopMessage, GetMessage and
// WaitForMessage on the endpoint's queue of received chats (the mid:
// resources); Accept- and DeclinePresenceSubscription on its virtual
// subscriptions (the xmpp: resources). The roster tools are left out (an
// endpoint has no roster), and none of these tools invokes an endpoint's
// tools. docs/messaging.md, "MCP clients as the endpoint".
package chatface

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"agentgw/chat"
	"agentgw/db"
	"agentgw/mcpface/account"
	"agentgw/mcpface/layer"
	"agentgw/policy"
	"agentgw/wire"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"mellium.im/xmpp/jid"
	"mellium.im/xmpp/stanza"
)

// Limits (docs/limits.md).
const (
	// maxResources bounds the mid: resources listed per endpoint.
	maxResources = 1000
	// sessionTimeout closes an HTTP session idle for that long.
	sessionTimeout = 30 * time.Minute
)

// Token is one [[chat.token]].
type Token struct {
	// Value is the secret; it is never logged.
	Value []byte
	// Endpoint is the queue endpoint the token acts as.
	Endpoint string
	Scopes   []string
}

// Options configures Handler.
type Options struct {
	Chat *chat.Service
	// Policy returns the policy in force (consent needs a chat grant).
	Policy func() *policy.Policy
	// Endpoints are the queue endpoints served.
	Endpoints []string
	Tokens    []Token
	Log       *slog.Logger
	// AllowedOrigins are the Origin values accepted ([chat]
	// allowed_origins): a request with any other gets 403, as does one
	// whose Host is not loopback (layer.Listener.Guard).
	AllowedOrigins []string
	// MaxSessionsPerToken bounds the live sessions of one token
	// ([chat] max_sessions_per_token); zero takes
	// layer.DefaultMaxSessionsPerToken.
	MaxSessionsPerToken int
}

// endpointServer is the MCP server of one queue endpoint.
type endpointServer struct {
	o        *Options
	endpoint string
	mcp      *mcp.Server

	// limits bound each token's WaitForMessage calls, sessions its
	// live HTTP sessions.
	limits   account.TokenLimits
	sessions layer.Sessions

	mu        sync.Mutex
	resources map[string]bool
}

// Handler serves the queue endpoints over Streamable HTTP at
// layer.Path, behind the MCP layer's front (layer.Listener, named
// "chat"): the Origin and Host checks, the bearer tokens, the refusal of
// JSON-RPC batches where the revision has none, and the sessions per
// token, as on `agentgw mcp -http`. run closes its resource watchers with
// ctx.
func Handler(ctx context.Context, o Options) http.Handler {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.MaxSessionsPerToken <= 0 {
		o.MaxSessionsPerToken = layer.DefaultMaxSessionsPerToken
	}
	values := make([][]byte, len(o.Tokens))
	for i, t := range o.Tokens {
		values[i] = t.Value
	}
	servers := map[string]*endpointServer{}
	endpoint := func(ti *auth.TokenInfo) *endpointServer {
		if ti == nil {
			return nil
		}
		ep, _ := ti.Extra["endpoint"].(string)
		return servers[ep]
	}
	front := layer.NewListener("chat", "agentgw-chat", o.Log, values, func(i int) *auth.TokenInfo {
		return &auth.TokenInfo{
			Scopes: o.Tokens[i].Scopes,
			UserID: "chat-token:" + fmt.Sprint(i) + ":" + o.Tokens[i].Endpoint,
			Extra:  map[string]any{"endpoint": o.Tokens[i].Endpoint},
		}
	}, func(ti *auth.TokenInfo) (*mcp.Server, *layer.Sessions) {
		if s := endpoint(ti); s != nil {
			return s.mcp, &s.sessions
		}
		return nil, nil
	})
	for _, ep := range o.Endpoints {
		s := newEndpointServer(&o, ep, front.RefuseScope)
		s.sessions.Max = o.MaxSessionsPerToken
		servers[ep] = s
		go s.watch(ctx)
	}
	// (The front checks the Host of every request.)
	streamable := layer.Streamable(func(r *http.Request) *mcp.Server {
		if s := endpoint(auth.TokenInfoFromContext(r.Context())); s != nil {
			return s.mcp
		}
		return nil
	}, layer.StreamableOptions{Log: o.Log, SessionTimeout: sessionTimeout})
	mux := http.NewServeMux()
	mux.Handle(layer.Path, front.MCP(streamable))
	return front.Guard(mux, o.AllowedOrigins)
}

func newEndpointServer(o *Options, endpoint string, refused func(ctx context.Context, method, missing string)) *endpointServer {
	s := &endpointServer{o: o, endpoint: endpoint, resources: map[string]bool{}}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "agentgw-chat", Title: "XMPP MCP Server for " + endpoint + " (agentgw)", Version: layer.Version}, &mcp.ServerOptions{
		Instructions: "This server is the hosted XMPP endpoint " + endpoint + ". Chats people send it wait as mid: resources " +
			"(PopMessage, GetMessage, WaitForMessage); answer with SendChatMessage. It may write only to people who wrote to it " +
			"recently or subscribe to its presence (its subscribers are the xmpp: resources), and never after a bounce until they write again.",
		Logger:                    slog.New(slog.DiscardHandler),
		SupportedProtocolVersions: layer.ProtocolVersions,
		SetCacheable:              layer.SetCacheable,
		// Prompts: the list is empty, but go-sdk answers it, so it is
		// declared (as on agentgw mcp).
		Capabilities: &mcp.ServerCapabilities{Resources: &mcp.ResourceCapabilities{ListChanged: true}, Prompts: &mcp.PromptCapabilities{}},
	})
	for _, t := range tools {
		s.mcp.AddTool(t.def.MCPTool(), s.handler(t))
	}
	// The MCP layer's one scope check, with this face's tools: a mid:
	// resource needs Tools.Message.Get, as on agentgw mcp.
	s.mcp.AddReceivingMiddleware(layer.Scopes(layer.ScopeCheck{Held: layer.TokenScopes, ToolScope: toolScope, Refused: refused}))
	return s
}

// watch keeps the resources in step with the queue and the subscribers.
func (s *endpointServer) watch(ctx context.Context) {
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	for {
		changed := s.o.Chat.QueueChanged(s.endpoint)
		s.sync(ctx)
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-tick.C:
		}
	}
}

func (s *endpointServer) sync(ctx context.Context) {
	store := s.o.Chat.Store()
	queued, err := store.ChatQueue(ctx, s.endpoint, maxResources)
	if err != nil {
		return
	}
	subs, err := store.Subscribers(ctx, s.endpoint)
	if err != nil {
		return
	}
	want := map[string]func(){}
	for _, m := range queued {
		m := m
		desc := m.Body
		if len(desc) > 120 {
			desc = strings.ToValidUTF8(desc[:120], "") + "…"
		}
		from := m.Sender
		if j, err := jid.Parse(m.Sender); err == nil {
			from = j.Bare().String()
		}
		want[account.MessageURI(m.ID)] = func() {
			s.mcp.AddResource(&mcp.Resource{URI: account.MessageURI(m.ID), Name: "message " + m.ID, MIMEType: "application/json",
				Title: messageType(m.Type) + " message from " + from, Description: desc}, s.readMessage)
		}
	}
	for _, sub := range subs {
		sub := sub
		want[account.ContactURI(sub)] = func() {
			s.mcp.AddResource(&mcp.Resource{URI: account.ContactURI(sub), Name: sub, MIMEType: "application/json",
				Title: "presence subscriber " + sub}, s.readContact)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var gone []string
	for uri := range s.resources {
		if want[uri] == nil {
			gone = append(gone, uri)
			delete(s.resources, uri)
		}
	}
	if len(gone) > 0 {
		s.mcp.RemoveResources(gone...)
	}
	for uri, add := range want {
		if !s.resources[uri] {
			add()
			s.resources[uri] = true
		}
	}
}

func (s *endpointServer) readMessage(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	id, ok := strings.CutPrefix(req.Params.URI, "mid:")
	if !ok {
		return nil, mcp.ResourceNotFoundError(req.Params.URI)
	}
	m, err := s.o.Chat.Store().ChatTake(ctx, s.endpoint, id, true)
	if err != nil {
		return nil, mcp.ResourceNotFoundError(req.Params.URI)
	}
	s.o.Chat.QueueTouched(s.endpoint)
	return jsonContents(req.Params.URI, response(m, "message read and removed from the received messages"))
}

func (s *endpointServer) readContact(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	bare, ok := account.ParseContactURI(req.Params.URI)
	if !ok {
		return nil, mcp.ResourceNotFoundError(req.Params.URI)
	}
	if sub, err := s.o.Chat.Store().Subscribed(ctx, s.endpoint, bare); err != nil || !sub {
		return nil, mcp.ResourceNotFoundError(req.Params.URI)
	}
	consent := s.o.Chat.Store().ChatConsent(ctx, s.endpoint, bare, s.o.Chat.Consent())
	return jsonContents(req.Params.URI, map[string]any{
		"BareJid": bare, "Subscription": "from", "MayMessage": consent == nil,
	})
}

func jsonContents(uri string, v any) (*mcp.ReadResourceResult, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(raw)}}}, nil
}

// messageType is the seed's MessageType of a stanza type.
func messageType(t string) string {
	if t == string(stanza.ChatMessage) {
		return "Chat"
	}
	return "Normal"
}

// response is the seed's MessageResponse of a queued message.
func response(m db.ChatIn, msg string) account.MessageResponse {
	typ := messageType(m.Type)
	isErr := false
	none := "None"
	r := account.MessageResponse{Success: true, Message: msg, MessageId: m.ID, From: m.Sender, To: m.Recipient,
		Body: m.Body, Subject: m.Subject, ThreadID: m.Thread, ParentThreadID: m.Parent,
		Type: &typ, ErrorMessage: &isErr, ErrorMessageType: &none}
	if j, err := jid.Parse(m.Sender); err == nil {
		r.FromBareJid = j.Bare().String()
	}
	return r
}

// errNoMessage is the text of a MessageResponse without a message.
var errNoMessage = errors.New("no message")

// validText reports whether s is a message text we send: non-empty, and
// only characters XML allows (wire.ValidText, the check mcpface's
// send_message makes), so that nothing is turned into U+FFFD on the way.
func validText(s string) bool { return s != "" && wire.ValidText(s) }
