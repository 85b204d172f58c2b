package mcpclient

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"agentgw/manifest"
	"agentgw/wire"
)

// Bounds of one tools/list import.
const (
	// maxListPages bounds the pages of one tools/list.
	maxListPages = 256
	// maxListBytes bounds the raw bytes of all pages together.
	maxListBytes = 8 << 20
)

// VersionPrefix starts the API version of every imported manifest; the
// rest is the first 12 hex digits of the SHA-256 of the manifest's RFC
// 8785 form with the version set to the bare prefix, so identical content
// gives an identical version and hash.
const VersionPrefix = "mcp"

// toolMembers are the MCP Tool members an import keeps, exactly as the
// server sent them. Any other member (for example icons) has no place in
// a version-0 manifest and is left out, with a note.
var toolMembers = []string{"name", "title", "description", "inputSchema", "outputSchema", "annotations", "execution", "_meta"}

// Imported is the outcome of Import.
type Imported struct {
	// Manifest is the endpoint manifest in RFC 8785 form; manifest.Parse
	// accepts it for the JID given to Import.
	Manifest []byte
	// Version is its agent.version.
	Version string
	// Tools is the number of tools in the manifest.
	Tools int
	// Skipped lists the tools left out, with the reason, in server order.
	Skipped []Skipped
	// Notes lists what was changed or left out of the tools that were
	// kept: schema rewrites and unrepresentable members.
	Notes []Note
}

// Skipped is a tool left out of an import.
type Skipped struct {
	// Tool is the tool's name as the server sent it (quoted if it is not
	// printable), or "#N" for a tool without a usable name.
	Tool string
	// Reason is safe to show: it names a location and a rule, never a
	// value from the schema.
	Reason string
}

// Note describes a change an import made to a kept tool.
type Note struct {
	Tool string
	Note string
}

// Import lists the server's tools (every page of tools/list) and builds
// the manifest of the endpoint at jid (a bare JID) from them. It starts
// the upstream if it is not up, whatever ColdStart says.
//
// Each tool keeps name, title, description, inputSchema, outputSchema,
// annotations, execution and _meta exactly as sent, except that draft-07
// schemas are rewritten to JSON Schema 2020-12 where that is exact. A
// tool that cannot be represented is left out and reported in Skipped;
// the rest goes ahead. The error is non-nil only when nothing could be
// imported at all (the server is unreachable, tools/list fails, or the
// assembled manifest is refused as a whole), never silently.
func (r *Runtime) Import(ctx context.Context, jid string) (*Imported, error) {
	s, release, err := r.up.acquire(ctx, true, true, time.Time{})
	if err != nil {
		return nil, fmt.Errorf("mcp: import: %w", err)
	}
	defer release()
	tools, err := s.listTools(ctx)
	if err != nil {
		return nil, fmt.Errorf("mcp: import: tools/list: %s", s.secrets.redact(err.Error()))
	}
	s.learnTaskSupport(tools)
	return r.buildManifest(s, jid, tools)
}

// listTools returns the raw tool objects of every page of tools/list, in
// order. The cursor is opaque and only ever handed back to the server.
func (s *session) listTools(ctx context.Context) ([]json.RawMessage, error) {
	var (
		tools   []json.RawMessage
		cursor  string
		total   int
		cursors = map[string]bool{}
	)
	for page := 0; ; page++ {
		if page == maxListPages {
			return nil, fmt.Errorf("more than %d pages", maxListPages)
		}
		cp := &capture{method: "tools/list", replace: json.RawMessage(`{"tools":[]}`)}
		_, err := s.cs.ListTools(withCapture(ctx, cp), &sdk.ListToolsParams{Cursor: cursor})
		raw, rpcErr, ok := cp.outcome()
		switch {
		case !ok && err == nil:
			return nil, errors.New("no response")
		case !ok:
			return nil, err
		case rpcErr != nil:
			return nil, fmt.Errorf("JSON-RPC error %d", rpcErr.Code)
		}
		total += len(raw)
		if total > maxListBytes {
			return nil, fmt.Errorf("tools/list exceeds %d bytes", maxListBytes)
		}
		var res struct {
			Tools      []json.RawMessage `json:"tools"`
			NextCursor string            `json:"nextCursor"`
		}
		if err := json.Unmarshal(raw, &res); err != nil {
			return nil, errors.New("malformed tools/list result")
		}
		tools = append(tools, res.Tools...)
		if res.NextCursor == "" {
			return tools, nil
		}
		if cursors[res.NextCursor] {
			return nil, errors.New("tools/list cursor repeats")
		}
		cursors[res.NextCursor] = true
		cursor = res.NextCursor
	}
}

