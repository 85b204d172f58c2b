package mcpface

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"agentgw/agentclient"
	"agentgw/mcpface/account"
	"agentgw/scope"
	"agentgw/wire"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"mellium.im/xmpp/jid"
)

// Bounds of the agent side (docs/limits.md).
const (
	// maxUnclaimedTasks, maxUnclaimedEvents and maxUnclaimedBytes bound
	// the lifecycle events kept for tasks whose acceptance is still on
	// its way (an event may overtake the IQ result): past them an event
	// is dropped (past the bytes, the oldest task's first), and the task
	// state recovers it. Only events from an endpoint with a call in
	// flight are kept at all.
	maxUnclaimedTasks  = 256
	maxUnclaimedEvents = 64
	maxUnclaimedBytes  = 1 << 20
	// taskEventBuffer is the queue of events of one followed task.
	taskEventBuffer = 256
	// maxCursors bounds the directory and search cursors kept; the
	// oldest is forgotten first (its client gets an "expired cursor").
	maxCursors = 4096
	// agentPageSize is the RSM page size of ListAgents and SearchAgents.
	agentPageSize = 50
)

// AgentProjection is one [[mcp.agent]]: the tools of JID whose names
// are in Tools (every tool for ["*"]) appear as MCP tools named Prefix +
// "_" + the tool's name mapped to MCP's grammar.
type AgentProjection struct {
	JID    jid.JID
	Tools  []string
	Prefix string
}

// agents is the agent side of a Server: the directory tools,
// CallAgentTool, the projected tools, and the routing of lifecycle
// events to the calls that follow them.
type agents struct {
	s   *Server
	ac  *agentclient.Client
	log *slog.Logger

	mu        sync.Mutex
	following map[string]chan wire.Element // by XMPP task ID
	unclaimed map[string][]taskEvent
	order     []string
	ubytes    int            // the bytes in unclaimed
	inflight  map[string]int // calls in flight, by the endpoint's bare JID
	cursors   map[string]cursorState
	corder    []string

	proj projector
}

func newAgents(s *Server, log *slog.Logger) *agents {
	g := &agents{
		s: s, ac: agentclient.New(s.acct), log: log,
		following: map[string]chan wire.Element{}, unclaimed: map[string][]taskEvent{}, inflight: map[string]int{}, cursors: map[string]cursorState{},
	}
	g.proj.g = g
	s.acct.SetTaskEvents(g.event)
	return g
}

// taskEvent is a lifecycle message as the session parsed it, and the
// bytes it was received as (receivedSize; what the early events' bound
// counts): the tracker applies the element, so a message is parsed once.
type taskEvent struct {
	el   wire.Element
	size int
}

// event routes a lifecycle message (el, of size bytes) of task id to
// the call that follows the task, or keeps it for a call whose acceptance
// has not arrived yet. It runs on the account's session goroutine, which
// parsed el already, and never blocks.
func (g *agents) event(el wire.Element, id string, size int) {
	ev := taskEvent{el: el, size: size}
	g.mu.Lock()
	defer g.mu.Unlock()
	if ch, ok := g.following[id]; ok {
		select {
		case ch <- el:
		default: // full: the tracker sees a gap and recovers the state
		}
		return
	}
	// Keep an early event only from an endpoint we are calling: anyone
	// else's would fill memory for tasks never claimed.
	from, _ := el.AttrValue("from")
	sender, err := jid.Parse(from)
	if err != nil || g.inflight[sender.Bare().String()] == 0 {
		return
	}
	evs, known := g.unclaimed[id]
	if len(evs) >= maxUnclaimedEvents {
		return
	}
	for g.ubytes+ev.size > maxUnclaimedBytes && len(g.order) > 0 && g.order[0] != id {
		g.forget(g.order[0])
	}
	if g.ubytes+ev.size > maxUnclaimedBytes {
		return
	}
	if !known {
		if len(g.order) >= maxUnclaimedTasks {
			g.forget(g.order[0])
		}
		g.order = append(g.order, id)
	}
	g.unclaimed[id] = append(evs, ev)
	g.ubytes += ev.size
}

// forget drops the early events of taskID; g.mu is held.
func (g *agents) forget(taskID string) {
	for _, ev := range g.unclaimed[taskID] {
		g.ubytes -= ev.size
	}
	delete(g.unclaimed, taskID)
	for i, id := range g.order {
		if id == taskID {
			g.order = append(g.order[:i:i], g.order[i+1:]...)
			break
		}
	}
}

// expect keeps the early events of endpoint until release is called
// (once the call's task is followed, or the call failed).
func (g *agents) expect(endpoint jid.JID) (release func()) {
	key := endpoint.Bare().String()
	g.mu.Lock()
	g.inflight[key]++
	g.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			if g.inflight[key]--; g.inflight[key] <= 0 {
				delete(g.inflight, key)
			}
			g.mu.Unlock()
		})
	}
}

