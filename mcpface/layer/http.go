package layer

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"

	"agentgw/agentclient"
	"agentgw/metrics"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Path is where the Streamable HTTP transport is served.
const Path = "/mcp"

// MaxBody bounds the request bodies the layer reads in front of go-sdk's
// handler (go-sdk applies its own limit after); a larger one gets 413.
const MaxBody = 4 << 20

// The reasons of refusals: the reason label of
// agentgw_mcp_http_refused_total and the reason of the log record.
const (
	ReasonOrigin   = "origin"   // an Origin not allowed (403)
	ReasonHost     = "host"     // a Host not loopback on a loopback listener (403)
	ReasonToken    = "token"    // no valid bearer token (401)
	ReasonBody     = "body"     // a body over MaxBody (413)
	ReasonBatch    = "batch"    // a JSON-RPC batch where the revision has none (400)
	ReasonSessions = "sessions" // past max_sessions_per_token (429)
	ReasonScope    = "scope"    // a method or tool outside the token's scopes
)

// Refused counts the refusals of the MCP listeners, by listener (mcp:
// `agentgw mcp -http`; chat: [chat] mcp_listen; stdio for scopes) and
// reason.
var Refused = metrics.MCPRefused

// Listener is the front of one MCP HTTP listener: the tokens it knows,
// and the logging and counting of what it refuses.
type Listener struct {
	// Name is the listener's label: "mcp" or "chat".
	Name string
	// Realm is the bearer challenge's realm.
	Realm string
	Log   *slog.Logger

	values [][]byte
	info   func(i int) *auth.TokenInfo
	server func(*auth.TokenInfo) (*mcp.Server, *Sessions)
}

// NewListener makes the front of a listener whose bearer tokens are
// values; info(i) is the TokenInfo of values[i], and server the go-sdk
// server and the sessions of a token (nil when it has none).
func NewListener(name, realm string, log *slog.Logger, values [][]byte, info func(int) *auth.TokenInfo,
	server func(*auth.TokenInfo) (*mcp.Server, *Sessions)) *Listener {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Listener{Name: name, Realm: realm, Log: log, values: values, info: info, server: server}
}

// Refuse logs a refusal of r, once, with its reason, and counts it.
func (l *Listener) Refuse(r *http.Request, reason string, attrs ...any) {
	Refused.Inc(l.Name, reason)
	l.Log.Info("mcp http: refused", append([]any{"listener", l.Name, "reason", reason, "remote", r.RemoteAddr}, attrs...)...)
}

// RefuseScope is ScopeCheck.Refused for this listener.
func (l *Listener) RefuseScope(_ context.Context, method, missing string) {
	Refused.Inc(l.Name, ReasonScope)
	l.Log.Info("mcp: refused", "listener", l.Name, "reason", ReasonScope, "method", method, "missing", missing)
}

// Token returns the TokenInfo of r's bearer token, or answers 401 (a
// refusal) and returns nil.
func (l *Listener) Token(w http.ResponseWriter, r *http.Request) *auth.TokenInfo {
	h := r.Header.Get("Authorization")
	i, ok := BearerIndex(h, l.values)
	if !ok {
		Unauthorized(w, r, l.Realm)
		l.Refuse(r, ReasonToken, "credentials", h != "")
		return nil
	}
	return l.info(i)
}

// Authorized serves next to a request with a valid token, and answers
// any other with 401.
func (l *Listener) Authorized(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if l.Token(w, r) != nil {
			next.ServeHTTP(w, r)
		}
	})
}

