package mcpface

import (
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"net/http"
	"time"

	"agentgw/mcpface/layer"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Path is where the Streamable HTTP transport is served.
const Path = layer.Path

// sessionTimeout closes an HTTP session idle for that long.
const sessionTimeout = 30 * time.Minute

// Token is one bearer token of the HTTP transport.
type Token struct {
	// Value is the secret; it is never logged.
	Value []byte
	// Account is the bare JID of the account the token acts as.
	Account string
	// Scopes, scope.Wildcard for all.
	Scopes []string
}

// DefaultMaxSessionsPerToken is [mcp] max_sessions_per_token: the live
// MCP sessions one token may hold at once.
const DefaultMaxSessionsPerToken = layer.DefaultMaxSessionsPerToken

// HTTPOptions configure the Streamable HTTP transport.
type HTTPOptions struct {
	Log *slog.Logger
	// AllowedOrigins are the Origin header values accepted
	// (scheme://host[:port], compared without case); a request with any
	// other Origin gets 403. None (the default) refuses every request that
	// carries an Origin: MCP clients other than browsers send none.
	AllowedOrigins []string
	// MaxSessionsPerToken bounds the live sessions of one token; zero
	// takes DefaultMaxSessionsPerToken.
	MaxSessionsPerToken int
	// Metrics, if set, is served at MetricsPath to any valid token.
	Metrics http.Handler
}

// MetricsPath is where the metrics are served beside Path.
const MetricsPath = "/metrics"

// HTTPHandler is NewHTTPHandler with the default options.
func HTTPHandler(servers map[string]*Server, tokens []Token, log *slog.Logger) http.Handler {
	return NewHTTPHandler(servers, tokens, HTTPOptions{Log: log})
}

// NewHTTPHandler serves the accounts' servers (by bare JID) over
// Streamable HTTP at Path, behind the MCP layer's front (layer.Listener,
// named "mcp"): every request, on any path, is first checked against DNS
// rebinding (an Origin not in opts.AllowedOrigins, or on a loopback
// listener a Host that is not loopback, gets 403); then a request must
// carry one of tokens as a bearer token, or it gets 401 with a
// WWW-Authenticate challenge; the token picks the account and its scopes.
// The front refuses JSON-RPC batches where the revision has none and
// bounds each token's sessions; every refusal is logged and counted.
func NewHTTPHandler(servers map[string]*Server, tokens []Token, opts HTTPOptions) http.Handler {
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.MaxSessionsPerToken <= 0 {
		opts.MaxSessionsPerToken = DefaultMaxSessionsPerToken
	}
	for _, s := range servers {
		s.sessions.Max = opts.MaxSessionsPerToken
	}
	values := make([][]byte, len(tokens))
	for i, t := range tokens {
		values[i] = t.Value
	}
	account := func(ti *auth.TokenInfo) *Server {
		if ti == nil {
			return nil
		}
		acct, _ := ti.Extra["account"].(string)
		return servers[acct]
	}
	front := layer.NewListener("mcp", "agentgw-mcp", log, values, func(i int) *auth.TokenInfo {
		return &auth.TokenInfo{
			Scopes: tokens[i].Scopes,
			// The SDK binds a session to the UserID that created it; it
			// is also the owner of the token's MCP tasks, so it derives
			// from the token (not its place in the list).
			UserID: tokenUserID(tokens[i].Value),
			Extra:  map[string]any{"account": tokens[i].Account},
		}
	}, func(ti *auth.TokenInfo) (*mcp.Server, *layer.Sessions) {
		if s := account(ti); s != nil {
			return s.mcp, &s.sessions
		}
		return nil, nil
	})
	for _, s := range servers {
		s.refused = front.RefuseScope
	}
	// (The front checks the Host of every request, in front of the tasks
	// layer too; go-sdk's check would be a second, partial one.)
	streamable := layer.Streamable(func(r *http.Request) *mcp.Server {
		if s := account(auth.TokenInfoFromContext(r.Context())); s != nil {
			return s.mcp
		}
		return nil
	}, layer.StreamableOptions{Log: log, SessionTimeout: sessionTimeout})

	mux := http.NewServeMux()
	mux.Handle(Path, front.MCP(tasksHTTP(servers, streamable)))
	if opts.Metrics != nil {
		mux.Handle(MetricsPath, front.Authorized(opts.Metrics))
	}
	return front.Guard(mux, opts.AllowedOrigins)
}

// tokenUserID names a token by the SHA-256 of its value (never the value
// itself): stable across restarts, reorderings of [[mcp.token]] and
// -account filtering.
func tokenUserID(value []byte) string {
	sum := sha256.Sum256(value)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// tokenOwner is the owner of the MCP tasks of a token acting as account.
// It starts with "token:", so it never matches stdio's "account:" owner.
func tokenOwner(account, userID string) string {
	return "token:" + account + "/" + userID
}
