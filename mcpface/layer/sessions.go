package layer

import (
	"bytes"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultMaxSessionsPerToken is max_sessions_per_token ([mcp] and
// [chat]): the live MCP sessions one token may hold at once.
const DefaultMaxSessionsPerToken = 16

// ReclaimIdle (a variable for tests) is how long a session must have been idle (no request in
// flight, none for that long) before a new session of the same token,
// which is at its max_sessions_per_token, closes it (the least recently
// used first) instead of being refused. A client of the closed session
// gets 404 on its next request, and starts a new session, as Streamable
// HTTP says.
var ReclaimIdle = 10 * time.Second

// Sessions bound the live HTTP sessions of each token on one go-sdk
// server: Max of them (none when zero), counted atomically (an initialize
// reserves its place before go-sdk sees it). The zero value is ready to
// use.
type Sessions struct {
	Max int

	mu      sync.Mutex
	owners  map[string]map[string]*session // by owner, then session id
	byID    map[string]*session
	pending map[string]int // initializes in progress, by owner
}

type session struct {
	owner    string
	last     time.Time // the end of its last request
	inflight int
}

// Count returns the sessions owner holds (those go-sdk has closed since
// the last initialize included) and the initializes in progress.
func (s *Sessions) Count(owner string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.owners[owner]) + s.pending[owner]
}

// ticket is a place reserved for one new session.
type ticket struct {
	s     *Sessions
	owner string
	done  bool
}

// reserve reserves a place for a new session of owner on srv: the
// sessions go-sdk has closed are forgotten first; at Max, the least
// recently used session idle for ReclaimIdle is closed (its id is
// returned) to make room; with none, ok is false.
func (s *Sessions) reserve(srv *mcp.Server, owner string) (t *ticket, closed string, ok bool) {
	live := map[string]*mcp.ServerSession{}
	for ss := range srv.Sessions() {
		live[ss.ID()] = ss
	}
	now := time.Now()
	s.mu.Lock()
	if s.owners == nil {
		s.owners, s.byID, s.pending = map[string]map[string]*session{}, map[string]*session{}, map[string]int{}
	}
	for id := range s.owners[owner] {
		if live[id] == nil {
			delete(s.owners[owner], id)
			delete(s.byID, id)
		}
	}
	if s.Max > 0 && len(s.owners[owner])+s.pending[owner] >= s.Max {
		var lru *session
		for id, e := range s.owners[owner] {
			if e.inflight == 0 && now.Sub(e.last) >= ReclaimIdle && (lru == nil || e.last.Before(lru.last)) {
				lru, closed = e, id
			}
		}
		if lru == nil {
			s.mu.Unlock()
			return nil, "", false
		}
		delete(s.owners[owner], closed)
		delete(s.byID, closed)
	}
	s.pending[owner]++
	s.mu.Unlock()
	if closed != "" {
		live[closed].Close()
	}
	return &ticket{s: s, owner: owner}, closed, true
}

// open counts the session id opened on the ticket.
func (t *ticket) open(id string) {
	t.s.mu.Lock()
	defer t.s.mu.Unlock()
	if t.done {
		return
	}
	t.done = true
	t.s.pending[t.owner]--
	e := &session{owner: t.owner, last: time.Now()}
	if t.s.owners[t.owner] == nil {
		t.s.owners[t.owner] = map[string]*session{}
	}
	t.s.owners[t.owner][id] = e
	t.s.byID[id] = e
}

// cancel gives the place back when no session was opened.
func (t *ticket) cancel() {
	t.s.mu.Lock()
	defer t.s.mu.Unlock()
	if !t.done {
		t.done = true
		t.s.pending[t.owner]--
	}
}

// busy marks a request of session id in flight until the returned func
// is called.
func (s *Sessions) busy(id string) func() {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.byID[id]
	if e == nil {
		return func() {}
	}
	e.inflight++
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		e.inflight--
		e.last = time.Now()
	}
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
		if id := w.Header().Get("Mcp-Session-Id"); id != "" && code < 300 {
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

// codeInvalidRequest is JSON-RPC's Invalid Request.
const codeInvalidRequest = -32600

// decodeRequest decodes body as one JSON-RPC request.
func decodeRequest(body []byte) (*jsonrpc.Request, bool) {
	msg, err := jsonrpc.DecodeMessage(bytes.TrimSpace(body))
	req, ok := msg.(*jsonrpc.Request)
	return req, err == nil && ok
}

// writeError answers status with a JSON-RPC error response (id null when
// id is nil).
func writeError(w http.ResponseWriter, status int, id *jsonrpc.ID, code int64, msg string) {
	resp := &jsonrpc.Response{Error: &jsonrpc.Error{Code: code, Message: msg}}
	if id != nil {
		resp.ID = *id
	}
	b, err := jsonrpc.EncodeMessage(resp)
	if err != nil {
		http.Error(w, msg, status)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}