// learnTaskSupport records each tool's execution.taskSupport, which
// decides how it is called.
func (s *session) learnTaskSupport(tools []json.RawMessage) {
	m := make(map[string]string, len(tools))
	for _, raw := range tools {
		var t struct {
			Name      string `json:"name"`
			Execution struct {
				TaskSupport string `json:"taskSupport"`
			} `json:"execution"`
		}
		if json.Unmarshal(raw, &t) == nil && t.Name != "" {
			m[t.Name] = t.Execution.TaskSupport
		}
	}
	s.mu.Lock()
	s.taskSupport = m
	s.mu.Unlock()
}

// taskSupportFor returns the tool's execution.taskSupport, listing the
// tools once per session (and again after list_changed).
func (s *session) taskSupportFor(ctx context.Context, name string) (string, error) {
	s.mu.Lock()
	m := s.taskSupport
	s.mu.Unlock()
	if m == nil {
		tools, err := s.listTools(ctx)
		if err != nil {
			return "", err
		}
		s.learnTaskSupport(tools)
		s.mu.Lock()
		m = s.taskSupport
		s.mu.Unlock()
	}
	return m[name], nil
}

// buildManifest assembles and checks the manifest.
func (r *Runtime) buildManifest(s *session, jid string, raws []json.RawMessage) (*Imported, error) {
	imp := &Imported{}
	lim := manifest.Limits{}
	var tools []any
	names := map[string]bool{}
	for i, raw := range raws {
		label := "#" + strconv.Itoa(i)
		var head struct {
			Name any `json:"name"`
		}
		if json.Unmarshal(raw, &head) == nil {
			if n, ok := head.Name.(string); ok && n != "" {
				label = displayName(n)
			}
		}
		tool, notes, reason := r.importTool(s, raw, lim)
		if reason == "" {
			name := tool["name"].(string)
			if names[name] {
				reason = "duplicate tool name"
			} else {
				names[name] = true
			}
		}
		if reason != "" {
			imp.Skipped = append(imp.Skipped, Skipped{Tool: label, Reason: reason})
			continue
		}
		for _, n := range notes {
			imp.Notes = append(imp.Notes, Note{Tool: label, Note: n})
		}
		tools = append(tools, tool)
	}
	if tools == nil {
		tools = []any{}
	}
	doc := map[string]any{
		"manifestSpecVersion": manifest.SpecVersion,
		"agent":               r.agent(s, jid),
		"tools":               tools,
	}
	if impl := implementation(s); impl != nil {
		doc["implementation"] = impl
	}
	if mcpVersion.MatchString(s.protocolVersion) {
		doc["mcpProtocolVersion"] = s.protocolVersion
	}
	canon, err := canonical(doc)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(canon)
	imp.Version = VersionPrefix + "-" + hex.EncodeToString(sum[:])[:12]
	doc["agent"].(map[string]any)["version"] = imp.Version
	if imp.Manifest, err = canonical(doc); err != nil {
		return nil, err
	}
	if _, err := manifest.Parse(imp.Manifest, manifest.Options{}); err != nil {
		return nil, fmt.Errorf("mcp: import: manifest refused: %w", err)
	}
	imp.Tools = len(tools)
	return imp, nil
}

