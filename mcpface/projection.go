package mcpface

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"agentgw/agentclient"
	"agentgw/manifest"
	"agentgw/mcpface/account"
	"agentgw/scope"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Timing of the projection.
const (
	// DefaultAgentPoll is how often the active version of a projected
	// agent is asked for ([mcp] agent_poll_seconds).
	DefaultAgentPoll = 60 * time.Second
	// agentRetry is the pause before asking again for an agent not
	// projected yet (the stream is not up, or the agent did not answer).
	agentRetry = 2 * time.Second
	// maxMCPName is the length of MCP's tool name grammar.
	maxMCPName = 128
	// projectionWait bounds how long tools/list and tools/call wait for
	// the first projection of a fresh process.
	projectionWait = 15 * time.Second
)

// MCPToolName maps an agent's tool name one to one onto MCP's tool name
// grammar [A-Za-z0-9_.-]{1,128}, after prefix and "_": letters, digits,
// "-" and "_" stay, and every other byte (including ".") becomes "."
// and two lowercase hex digits, so that distinct names stay distinct.
// With no prefix, a name that already fits the grammar is kept as the
// agent has it (and any other is mapped alone); a collision with another
// tool is the projector's to find. ok is false when the result is longer
// than MCP allows, or empty.
func MCPToolName(prefix, tool string) (string, bool) {
	if prefix == "" && mcpGrammar(tool) {
		return tool, true
	}
	var b strings.Builder
	if prefix != "" {
		b.WriteString(prefix)
		b.WriteByte('_')
	}
	for i := 0; i < len(tool); i++ {
		c := tool[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_':
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, ".%02x", c)
		}
	}
	return b.String(), b.Len() > 0 && b.Len() <= maxMCPName
}

