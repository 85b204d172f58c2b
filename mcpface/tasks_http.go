package mcpface

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"agentgw/mcpface/layer"
	"agentgw/scope"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxTaskBody bounds the request bodies the MCP Tasks layer reads in
// front of go-sdk's HTTP handler (go-sdk applies its own limit after).
const maxTaskBody = layer.MaxBody

// tasksHTTP is the MCP Tasks layer over Streamable HTTP, in front of
// go-sdk's handler (after the bearer check): it serves task-augmented
// tools/call and tasks/* for the token (its tasks are the token's own),
// and amends the answers to initialize and tools/list as over stdio.
func tasksHTTP(servers map[string]*Server, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		body, tooLarge, err := peekBody(w, r)
		if tooLarge {
			return
		}
		if err != nil {
			next.ServeHTTP(w, r)
			return
		}
		msg, err := jsonrpc.DecodeMessage(body)
		ti := auth.TokenInfoFromContext(r.Context())
		if err != nil || ti == nil {
			next.ServeHTTP(w, r)
			return
		}
		acct, _ := ti.Extra["account"].(string)
		s := servers[acct]
		if s == nil {
			next.ServeHTTP(w, r)
			return
		}
		owner := tokenOwner(acct, ti.UserID)
		if resp, ok := msg.(*jsonrpc.Response); ok && s.deliver(owner, resp) {
			// The answer to an elicitation of the layer (a response
			// is acknowledged with 202, as the transport says).
			w.WriteHeader(http.StatusAccepted)
			return
		}
		req, ok := msg.(*jsonrpc.Request)
		if !ok || !req.ID.IsValid() {
			next.ServeHTTP(w, r)
			return
		}
		if layer.IsCurrent(r.Header.Get("Mcp-Protocol-Version")) || layer.IsCurrent(layer.MetaVersion(req.Params)) {
			// The current revision has no 2025-11-25 Tasks; go-sdk and
			// the extension's middleware serve it (tasksext.go). The
			// extension routes tasks/* by Mcp-Name: it must be the
			// taskId (go-sdk checks it for the core methods only).
			switch req.Method {
			case "tasks/get", "tasks/update", "tasks/cancel":
				var p struct {
					TaskID string `json:"taskId"`
				}
				json.Unmarshal(req.Params, &p)
				if name := r.Header.Get("Mcp-Name"); name != p.TaskID {
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(http.StatusBadRequest)
					b, _ := jsonrpc.EncodeMessage(response(req.ID, nil, &jsonrpc.Error{Code: layer.CodeHeaderMismatch,
						Message: "header mismatch: the Mcp-Name header must be the taskId of " + req.Method}))
					w.Write(b)
					return
				}
			}
			next.ServeHTTP(w, r)
			return
		}
		held := scope.Of(ti.Scopes)
		switch req.Method {
		case "initialize", "tools/list":
			// (The layer's front has counted an initialize against
			// max_sessions_per_token; it sees the session id in the
			// header written below.)
			cw := &captureWriter{header: w.Header()}
			next.ServeHTTP(cw, r)
			patch := addTasksCapability
			if req.Method == "tools/list" {
				patch = s.addExecution
			}
			if cw.status != 0 {
				w.WriteHeader(cw.status)
			}
			w.Write(patchBody(cw.Header().Get("Content-Type"), cw.buf.Bytes(), patch))
			return
		case "tools/call":
			var p struct {
				Task json.RawMessage `json:"task"`
			}
			if json.Unmarshal(req.Params, &p) != nil || len(p.Task) == 0 || string(p.Task) == "null" {
				next.ServeHTTP(w, r)
				return
			}
			if !held.Has(scope.AgentsCall) {
				writeJSONRPC(w, response(req.ID, nil, forbidden("a task-augmented call", scope.AgentsCall)))
				return
			}
			res, _, err := s.taskCall(owner, req)
			writeJSONRPC(w, response(req.ID, res, err))
		case "tasks/get", "tasks/result", "tasks/list", "tasks/cancel":
			if !held.Has(scope.AgentsCall) {
				writeJSONRPC(w, response(req.ID, nil, forbidden(req.Method, scope.AgentsCall)))
				return
			}
			var ask *asker
			out := &eventReply{w: w, ok: acceptsEvents(r)}
			if req.Method == "tasks/result" {
				ask = &asker{canElicit: out.ok && s.sessionElicits(r.Header.Get("Mcp-Session-Id")),
					elicit: func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
						return s.rawElicit(ctx, r.Context(), owner, out.send, p)
					}}
			}
			res, err := s.tasksMethod(r.Context(), owner, req, ask)
			out.finish(response(req.ID, res, err))
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// acceptsEvents reports whether the client accepts server-sent events.
func acceptsEvents(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept") {
		for _, t := range strings.Split(v, ",") {
			if mt, _, _ := strings.Cut(strings.TrimSpace(t), ";"); strings.EqualFold(mt, "text/event-stream") {
				return true
			}
		}
	}
	return false
}