// MCP is the front of go-sdk's Streamable HTTP handler (and of what a face
// puts before it), next: a request needs a valid bearer token, whose
// TokenInfo next finds in the context (auth.TokenInfoFromContext); a POST
// body over MaxBody, a JSON-RPC batch where the revision has none, and an
// initialize past the token's sessions are refused; and the token's
// sessions are tracked (Sessions).
func (l *Listener) MCP(next http.Handler) http.Handler {
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ti := auth.TokenInfoFromContext(r.Context())
		srv, sessions := l.server(ti)
		if srv == nil || sessions == nil {
			next.ServeHTTP(w, r)
			return
		}
		id := r.Header.Get("Mcp-Session-Id")
		if id != "" {
			defer sessions.busy(id)()
		}
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, MaxBody+1))
		r.Body = io.NopCloser(bytes.NewReader(body))
		if err == nil && len(body) > MaxBody {
			l.Refuse(r, ReasonBody)
			http.Error(w, fmt.Sprintf("request body over %d bytes", MaxBody), http.StatusRequestEntityTooLarge)
			return
		}
		if batch, initialize := isBatch(body); batch {
			if why := batchRefused(r, srv, id, initialize); why != "" {
				l.Refuse(r, ReasonBatch, "why", why)
				writeError(w, http.StatusBadRequest, nil, codeInvalidRequest, "JSON-RPC batches are refused: "+why)
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		req, ok := decodeRequest(body)
		if !ok || req.Method != "initialize" {
			next.ServeHTTP(w, r)
			return
		}
		ticket, closed, ok := sessions.reserve(srv, ti.UserID)
		if !ok {
			l.Refuse(r, ReasonSessions, "max", sessions.Max)
			writeError(w, http.StatusTooManyRequests, &req.ID, CodeForbidden,
				fmt.Sprintf("this token already holds %d MCP sessions (max_sessions_per_token), none of them idle: close one (HTTP DELETE) or let it expire", sessions.Max))
			return
		}
		if closed != "" {
			l.Log.Info("mcp http: idle session closed for a new one", "listener", l.Name, "remote", r.RemoteAddr, "max", sessions.Max)
		}
		sw := &sessionWriter{ResponseWriter: w, opened: ticket.open}
		defer ticket.cancel()
		next.ServeHTTP(sw, r)
	})
	verify := auth.RequireBearerToken(func(_ context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
		i, ok := BearerIndex(r.Header.Get("Authorization"), l.values)
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return l.info(i), nil
	}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(inner)
	return l.Authorized(verify)
}

// The revisions that have JSON-RPC batches (2025-06-18 removed them).
var batchRevisions = map[string]bool{"2025-03-26": true, "2024-11-05": true}

// batchRefused returns why a batch (holding an initialize or not) is
// refused, or "" when it goes on: only inside a live session of a
// revision with batches, and never with an initialize (which a batch
// MUST NOT hold on those revisions either).
func batchRefused(r *http.Request, srv *mcp.Server, id string, initialize bool) string {
	if initialize {
		return "an initialize must not be part of a batch"
	}
	if v := r.Header.Get("Mcp-Protocol-Version"); v != "" && !batchRevisions[v] {
		return "MCP " + v + " has no batches"
	}
	if id == "" {
		return "a batch needs a session of MCP 2025-03-26 or earlier"
	}
	for ss := range srv.Sessions() {
		if ss.ID() == id {
			if p := ss.InitializeParams(); p != nil && batchRevisions[p.ProtocolVersion] {
				return ""
			}
			return "this session's MCP revision has no batches"
		}
	}
	return "a batch needs a session of MCP 2025-03-26 or earlier"
}

// isBatch reports whether body is a JSON array (a JSON-RPC batch), and
// whether one of its members is an initialize.
func isBatch(body []byte) (batch, initialize bool) {
	b := bytes.TrimLeft(body, " \t\r\n")
	if len(b) == 0 || b[0] != '[' {
		return false, false
	}
	var members []struct {
		Method string `json:"method"`
	}
	_ = json.Unmarshal(b, &members)
	for _, m := range members {
		if m.Method == "initialize" {
			initialize = true
		}
	}
	return true, initialize
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

// Guard refuses with 403, before anything else sees the request, on a
// loopback listener one whose Host is not a loopback name (a rebound
// name's page), and one whose Origin is not in allowed (browsers send it;
// MCP requires servers to check it against DNS rebinding; none allowed
// refuses every request that carries one) nor, on a loopback listener,
// the listener's own origin. It covers every path.
func (l *Listener) Guard(next http.Handler, allowed []string) http.Handler {
	origins := map[string]bool{}
	for _, o := range allowed {
		origins[strings.ToLower(o)] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
		loopback := ok && loopbackAddr(local.String())
		if loopback && !loopbackAddr(r.Host) {
			l.Refuse(r, ReasonHost, "host", agentclient.SafeText(r.Host, 200))
			http.Error(w, "forbidden: invalid Host header", http.StatusForbidden)
			return
		}
		if vs := r.Header.Values("Origin"); len(vs) > 0 && (len(vs) > 1 || !origins[strings.ToLower(vs[0])] && !(loopback && sameOrigin(r, vs[0]))) {
			l.Refuse(r, ReasonOrigin, "origin", agentclient.SafeText(vs[0], 200))
			http.Error(w, "forbidden: origin not allowed", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// sameOrigin reports whether origin is the request's own: its scheme and
// its Host, exactly (a page the listener itself served). Only on a
// loopback listener, whose Host is checked first, does that exclude a
// rebound name.
func sameOrigin(r *http.Request, origin string) bool {
	scheme := "http://"
	if r.TLS != nil {
		scheme = "https://"
	}
	return strings.EqualFold(origin, scheme+r.Host)
}

// loopbackAddr reports whether host[:port] names the loopback interface.
func loopbackAddr(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