// mcpGrammar reports whether name fits MCP's tool name grammar.
func mcpGrammar(name string) bool {
	if name == "" || len(name) > maxMCPName {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// collisionLocked returns what else is named name, if anything: a tool of the
// face itself, or a tool another agent projects ("" when none). The
// caller holds p.mu.
func (p *projector) collisionLocked(agent, name string) string {
	if account.ToolScope(name) != "" {
		return "the XMPP MCP Server tool " + name
	}
	for _, t := range agentTools {
		if t.tool.Name == name {
			return "the agent directory tool " + name
		}
	}
	if e, ok := p.entries[name]; ok && e.m.JID != agent {
		return fmt.Sprintf("tool %q of the agent %s", agentclient.SafeText(e.tool, 100), e.m.JID)
	}
	return ""
}

// projector keeps the MCP tools of the configured agents in step with
// their active versions.
type projector struct {
	g    *agents
	cfg  []AgentProjection
	poll time.Duration

	mu sync.Mutex
	// current is the manifest projected, by agent JID.
	current map[string]*manifest.Manifest
	names   map[string][]string // MCP names, by agent JID
	entries map[string]projEntry
	// changed is signalled after every re-projection (tests).
	changed chan struct{}
	// ready is closed once every agent was asked once with the stream
	// up: tools/list waits for it (up to projectionWait), so that the
	// first list of a fresh process shows the projected tools.
	ready     chan struct{}
	readyOnce sync.Once
}

// waitReady waits until the first projection is done, at most
// projectionWait.
func (p *projector) waitReady(ctx context.Context) {
	if p.ready == nil {
		return
	}
	t := time.NewTimer(projectionWait)
	defer t.Stop()
	select {
	case <-p.ready:
	case <-t.C:
	case <-ctx.Done():
	}
}

// projEntry is what one projected MCP tool stands for.
type projEntry struct {
	m         *manifest.Manifest
	tool      string
	execution json.RawMessage // the manifest's execution object, if any
}

// run projects every agent, then polls their active versions until ctx
// ends.
func (p *projector) run(ctx context.Context) {
	for {
		pending := p.refresh(ctx)
		wait := p.poll
		if pending {
			wait = min(agentRetry, p.poll)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// refresh asks each agent for its active manifest and re-projects those
// whose version or hash changed. It reports whether an agent that is not
// projected yet could not be asked.
func (p *projector) refresh(ctx context.Context) (pending bool) {
	for _, a := range p.cfg {
		if !p.g.s.acct.Connected() {
			return true
		}
		m, err := p.g.manifestOf(ctx, a.JID)
		p.mu.Lock()
		old := p.current[a.JID.String()]
		p.mu.Unlock()
		if err != nil {
			// Keep what was projected: a call still reaches the version
			// it listed, or fails naming it.
			p.g.log.Warn("projected agent: manifest not retrieved", "agent", a.JID.String(), "err", err)
			pending = pending || old == nil
			continue
		}
		if old != nil && old.Version == m.Version && old.Hash == m.Hash {
			continue
		}
		p.project(a, m)
	}
	p.readyOnce.Do(func() { close(p.ready) })
	return pending
}

// project replaces the MCP tools of agent a with those of manifest m.
// go-sdk sends notifications/tools/list_changed for the change.
func (p *projector) project(a AgentProjection, m *manifest.Manifest) {
	metas, execs := toolMetas(m)
	var tools []*mcp.Tool
	var handlers []mcp.ToolHandler
	for i := range m.Tools {
		t := &m.Tools[i]
		if !slices.Contains(a.Tools, "*") && !slices.Contains(a.Tools, t.Name) {
			continue
		}
		name, ok := MCPToolName(a.Prefix, t.Name)
		if !ok {
			p.g.log.Error("projected agent: tool name too long for MCP; not projected", "agent", a.JID.String(), "tool", agentclient.SafeText(t.Name, 100))
			continue
		}
		p.mu.Lock()
		other := p.collisionLocked(a.JID.String(), name)
		p.mu.Unlock()
		if other == "" && slices.ContainsFunc(tools, func(t *mcp.Tool) bool { return t.Name == name }) {
			other = "another tool of the same agent"
		}
		if other != "" {
			p.g.log.Error("projected agent: MCP tool name collides; not projected", "agent", a.JID.String(),
				"tool", agentclient.SafeText(t.Name, 100), "name", name, "collides_with", other)
			continue
		}
		var in map[string]any
		if json.Unmarshal(t.InputSchema, &in) != nil || in["type"] != "object" {
			p.g.log.Error("projected agent: input schema is not an object; not projected", "agent", a.JID.String(), "tool", agentclient.SafeText(t.Name, 100))
			continue
		}
		mt := &mcp.Tool{Name: name, Title: t.Title, Description: t.Description, InputSchema: json.RawMessage(t.InputSchema), Annotations: annotations(t)}
		if t.OutputSchema != nil {
			mt.OutputSchema = json.RawMessage(t.OutputSchema)
		}
		meta := mcp.Meta{}
		for k, v := range metas[t.Name] {
			meta[k] = v
		}
		meta["agentgw/xmpp"] = map[string]any{"jid": m.JID, "tool": t.Name, "version": m.Version, "hash": m.HashBase64()}
		mt.Meta = meta
		tools = append(tools, mt)
		handlers = append(handlers, p.handler(m, t.Name, name))
	}
	p.mu.Lock()
	if p.current == nil {
		p.current, p.names = map[string]*manifest.Manifest{}, map[string][]string{}
	}
	var gone []string
	for _, n := range p.names[a.JID.String()] {
		if !slices.ContainsFunc(tools, func(t *mcp.Tool) bool { return t.Name == n }) {
			gone = append(gone, n)
		}
	}
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Name
	}
	if p.entries == nil {
		p.entries = map[string]projEntry{}
	}
	for _, n := range p.names[a.JID.String()] {
		delete(p.entries, n)
	}
	for _, t := range tools {
		tool := t.Meta["agentgw/xmpp"].(map[string]any)["tool"].(string)
		p.entries[t.Name] = projEntry{m: m, tool: tool, execution: execs[tool]}
	}
	p.current[a.JID.String()], p.names[a.JID.String()] = m, names
	p.mu.Unlock()
	if len(gone) > 0 {
		p.g.s.mcp.RemoveTools(gone...)
	}
	for i, t := range tools {
		p.g.s.mcp.AddTool(t, handlers[i])
	}
	p.g.log.Info("projected agent", "agent", a.JID.String(), "version", m.Version, "tools", len(tools))
	if p.changed != nil {
		select {
		case p.changed <- struct{}{}:
		default:
		}
	}
}

// handler calls tool of the manifest m it was listed with: the call is
// pinned to that version and hash.
func (p *projector) handler(m *manifest.Manifest, tool, name string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		// The scope middleware saw the tool projected; a projection
		// change may have withdrawn it since. Check again, scope included.
		if !p.isProjected(name) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", name)}
		}
		if !p.g.s.requestScopes(req).Has(scope.AgentsCall) {
			return nil, forbidden("tool "+name, scope.AgentsCall)
		}
		pc, bad := p.prepare(ctx, m, tool, name, req.Params.Arguments)
		if bad != nil {
			return bad, nil
		}
		return p.g.agentCall(ctx, req, pc)
	}
}

// prepare pins a projected tool to the manifest it was listed with.
func (p *projector) prepare(ctx context.Context, m *manifest.Manifest, tool, name string, args json.RawMessage) (preparedCall, *mcp.CallToolResult) {
	what := fmt.Sprintf("%s (%s %s)", name, m.JID, agentclient.SafeText(tool, 100))
	pin, err := p.g.ac.PinTool(ctx, m, tool)
	if err != nil {
		return preparedCall{}, xmppFailure(what+": pinning version "+m.Version, err)
	}
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage(`{}`)
	}
	return preparedCall{what: what, pin: pin, tool: tool, args: args}, nil
}

// lookup returns the manifest and tool a projected MCP name stands for.
func (p *projector) lookup(name string) (*manifest.Manifest, string, json.RawMessage, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.entries[name]
	return e.m, e.tool, e.execution, ok
}

// isProjected reports whether name is a projected tool.
func (p *projector) isProjected(name string) bool {
	_, _, _, ok := p.lookup(name)
	return ok
}

// toolMetas returns the _meta and execution objects of each tool of the
// manifest, as the manifest has them.
func toolMetas(m *manifest.Manifest) (map[string]map[string]any, map[string]json.RawMessage) {
	var root struct {
		Tools []struct {
			Name      string          `json:"name"`
			Meta      map[string]any  `json:"_meta"`
			Execution json.RawMessage `json:"execution"`
		} `json:"tools"`
	}
	out, execs := map[string]map[string]any{}, map[string]json.RawMessage{}
	if json.Unmarshal(m.Canonical, &root) != nil {
		return out, execs
	}
	for _, t := range root.Tools {
		if t.Meta != nil {
			out[t.Name] = t.Meta
		}
		if len(t.Execution) > 0 {
			execs[t.Name] = t.Execution
		}
	}
	return out, execs
}