// eventReply is the answer to a request the layer serves over HTTP: plain
// JSON, unless a request to the client (an elicitation of the task's
// input) goes first, which turns it into a stream of server-sent events
// that ends with the answer.
type eventReply struct {
	w  http.ResponseWriter
	ok bool // the client accepts server-sent events

	mu      sync.Mutex
	started bool
	done    bool
}

var errReplyDone = errors.New("the tasks/result response is complete")

// send writes msg as an event, starting the stream if need be.
func (e *eventReply) send(msg jsonrpc.Message) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.ok || e.done {
		return errReplyDone
	}
	return e.eventLocked(msg)
}

func (e *eventReply) eventLocked(msg jsonrpc.Message) error {
	b, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	if !e.started {
		e.started = true
		e.w.Header().Set("Content-Type", "text/event-stream")
		e.w.Header().Set("Cache-Control", "no-cache")
		e.w.WriteHeader(http.StatusOK)
	}
	if _, err := fmt.Fprintf(e.w, "event: message\ndata: %s\n\n", b); err != nil {
		return err
	}
	if f, ok := e.w.(http.Flusher); ok {
		f.Flush()
	}
	return nil
}

// finish writes the answer; nothing is sent after it.
func (e *eventReply) finish(resp *jsonrpc.Response) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.done = true
	if e.started {
		_ = e.eventLocked(resp)
		return
	}
	writeJSONRPC(e.w, resp)
}

func writeJSONRPC(w http.ResponseWriter, resp *jsonrpc.Response) {
	b, err := jsonrpc.EncodeMessage(resp)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

// captureWriter keeps go-sdk's answer to amend it.
type captureWriter struct {
	header http.Header
	status int
	buf    bytes.Buffer
}

func (c *captureWriter) Header() http.Header         { return c.header }
func (c *captureWriter) WriteHeader(status int)      { c.status = status }
func (c *captureWriter) Write(b []byte) (int, error) { return c.buf.Write(b) }
func (c *captureWriter) Flush()                      {}

// patchBody applies patch to the result of each JSON-RPC response in a
// JSON or server-sent-events body.
func patchBody(contentType string, body []byte, patch func(json.RawMessage) json.RawMessage) []byte {
	one := func(b []byte) []byte {
		msg, err := jsonrpc.DecodeMessage(b)
		resp, ok := msg.(*jsonrpc.Response)
		if err != nil || !ok || resp.Error != nil {
			return b
		}
		resp.Result = patch(resp.Result)
		out, err := jsonrpc.EncodeMessage(resp)
		if err != nil {
			return b
		}
		return out
	}
	if !strings.HasPrefix(contentType, "text/event-stream") {
		if strings.HasPrefix(contentType, "application/json") {
			return one(body)
		}
		return body
	}
	lines := strings.Split(string(body), "\n")
	for i, l := range lines {
		if data, ok := strings.CutPrefix(l, "data: "); ok {
			lines[i] = "data: " + string(one([]byte(data)))
		}
	}
	return []byte(strings.Join(lines, "\n"))
}