// follow starts routing the events of taskID to the returned channel,
// those that came early first; stop ends it.
func (g *agents) follow(taskID string) (events <-chan wire.Element, stop func()) {
	ch := make(chan wire.Element, taskEventBuffer)
	g.mu.Lock()
	for _, ev := range g.unclaimed[taskID] {
		ch <- ev.el
	}
	g.forget(taskID)
	g.following[taskID] = ch
	g.mu.Unlock()
	return ch, func() {
		g.mu.Lock()
		if g.following[taskID] == ch {
			delete(g.following, taskID)
		}
		g.mu.Unlock()
	}
}

// cursorState is what an opaque MCP cursor stands for: the gateways of a
// listing, the one being read, and the RSM item id to read after. The
// cursor itself is a random token, never the RSM id.
type cursorState struct {
	owner    string
	kind     string // "list" or "search"
	text     string
	gateways []string
	index    int
	after    string
	// read counts the items of the current gateway already returned.
	read int
}

func (g *agents) saveCursor(c cursorState) string {
	b := make([]byte, 16)
	rand.Read(b)
	tok := base64.RawURLEncoding.EncodeToString(b)
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.corder) >= maxCursors {
		delete(g.cursors, g.corder[0])
		g.corder = g.corder[1:]
	}
	g.cursors[tok] = c
	g.corder = append(g.corder, tok)
	return tok
}

func (g *agents) loadCursor(tok, owner, kind string) (cursorState, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	c, ok := g.cursors[tok]
	if !ok || c.owner != owner || c.kind != kind {
		return cursorState{}, false
	}
	return c, true
}

// callerKey identifies who calls: the bearer token over HTTP, the
// account over stdio. Cursors and tasks are bound to it.
func (s *Server) callerKey(req mcp.Request) string {
	if ex := req.GetExtra(); ex != nil && ex.TokenInfo != nil {
		return "token:" + ex.TokenInfo.UserID
	}
	return "account:" + s.acct.JID().String()
}

// agentTool is one of the fixed agent tools.
type agentTool struct {
	tool  *mcp.Tool
	scope string
	run   func(g *agents, ctx context.Context, req *mcp.CallToolRequest, in map[string]json.RawMessage) *mcp.CallToolResult
}

func strProp(desc string) map[string]any {
	return map[string]any{"type": "string", "description": desc}
}

func optStrProp(desc string) map[string]any {
	return map[string]any{"type": []string{"string", "null"}, "description": desc}
}

func objSchema(props map[string]any, required ...string) map[string]any {
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

func boolp(b bool) *bool { return &b }

// lookupAnnotations are those of the directory tools: they only read, from
// the open federation, and asking again is harmless.
func lookupAnnotations(title string) *mcp.ToolAnnotations {
	return &mcp.ToolAnnotations{Title: title, ReadOnlyHint: true, DestructiveHint: boolp(false), IdempotentHint: true, OpenWorldHint: boolp(true)}
}

// agentTools are the directory tools and CallAgentTool.
var agentTools = []agentTool{
	{
		scope: scope.AgentsSearch,
		tool: &mcp.Tool{
			Name: "ListAgents", OutputSchema: agentPageSchema, Title: "List agents",
			Description: "List the XMPP agent endpoints this account may see, one page at a time, from the agent gateways of the account's own server or from the gateway given.",
			InputSchema: objSchema(map[string]any{
				"Gateway": optStrProp("JID of an agent gateway (default: the gateways found on the account's server)."),
				"Cursor":  optStrProp("NextCursor of the previous page."),
			}),
			Annotations: lookupAnnotations("List agents"),
		},
		run: (*agents).listAgents,
	},
	{
		scope: scope.AgentsSearch,
		tool: &mcp.Tool{
			Name: "SearchAgents", OutputSchema: agentPageSchema, Title: "Search agents",
			Description: "Search the XMPP agent endpoints this account may see by text (XEP-0055), one page at a time.",
			InputSchema: objSchema(map[string]any{
				"Text":    strProp("Text to look for in the agents' names and descriptions (empty: every agent)."),
				"Gateway": optStrProp("JID of an agent gateway (default: the gateways with search found on the account's server)."),
				"Cursor":  optStrProp("NextCursor of the previous page."),
			}, "Text"),
			Annotations: lookupAnnotations("Search agents"),
		},
		run: (*agents).searchAgents,
	},
	{
		scope: scope.AgentsSearch,
		tool: &mcp.Tool{
			Name: "DescribeAgent", OutputSchema: agentDescriptionSchema, Title: "Describe agent",
			Description: "Describe an XMPP agent endpoint: its information form, its verified manifest (version and hash) and its tools with their schemas.",
			InputSchema: objSchema(map[string]any{"Jid": strProp("Bare JID of the agent endpoint.")}, "Jid"),
			Annotations: lookupAnnotations("Describe agent"),
		},
		run: (*agents).describeAgent,
	},
	{
		scope: scope.AgentsCall,
		tool: &mcp.Tool{
			Name: "CallAgentTool", Title: "Call agent tool",
			Description: "Call a tool of an XMPP agent endpoint as a durable task, pinned to the manifest just verified (or to Version and Hash), and return the tool's result.",
			InputSchema: objSchema(map[string]any{
				"Jid":       strProp("Bare JID of the agent endpoint."),
				"Tool":      strProp("Name of the tool."),
				"Arguments": map[string]any{"type": []string{"object", "null"}, "description": "The tool's arguments (a JSON object)."},
				"Version":   optStrProp("Pin: the API version (with Hash)."),
				"Hash":      optStrProp("Pin: the Base64 SHA-256 manifest hash (with Version)."),
			}, "Jid", "Tool"),
			Annotations: &mcp.ToolAnnotations{Title: "Call agent tool", DestructiveHint: boolp(true), OpenWorldHint: boolp(true)},
		},
		run: (*agents).callAgentTool,
	},
}

// errorResult is a tool result that reports a failure in words.
func errorResult(format string, args ...any) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, args...)}}}
}

