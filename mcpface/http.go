package mcpface

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Path is where the Streamable HTTP transport is served.
const Path = "/mcp"

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
const DefaultMaxSessionsPerToken = 16

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
// Streamable HTTP at Path. Every request, on any path, is first checked
// against DNS rebinding: an Origin not in opts.AllowedOrigins, or (on a
// loopback listener) a Host that is not loopback, gets 403 before anything
// else sees it. Then a request must carry one of tokens as a bearer
// token, or it gets 401 with a WWW-Authenticate challenge; the token picks
// the account and its scopes.
func NewHTTPHandler(servers map[string]*Server, tokens []Token, opts HTTPOptions) http.Handler {
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.MaxSessionsPerToken <= 0 {
		opts.MaxSessionsPerToken = DefaultMaxSessionsPerToken
	}
	for _, s := range servers {
		s.limits.MaxSessions = opts.MaxSessionsPerToken
	}
	values := make([][]byte, len(tokens))
	for i, t := range tokens {
		values[i] = t.Value
	}
	lookup := func(header string) (int, bool) { return BearerIndex(header, values) }
	streamable := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		ti := auth.TokenInfoFromContext(r.Context())
		if ti == nil {
			return nil
		}
		acct, _ := ti.Extra["account"].(string)
		if s := servers[acct]; s != nil {
			return s.mcp
		}
		return nil
	}, &mcp.StreamableHTTPOptions{Logger: log, SessionTimeout: sessionTimeout,
		// guard checks the Host of every request, in front of the tasks
		// layer too; go-sdk's check would be a second, partial one.
		DisableLocalhostProtection: true})
	verify := auth.RequireBearerToken(func(_ context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
		i, ok := lookup(r.Header.Get("Authorization"))
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{
			Scopes: tokens[i].Scopes,
			// The SDK binds a session to the UserID that created it; it
			// is also the owner of the token's MCP tasks, so it derives
			// from the token (not its place in the list).
			UserID: tokenUserID(tokens[i].Value),
			Extra:  map[string]any{"account": tokens[i].Account},
		}, nil
	}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(tasksHTTP(servers, streamable))

	mux := http.NewServeMux()
	unauthorized := func(w http.ResponseWriter, r *http.Request) bool {
		h := r.Header.Get("Authorization")
		if _, ok := lookup(h); !ok {
			Unauthorized(w, r, "agentgw-mcp")
			log.Info("mcp http: unauthorized request", "remote", r.RemoteAddr, "credentials", h != "")
			return true
		}
		return false
	}
	mux.HandleFunc(Path, func(w http.ResponseWriter, r *http.Request) {
		if !unauthorized(w, r) {
			verify.ServeHTTP(w, r)
		}
	})
	if opts.Metrics != nil {
		mux.HandleFunc(MetricsPath, func(w http.ResponseWriter, r *http.Request) {
			if !unauthorized(w, r) {
				opts.Metrics.ServeHTTP(w, r)
			}
		})
	}
	return Guard(mux, opts.AllowedOrigins, log)
}

// BearerIndex returns the index of the one value among values that an
// Authorization header carries as its bearer token. It compares with every
// value, in constant time; no match or more than one is false.
func BearerIndex(header string, values [][]byte) (int, bool) {
	typ, value, _ := strings.Cut(header, " ")
	if !strings.EqualFold(typ, "Bearer") || value == "" {
		return 0, false
	}
	found, idx, given := 0, -1, []byte(strings.TrimSpace(value))
	for i, v := range values {
		if subtle.ConstantTimeCompare(v, given) == 1 {
			found, idx = found+1, i
		}
	}
	return idx, found == 1
}

// Unauthorized answers 401 with the bearer challenge of realm: with
// error="invalid_token" when credentials came, none otherwise (RFC 6750
// §3).
func Unauthorized(w http.ResponseWriter, r *http.Request, realm string) {
	challenge := `Bearer realm="` + realm + `"`
	if r.Header.Get("Authorization") != "" {
		challenge += `, error="invalid_token"`
	}
	w.Header().Set("WWW-Authenticate", challenge)
	http.Error(w, "unauthorized: a valid bearer token is required", http.StatusUnauthorized)
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
