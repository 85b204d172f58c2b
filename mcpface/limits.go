package mcpface

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxWaitsPerToken bounds the WaitForMessage calls one token (or the
// stdio client) has in progress at once.
const MaxWaitsPerToken = 4

// TokenLimits bound what each token holds at once on one MCP server: its
// live HTTP sessions (MaxSessions, none when zero) and its WaitForMessage
// calls in progress (MaxWaitsPerToken). The zero value is ready to use.
type TokenLimits struct {
	MaxSessions int

	mu sync.Mutex
	// sessions are the sessions each token (by owner) opened.
	sessions map[string]map[string]bool
	// waiters counts the WaitForMessage calls in progress, by token.
	waiters map[string]int
}

// SessionAllowed reports whether owner may open one more session of srv:
// the sessions go-sdk has closed (expired, deleted) are forgotten first.
func (l *TokenLimits) SessionAllowed(srv *mcp.Server, owner string) bool {
	live := map[string]bool{}
	for ss := range srv.Sessions() {
		live[ss.ID()] = true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for id := range l.sessions[owner] {
		if !live[id] {
			delete(l.sessions[owner], id)
		}
	}
	return l.MaxSessions <= 0 || len(l.sessions[owner]) < l.MaxSessions
}

// SessionOpened counts the session id that owner opened.
func (l *TokenLimits) SessionOpened(owner, id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sessions == nil {
		l.sessions = map[string]map[string]bool{}
	}
	if l.sessions[owner] == nil {
		l.sessions[owner] = map[string]bool{}
	}
	l.sessions[owner][id] = true
}

// refuseSession answers an initialize past MaxSessions: 429, with a
// JSON-RPC error that names the limit.
func (l *TokenLimits) refuseSession(w http.ResponseWriter, id jsonrpc.ID) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusTooManyRequests)
	b, _ := jsonrpc.EncodeMessage(response(id, nil, &jsonrpc.Error{Code: CodeForbidden,
		Message: fmt.Sprintf("this token already holds %d MCP sessions (max_sessions_per_token): close one (HTTP DELETE) or let it expire", l.MaxSessions)}))
	w.Write(b)
}

// StartWait counts one more WaitForMessage of the request's token, or
// reports false when it already has MaxWaitsPerToken.
func (l *TokenLimits) StartWait(req mcp.Request) (done func(), ok bool) {
	key := "stdio"
	if ex := req.GetExtra(); ex != nil && ex.TokenInfo != nil {
		key = ex.TokenInfo.UserID
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.waiters[key] >= MaxWaitsPerToken {
		return nil, false
	}
	if l.waiters == nil {
		l.waiters = map[string]int{}
	}
	l.waiters[key]++
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.waiters[key]--; l.waiters[key] <= 0 {
			delete(l.waiters, key)
		}
	}, true
}

// WaitRefused is the text of a WaitForMessage refused by StartWait.
var WaitRefused = fmt.Sprintf("this token already has %d WaitForMessage calls in progress: wait for one to return", MaxWaitsPerToken)

// LimitSessions bounds, in front of go-sdk's Streamable HTTP handler next
// (after the bearer check), the sessions of each token by l: an initialize
// past MaxSessions is refused, and the session id of one let through is
// counted. server names the go-sdk server and the owner (the token) of a
// request, or nil.
func (l *TokenLimits) LimitSessions(next http.Handler, server func(*http.Request) (srv *mcp.Server, owner string)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || auth.TokenInfoFromContext(r.Context()) == nil {
			next.ServeHTTP(w, r)
			return
		}
		srv, owner := server(r)
		if srv == nil {
			next.ServeHTTP(w, r)
			return
		}
		body, tooLarge, err := peekBody(w, r)
		if tooLarge {
			return
		}
		msg, derr := jsonrpc.DecodeMessage(body)
		req, isReq := msg.(*jsonrpc.Request)
		if err != nil || derr != nil || !isReq || req.Method != "initialize" {
			next.ServeHTTP(w, r)
			return
		}
		if !l.SessionAllowed(srv, owner) {
			l.refuseSession(w, req.ID)
			return
		}
		next.ServeHTTP(&sessionWriter{ResponseWriter: w, opened: func(id string) { l.SessionOpened(owner, id) }}, r)
	})
}

// peekBody reads r's body, at most maxTaskBody bytes, and puts it back for
// the handlers behind. A larger one is answered 413 (tooLarge): past what
// is read here, nothing goes on unchecked (an initialize there would
// escape max_sessions_per_token).
func peekBody(w http.ResponseWriter, r *http.Request) (body []byte, tooLarge bool, err error) {
	body, err = io.ReadAll(io.LimitReader(r.Body, maxTaskBody+1))
	r.Body = io.NopCloser(bytes.NewReader(body))
	if err == nil && len(body) > maxTaskBody {
		http.Error(w, fmt.Sprintf("request body over %d bytes", maxTaskBody), http.StatusRequestEntityTooLarge)
		return nil, true, nil
	}
	return body, false, err
}

// sessionWriter sees the Mcp-Session-Id of an initialize's answer.
type sessionWriter struct {
	http.ResponseWriter
	opened func(string)
	seen   bool
}

func (w *sessionWriter) WriteHeader(code int) {
	if !w.seen {
		w.seen = true
		if id := w.Header().Get("Mcp-Session-Id"); id != "" {
			w.opened(id)
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *sessionWriter) Write(b []byte) (int, error) {
	if !w.seen {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (flushes).
func (w *sessionWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