// jsonResult is a tool result carrying v as text and structured content.
func jsonResult(v any) *mcp.CallToolResult {
	raw, err := json.Marshal(v)
	if err != nil {
		return errorResult("internal error: %v", err)
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(raw)}}, StructuredContent: json.RawMessage(raw)}
}

// handler adapts an agent tool to go-sdk, checking its arguments first.
func (g *agents) handler(t agentTool) mcp.ToolHandler {
	props := t.tool.InputSchema.(map[string]any)["properties"].(map[string]any)
	required, _ := t.tool.InputSchema.(map[string]any)["required"].([]string)
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		in := map[string]json.RawMessage{}
		if raw := req.Params.Arguments; len(raw) > 0 && string(raw) != "null" {
			if err := json.Unmarshal(raw, &in); err != nil {
				return errorResult("%s: the arguments must be a JSON object", t.tool.Name), nil
			}
		}
		for name := range in {
			if _, ok := props[name]; !ok {
				return errorResult("%s: unknown argument %q", t.tool.Name, agentclient.SafeText(name, 64)), nil
			}
		}
		for _, name := range required {
			if v, ok := in[name]; !ok || string(v) == "null" {
				return errorResult("%s: %s is required", t.tool.Name, name), nil
			}
		}
		return t.run(g, ctx, req, in), nil
	}
}

// str decodes an optional string argument; ok is false for a non-string.
func str(in map[string]json.RawMessage, name string) (string, bool) {
	v, present := in[name]
	if !present || string(v) == "null" {
		return "", true
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return "", false
	}
	return s, true
}

// strArgs decodes the named string arguments, or says which is not one.
func strArgs(tool string, in map[string]json.RawMessage, names ...string) ([]string, *mcp.CallToolResult) {
	out := make([]string, len(names))
	for i, n := range names {
		s, ok := str(in, n)
		if !ok {
			return nil, errorResult("%s: %s must be a string", tool, n)
		}
		out[i] = s
	}
	return out, nil
}

// endpointJID parses the JID of an agent endpoint argument.
func endpointJID(tool, s string) (jid.JID, *mcp.CallToolResult) {
	j, err := jid.Parse(s)
	if err != nil || j.Localpart() == "" || j.Resourcepart() != "" {
		return jid.JID{}, errorResult("%s: Jid %q is not the bare JID of an agent endpoint (such as demo@agents.example.org)", tool, agentclient.SafeText(s, 200))
	}
	return j, nil
}

// xmppFailure describes an error of the XMPP side for a tool result.
func xmppFailure(what string, err error) *mcp.CallToolResult {
	if errors.Is(err, account.ErrNotConnected) {
		return errorResult("%s: %v", what, err)
	}
	return errorResult("%s: %s", what, agentclient.SafeText(err.Error(), 600))
}

// AgentEntry is one agent of ListAgents and SearchAgents.
type AgentEntry struct {
	Jid     string `json:"Jid"`
	Name    string `json:"Name,omitempty"`
	Gateway string `json:"Gateway"`
}

// AgentPage is the result of ListAgents and SearchAgents.
type AgentPage struct {
	Success bool         `json:"Success"`
	Message string       `json:"Message"`
	Agents  []AgentEntry `json:"Agents"`
	// NextCursor, when set, reads the next page.
	NextCursor string `json:"NextCursor,omitempty"`
}