// mcpVersion is the mcpProtocolVersion grammar of the manifest schema.
var mcpVersion = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}$`)

// importTool builds one manifest tool from a raw MCP Tool, or gives the
// reason it is left out.
func (r *Runtime) importTool(s *session, raw json.RawMessage, lim manifest.Limits) (map[string]any, []string, string) {
	canon, err := manifest.Canonicalize(raw, lim)
	if err != nil {
		return nil, nil, reasonOf(err, "")
	}
	v, err := decodeJSON(canon)
	if err != nil {
		return nil, nil, "not valid JSON"
	}
	src, ok := v.(map[string]any)
	if !ok {
		return nil, nil, "tool is not a JSON object"
	}
	if n, _ := src["name"].(string); n == "" {
		return nil, nil, "tool has no name"
	}
	tool := map[string]any{}
	var notes, dropped []string
	for _, k := range sortedAny(src) {
		if slices.Contains(toolMembers, k) {
			tool[k] = src[k]
		} else {
			dropped = append(dropped, safeKey(k))
		}
	}
	if len(dropped) > 0 {
		notes = append(notes, "members not representable, left out: "+strings.Join(dropped, ", "))
	}
	for _, member := range []string{"inputSchema", "outputSchema"} {
		sch, has := tool[member]
		if !has {
			continue
		}
		out, rewritten, err := translateSchema(sch, member == "inputSchema")
		if err != nil {
			return nil, nil, member + ": draft-07 schema has " + err.Error()
		}
		if rewritten {
			tool[member] = out
			notes = append(notes, member+": rewritten from draft-07 to JSON Schema 2020-12")
			if d, http := dialectOf(sch.(map[string]any)["$schema"]); d == dialect2020 && http {
				notes[len(notes)-1] = member + `: $schema spelled with http corrected to https`
			}
		}
	}
	ext := map[string]any{
		"supportsProgress":     true,
		"supportsCancellation": true,
		"supportsInput":        true,
	}
	if exe, ok := tool["execution"].(map[string]any); ok && exe["taskSupport"] == "required" && !s.tasksCancel {
		// Without tasks/cancel an MCP task cannot be stopped.
		ext["supportsCancellation"] = false
	}
	if r.opts.DefaultTimeoutSeconds > 0 {
		ext["defaultTimeoutSeconds"] = r.opts.DefaultTimeoutSeconds
	}
	if r.opts.MaximumTimeoutSeconds > 0 {
		ext["maximumTimeoutSeconds"] = r.opts.MaximumTimeoutSeconds
	}
	tool[manifest.NS] = ext
	// The version-0 rules, on this tool alone, so that one bad tool does
	// not sink the others.
	probe := map[string]any{
		"manifestSpecVersion": manifest.SpecVersion,
		"agent":               map[string]any{"jid": "probe@mcp.invalid", "name": "probe", "version": "0"},
		"tools":               []any{tool},
	}
	b, err := canonical(probe)
	if err != nil {
		return nil, nil, reasonOf(err, "")
	}
	if _, err := manifest.Parse(b, manifest.Options{Limits: lim}); err != nil {
		return nil, nil, reasonOf(err, "/tools/0")
	}
	return tool, notes, ""
}

// reasonOf renders a manifest error as a skip reason relative to the tool.
func reasonOf(err error, prefix string) string {
	var me *manifest.Error
	if !errors.As(err, &me) {
		return "not representable"
	}
	path := strings.TrimPrefix(me.Path, prefix)
	if path == "" {
		return me.Msg
	}
	return strings.TrimPrefix(path, "/") + ": " + me.Msg
}

// agent builds the agent object: configured names first, then the
// server's serverInfo where it fits the manifest schema.
func (r *Runtime) agent(s *session, jid string) map[string]any {
	a := map[string]any{"jid": jid, "version": VersionPrefix}
	name := r.opts.AgentName
	if name == "" && fits(s.serverName, 128) {
		name = s.serverName
	}
	if name == "" {
		name = "mcp"
	}
	a["name"] = name
	title := r.opts.AgentTitle
	if title == "" && fits(s.serverTitle, 256) {
		title = s.serverTitle
	}
	if title != "" {
		a["title"] = title
	}
	if r.opts.AgentDescription != "" {
		a["description"] = r.opts.AgentDescription
	}
	return a
}

// implementation returns the implementation object from serverInfo, or
// nil when it does not fit the manifest schema.
func implementation(s *session) map[string]any {
	if !fits(s.serverName, 128) || !fits(s.serverVersion, 128) {
		return nil
	}
	return map[string]any{"name": s.serverName, "version": s.serverVersion}
}

// fits reports whether s is 1 to max characters of plain text: text XML
// carries, without tabs, line breaks or DEL.
func fits(s string, max int) bool {
	return s != "" && wire.ValidText(s) && !strings.ContainsAny(s, "\t\n\r\x7f") &&
		utf8.RuneCountInString(s) <= max
}

// displayName renders a tool name for a report: as it is when printable,
// quoted otherwise.
func displayName(n string) string {
	if fits(n, 128) {
		return n
	}
	if len(n) > 128 {
		n = n[:128]
	}
	return strconv.QuoteToASCII(n)
}

// canonical encodes doc in RFC 8785 form.
func canonical(doc any) ([]byte, error) {
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("mcp: encode manifest: %w", err)
	}
	out, err := manifest.Canonicalize(b, manifest.Limits{})
	if err != nil {
		return nil, fmt.Errorf("mcp: canonicalize manifest: %w", err)
	}
	return out, nil
}
