package layer

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Current is MCP's current revision: no initialize and no sessions; each
// request carries its revision, client capabilities and client info in
// _meta (MetaProtocolVersion and its siblings).
const Current = "2026-07-28"

// Version is the implementation version every face announces in
// serverInfo.
var Version = "dev"

// ProtocolVersions are the MCP revisions every face serves, newest first.
var ProtocolVersions = []string{Current, "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// CodeHeaderMismatch is the current revision's error of an HTTP header
// that contradicts the body (Mcp-Method, Mcp-Name).
const CodeHeaderMismatch = -32020

// The per-request _meta keys of the current revision.
const (
	MetaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	MetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
)

// MetaVersion returns the revision a request's params carry in _meta
// ("" for a request of an older revision).
func MetaVersion(params json.RawMessage) string {
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if len(params) == 0 || json.Unmarshal(params, &p) != nil {
		return ""
	}
	var v string
	_ = json.Unmarshal(p.Meta[MetaProtocolVersion], &v)
	return v
}

// IsCurrent reports whether v is the current revision or a later one.
func IsCurrent(v string) bool { return v >= Current }

// Sessionless reports whether an HTTP request (body already read) is of
// the current revision or later, so that it is served without a
// session: its Mcp-Protocol-Version header says so, or its _meta does
// (server/discover carries its revision only there on a first contact).
func Sessionless(r *http.Request, body []byte) bool {
	if IsCurrent(r.Header.Get("Mcp-Protocol-Version")) {
		return true
	}
	if r.Method != http.MethodPost {
		return false
	}
	req, ok := decodeRequest(body)
	return ok && (req.Method == "server/discover" || IsCurrent(MetaVersion(req.Params)))
}

// StreamableOptions configure Streamable.
type StreamableOptions struct {
	Log *slog.Logger
	// SessionTimeout closes a session (older revisions) idle that long.
	SessionTimeout time.Duration
}

// Streamable is go-sdk's Streamable HTTP transport for both kinds of
// client: a request of the current revision goes to a stateless handler
// (no Mcp-Session-Id, so it never counts against max_sessions_per_token;
// subscriptions/listen streams on its own request), any other to the
// stateful handler, whose sessions older revisions need (elicitation,
// notifications, their MCP Tasks). Host checks are the front's (Guard).
func Streamable(server func(*http.Request) *mcp.Server, o StreamableOptions) http.Handler {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	stateful := mcp.NewStreamableHTTPHandler(server, &mcp.StreamableHTTPOptions{Logger: o.Log, SessionTimeout: o.SessionTimeout,
		DisableLocalhostProtection: true})
	stateless := mcp.NewStreamableHTTPHandler(server, &mcp.StreamableHTTPOptions{Logger: o.Log, Stateless: true,
		DisableLocalhostProtection: true})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body []byte
		if r.Method == http.MethodPost && r.Body != nil {
			b, err := io.ReadAll(io.LimitReader(r.Body, MaxBody+1))
			if err != nil {
				http.Error(w, "reading the request: "+err.Error(), http.StatusBadRequest)
				return
			}
			body = b
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		if Sessionless(r, body) {
			stateless.ServeHTTP(w, r)
			return
		}
		stateful.ServeHTTP(w, r)
	})
}

// The cache hints of list and read results (current revision): results
// depend on the token (its scopes, its account), so they are private;
// resources come and go with the queue and the roster, and reading a
// mid: resource removes it, so only the tool list is kept a while.
const (
	ToolsTTL   = 10 * time.Second
	CacheScope = "private"
)

// SetCacheable is ServerOptions.SetCacheable for every face.
func SetCacheable(_ context.Context, req mcp.Request, c *mcp.Cacheable) {
	c.CacheScope = CacheScope
	c.TTLMs = 0
	if _, ok := req.(*mcp.ListToolsRequest); ok {
		c.TTLMs = int(ToolsTTL / time.Millisecond)
	}
}