var agentDescriptionSchema = objSchema(map[string]any{
	"Success":  map[string]any{"type": "boolean"},
	"Message":  map[string]any{"type": "string"},
	"Jid":      map[string]any{"type": "string"},
	"Name":     map[string]any{"type": "string"},
	"Info":     map[string]any{"type": "object"},
	"Features": map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
	"Version":  map[string]any{"type": "string"},
	"Hash":     map[string]any{"type": "string"},
	"Manifest": map[string]any{"type": "object"},
	"Tools":    map[string]any{"type": "array", "items": map[string]any{"type": "object"}},
})

var agentPageSchema = objSchema(map[string]any{
	"Success":    map[string]any{"type": "boolean"},
	"Message":    map[string]any{"type": "string"},
	"Agents":     map[string]any{"type": "array", "items": map[string]any{"type": "object"}},
	"NextCursor": map[string]any{"type": "string"},
})

func (g *agents) listAgents(ctx context.Context, req *mcp.CallToolRequest, in map[string]json.RawMessage) *mcp.CallToolResult {
	return g.page(ctx, req, in, "list")
}

func (g *agents) searchAgents(ctx context.Context, req *mcp.CallToolRequest, in map[string]json.RawMessage) *mcp.CallToolResult {
	return g.page(ctx, req, in, "search")
}

// page reads one RSM page of the directory (kind "list") or of a search,
// moving on to the next gateway at the end of one.
func (g *agents) page(ctx context.Context, req *mcp.CallToolRequest, in map[string]json.RawMessage, kind string) *mcp.CallToolResult {
	name := map[string]string{"list": "ListAgents", "search": "SearchAgents"}[kind]
	a, bad := strArgs(name, in, "Gateway", "Cursor", "Text")
	if bad != nil {
		return bad
	}
	gateway, cursor, text := a[0], a[1], a[2]
	owner := g.s.callerKey(req)
	var st cursorState
	switch {
	case cursor != "":
		var ok bool
		if st, ok = g.loadCursor(cursor, owner, kind); !ok {
			return errorResult("%s: the cursor is unknown or expired: start again without Cursor", name)
		}
	case gateway != "":
		gj, err := jid.Parse(gateway)
		if err != nil {
			return errorResult("%s: Gateway %q is not a JID", name, agentclient.SafeText(gateway, 200))
		}
		st = cursorState{owner: owner, kind: kind, text: text, gateways: []string{gj.String()}}
	default:
		gws, err := g.ac.Gateways(ctx, g.s.acct.JID().Domainpart())
		if err != nil {
			return xmppFailure(name+": discovering the agent gateways of "+g.s.acct.JID().Domainpart(), err)
		}
		st = cursorState{owner: owner, kind: kind, text: text}
		for _, gw := range gws {
			if kind == "list" || gw.Search {
				st.gateways = append(st.gateways, gw.JID)
			}
		}
		if len(st.gateways) == 0 {
			return jsonResult(AgentPage{Success: true, Message: "no agent gateway found on " + g.s.acct.JID().Domainpart() + " (name one with Gateway)", Agents: []AgentEntry{}})
		}
	}
	out := AgentPage{Success: true, Agents: []AgentEntry{}}
	gw := st.gateways[st.index]
	var n, count int
	var last string
	if kind == "list" {
		r, err := g.ac.DirectoryPage(ctx, gw, st.after, agentPageSize)
		if err != nil {
			return xmppFailure(name+": the directory of "+gw, err)
		}
		for _, it := range r.Items {
			out.Agents = append(out.Agents, AgentEntry{Jid: it.JID, Name: it.Name, Gateway: gw})
			last = it.JID
		}
		n = len(r.Items)
		if r.Set != nil {
			count = r.Set.Count
			if r.Set.Last != "" {
				last = r.Set.Last
			}
		}
	} else {
		var after *string
		if st.after != "" {
			after = &st.after
		}
		r, err := g.ac.SearchPage(ctx, gw, st.text, after, agentPageSize)
		if err != nil {
			return xmppFailure(name+": searching "+gw, err)
		}
		for _, it := range r.Items {
			out.Agents = append(out.Agents, AgentEntry{Jid: it.JID, Name: it.Nick, Gateway: gw})
		}
		n = len(r.Items)
		if r.Set != nil {
			count, last = r.Set.Count, r.Set.Last
		}
	}
	st.read += n
	next := st
	if n > 0 && last != "" && st.read < count {
		next.after = last
	} else if st.index+1 < len(st.gateways) {
		next.index, next.after, next.read = st.index+1, "", 0
	} else {
		next.gateways = nil
	}
	if next.gateways != nil {
		out.NextCursor = g.saveCursor(next)
	}
	out.Message = fmt.Sprintf("%d agents from %s", len(out.Agents), gw)
	return jsonResult(out)
}
