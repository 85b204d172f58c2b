package mcpserver

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"agentgw/mcpserver/scope"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// maxTaskBody bounds the request bodies the MCP Tasks layer reads in
// front of go-sdk's HTTP handler (go-sdk applies its own limit after).
const maxTaskBody = 4 << 20

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
		body, err := io.ReadAll(io.LimitReader(r.Body, maxTaskBody+1))
		r.Body = io.NopCloser(bytes.NewReader(body))
		if err != nil || len(body) > maxTaskBody {
			next.ServeHTTP(w, r)
			return
		}
		msg, err := jsonrpc.DecodeMessage(body)
		req, ok := msg.(*jsonrpc.Request)
		ti := auth.TokenInfoFromContext(r.Context())
		if err != nil || !ok || !req.ID.IsValid() || ti == nil {
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
		held := scope.Of(ti.Scopes)
		switch req.Method {
		case "initialize", "tools/list":
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
			res, err := s.taskCall(owner, req)
			writeJSONRPC(w, response(req.ID, res, err))
		case "tasks/get", "tasks/result", "tasks/list", "tasks/cancel":
			if !held.Has(scope.AgentsCall) {
				writeJSONRPC(w, response(req.ID, nil, forbidden(req.Method, scope.AgentsCall)))
				return
			}
			res, err := s.tasksMethod(r.Context(), owner, req)
			writeJSONRPC(w, response(req.ID, res, err))
		default:
			next.ServeHTTP(w, r)
		}
	})
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
