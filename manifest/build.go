package manifest

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"mellium.im/xmpp/jid"
)

// buildManifest applies the application rules to a manifest that already
// satisfies the normative schema, and extracts its typed fields. The type
// assertions are still checked: a schema bug must not become a panic.
func buildManifest(root map[string]any, domain jid.JID) (*Manifest, error) {
	m := &Manifest{}
	agent, _ := root["agent"].(map[string]any)

	var err error
	jidStr, _ := agent["jid"].(string)
	if m.JID, err = checkJID(jidStr, domain, "/agent/jid"); err != nil {
		return nil, err
	}
	m.Version, _ = agent["version"].(string)
	if !ValidVersion(m.Version) {
		return nil, newError(KindInvalid, "/agent/version",
			"invalid version: must match [A-Za-z0-9._~-]{1,64}")
	}
	for _, f := range []struct {
		member string
		dst    *string
	}{
		{"name", &m.Name},
		{"title", &m.Title},
		{"description", &m.Description},
		{"vendor", &m.Vendor},
	} {
		*f.dst, _ = agent[f.member].(string)
		if err := checkText(*f.dst, pointer("agent", f.member)); err != nil {
			return nil, err
		}
	}
	for _, f := range []struct {
		member string
		dst    *string
	}{
		{"homepage", &m.Homepage},
		{"avatarUrl", &m.AvatarURL},
	} {
		s, ok := agent[f.member].(string)
		if !ok {
			continue
		}
		if err := checkHTTPSURI(s, pointer("agent", f.member)); err != nil {
			return nil, err
		}
		*f.dst = s
	}
	if impl, ok := root["implementation"].(map[string]any); ok {
		m.ImplementationName, _ = impl["name"].(string)
		m.ImplementationVersion, _ = impl["version"].(string)
		if err := checkText(m.ImplementationName, "/implementation/name"); err != nil {
			return nil, err
		}
		if err := checkText(m.ImplementationVersion, "/implementation/version"); err != nil {
			return nil, err
		}
	}
	m.MCPProtocolVersion, _ = root["mcpProtocolVersion"].(string)

	tools, _ := root["tools"].([]any)
	m.Tools = make([]Tool, 0, len(tools))
	seen := make(map[string]struct{}, len(tools))
	for i, tv := range tools {
		def, _ := tv.(map[string]any)
		t, err := buildTool(def, pointer("tools", strconv.Itoa(i)))
		if err != nil {
			return nil, err
		}
		if _, dup := seen[t.Name]; dup {
			return nil, newError(KindInvalid, pointer("tools", strconv.Itoa(i), "name"), "duplicate tool name")
		}
		seen[t.Name] = struct{}{}
		m.Tools = append(m.Tools, t)
	}
	return m, nil
}

// buildTool applies the per-tool application rules. Schemas are handled
// later by addSchemas.
func buildTool(def map[string]any, path string) (Tool, error) {
	var t Tool
	t.Name, _ = def["name"].(string)
	if !ValidToolName(t.Name) {
		return t, newError(KindInvalid, path+"/name",
			"tool name must be nonempty and contain only characters allowed in XML 1.0")
	}
	t.Title, _ = def["title"].(string)
	if err := checkText(t.Title, path+"/title"); err != nil {
		return t, err
	}
	t.Description, _ = def["description"].(string)
	if err := checkText(t.Description, path+"/description"); err != nil {
		return t, err
	}
	if ann, ok := def["annotations"].(map[string]any); ok {
		var err error
		if t.Annotations, err = buildAnnotations(ann, path+"/annotations"); err != nil {
			return t, err
		}
	}
	if ext, ok := def[NS].(map[string]any); ok {
		var err error
		if t.Ext, err = buildExtension(ext, joinPointer(path, NS)); err != nil {
			return t, err
		}
	}
	return t, nil
}

// buildAnnotations reads the MCP hints. MCP defines them as booleans; a
// hint of another type is rejected rather than guessed at.
func buildAnnotations(ann map[string]any, path string) (Annotations, error) {
	var a Annotations
	if v, ok := ann["title"]; ok {
		s, isStr := v.(string)
		if !isStr {
			return a, newError(KindInvalid, path+"/title", "must be a string")
		}
		if err := checkText(s, path+"/title"); err != nil {
			return a, err
		}
		a.Title = s
	}
	for _, h := range []struct {
		member string
		dst    **bool
	}{
		{"readOnlyHint", &a.ReadOnly},
		{"destructiveHint", &a.Destructive},
		{"idempotentHint", &a.Idempotent},
		{"openWorldHint", &a.OpenWorld},
	} {
		v, ok := ann[h.member]
		if !ok {
			continue
		}
		b, isBool := v.(bool)
		if !isBool {
			return a, newError(KindInvalid, path+"/"+h.member, "must be a boolean")
		}
		*h.dst = &b
	}
	return a, nil
}

// buildExtension reads the "urn:xmpp:agent-api:0" object, whose member
// types the manifest schema has already checked.
func buildExtension(ext map[string]any, path string) (Extension, error) {
	var e Extension
	e.SupportsProgress, _ = ext["supportsProgress"].(bool)
	e.SupportsCancellation, _ = ext["supportsCancellation"].(bool)
	e.SupportsInput, _ = ext["supportsInput"].(bool)
	e.ApprovalRequired, _ = ext["approvalRequired"].(bool)

	var err error
	if e.DefaultTimeoutSeconds, err = timeout(ext, "defaultTimeoutSeconds", path); err != nil {
		return e, err
	}
	if e.MaximumTimeoutSeconds, err = timeout(ext, "maximumTimeoutSeconds", path); err != nil {
		return e, err
	}
	if e.DefaultTimeoutSeconds > 0 && e.MaximumTimeoutSeconds > 0 &&
		e.DefaultTimeoutSeconds > e.MaximumTimeoutSeconds {
		return e, newError(KindInvalid, path+"/defaultTimeoutSeconds",
			"defaultTimeoutSeconds exceeds maximumTimeoutSeconds")
	}
	if e.RequiredPermissions, err = stringList(ext, "requiredPermissions", path); err != nil {
		return e, err
	}
	if e.Tags, err = stringList(ext, "tags", path); err != nil {
		return e, err
	}
	return e, nil
}

// timeout reads a positive whole number of seconds; absent is 0. JSON
// Schema calls 30.0 and 1e3 integers, so the value is read as a double.
func timeout(ext map[string]any, member, path string) (int, error) {
	v, ok := ext[member]
	if !ok {
		return 0, nil
	}
	n, _ := v.(json.Number)
	f, err := n.Float64()
	if err != nil || f != math.Trunc(f) || f < 1 {
		return 0, newError(KindInvalid, path+"/"+member, "must be a positive integer")
	}
	if f > maxTimeoutSeconds {
		return 0, newError(KindInvalid, path+"/"+member,
			fmt.Sprintf("exceeds the maximum of %d seconds", maxTimeoutSeconds))
	}
	return int(f), nil
}

// stringList reads an array of strings that must be XML-safe.
func stringList(ext map[string]any, member, path string) ([]string, error) {
	arr, ok := ext[member].([]any)
	if !ok {
		return nil, nil
	}
	out := make([]string, 0, len(arr))
	for i, v := range arr {
		s, _ := v.(string)
		if err := checkText(s, joinPointer(path, member, strconv.Itoa(i))); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}
