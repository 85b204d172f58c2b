package api

import (
	"context"
	"encoding/base64"
	"sort"
	"strings"

	"agentgw/db"
	"agentgw/directory"
	"agentgw/manifest"
	"agentgw/surface"
	"agentgw/wire"
)

// defaultToolPage is the page size of a tool listing without an RSM max.
const defaultToolPage = 50

// NodeInfo answers disco#info on a node of an endpoint: a tool collection
// node (urn:xmpp:agent-tools:0#VERSION) or a tool node
// (urn:xmpp:agent-tool:0#VERSION#BASE64URL). The endpoint's visibility is
// decided first, so a hidden or nonexistent endpoint fails identically
// whatever the node; then any node that is malformed, names an unknown
// version or an unknown tool is <item-not-found/>.
func (s *Service) NodeInfo(ctx context.Context, req Request, node string) (wire.InfoResult, error) {
	if _, err := s.Dir.EndpointSummary(ctx, req.Policy, req.From, req.To); err != nil {
		return wire.InfoResult{}, err
	}
	switch {
	case strings.HasPrefix(node, manifest.NSTools+"#"):
		v, err := s.collection(ctx, req, node)
		if err != nil {
			return wire.InfoResult{}, err
		}
		return wire.InfoResult{
			Node:       node,
			Identities: []wire.Identity{{Category: directory.CategoryAutomation, Type: TypeToolCollection, Name: displayName(v)}},
			Features:   []string{wire.NSDiscoInfo, wire.NSDiscoItems},
		}, nil
	case strings.HasPrefix(node, manifest.NSTool+"#"):
		v, t, err := s.tool(ctx, req, node)
		if err != nil {
			return wire.InfoResult{}, err
		}
		return s.toolInfo(node, v, t), nil
	}
	return wire.InfoResult{}, surface.ErrItemNotFound
}

// NodeItems answers disco#items on a node of an endpoint. A tool collection
// node lists its tools with XEP-0059 paging, ordered by the bytes of their
// UTF-8 names, the full tool node being the RSM id. A tool node has no
// items. Errors are as for NodeInfo; a malformed RSM set is <bad-request/>.
func (s *Service) NodeItems(ctx context.Context, req Request, node string) (wire.ItemsResult, error) {
	if _, err := s.Dir.EndpointSummary(ctx, req.Policy, req.From, req.To); err != nil {
		return wire.ItemsResult{}, err
	}
	switch {
	case strings.HasPrefix(node, manifest.NSTools+"#"):
		v, err := s.collection(ctx, req, node)
		if err != nil {
			return wire.ItemsResult{}, err
		}
		m, err := s.parsed(v)
		if err != nil {
			return wire.ItemsResult{}, err
		}
		return s.toolPage(node, v, m, req.Payload)
	case strings.HasPrefix(node, manifest.NSTool+"#"):
		if _, _, err := s.tool(ctx, req, node); err != nil {
			return wire.ItemsResult{}, err
		}
		return wire.ItemsResult{Node: node}, nil
	}
	return wire.ItemsResult{}, surface.ErrItemNotFound
}

// collection resolves a tool collection node to its version.
func (s *Service) collection(ctx context.Context, req Request, node string) (db.Version, error) {
	version, err := manifest.ParseToolsNode(node)
	if err != nil {
		return db.Version{}, surface.ErrItemNotFound
	}
	return s.visibleVersion(ctx, req, version)
}

// tool resolves a tool node with the strict decoder of package manifest:
// padding, noncanonical base64url, invalid UTF-8, empty names and names
// outside the grammar all fail, as <item-not-found/>.
func (s *Service) tool(ctx context.Context, req Request, node string) (db.Version, *manifest.Tool, error) {
	version, name, err := manifest.ParseToolNode(node)
	if err != nil {
		return db.Version{}, nil, surface.ErrItemNotFound
	}
	v, err := s.visibleVersion(ctx, req, version)
	if err != nil {
		return db.Version{}, nil, err
	}
	m, err := s.parsed(v)
	if err != nil {
		return db.Version{}, nil, err
	}
	t, ok := m.Tool(name)
	if !ok {
		return db.Version{}, nil, surface.ErrItemNotFound
	}
	return v, t, nil
}

// toolInfo is the disco#info of a tool node: identity, features and the
// urn:xmpp:agent-tool-info:0 form. Optional values absent from the manifest
// stay absent; nothing is made up.
func (s *Service) toolInfo(node string, v db.Version, t *manifest.Tool) wire.InfoResult {
	fields := []wire.Field{{Var: "name", Values: []string{t.Name}}}
	if t.Title != "" {
		fields = append(fields, wire.Field{Var: "title", Values: []string{t.Title}})
	}
	if t.Description != "" {
		fields = append(fields, wire.Field{Var: "description", Values: []string{t.Description}})
	}
	fields = append(fields,
		wire.Field{Var: "api_version", Values: []string{v.Version}},
		wire.Field{Var: "input_schema_hash_algo", Values: []string{wire.HashAlgoSHA256}},
		wire.Field{Var: "input_schema_hash_value", Values: []string{base64.StdEncoding.EncodeToString(t.InputHash[:])}},
	)
	if t.OutputSchema != nil {
		fields = append(fields,
			wire.Field{Var: "output_schema_hash_algo", Values: []string{wire.HashAlgoSHA256}},
			wire.Field{Var: "output_schema_hash_value", Values: []string{base64.StdEncoding.EncodeToString(t.OutputHash[:])}},
		)
	}
	for _, hint := range []struct {
		field string
		value *bool
	}{
		{"read_only", t.Annotations.ReadOnly},
		{"destructive", t.Annotations.Destructive},
		{"idempotent", t.Annotations.Idempotent},
		{"open_world", t.Annotations.OpenWorld},
	} {
		if hint.value != nil {
			fields = append(fields, wire.Field{Var: hint.field, Values: []string{formBool(*hint.value)}})
		}
	}
	features := append([]string{wire.NSDiscoInfo, FeatureTool}, s.toolTaskFeatures(t)...)
	sort.Strings(features)
	return wire.InfoResult{
		Node:       node,
		Identities: []wire.Identity{{Category: directory.CategoryAutomation, Type: TypeTool, Name: toolDisplayName(t)}},
		Features:   features,
		Forms:      []wire.Form{{Type: "result", FormType: FormToolInfo, Fields: fields}},
	}
}

// toolPage is one XEP-0059 page of a tool collection. The requester sees
// all tools or none (visibility is all-or-nothing per manifest), so the
// count is the number of tools.
func (s *Service) toolPage(node string, v db.Version, m *manifest.Manifest, payload wire.Element) (wire.ItemsResult, error) {
	rsm, _, err := wire.FindRSM(payload)
	if err != nil {
		return wire.ItemsResult{}, surface.ErrBadRequest
	}
	tools := make([]*manifest.Tool, len(m.Tools))
	for i := range m.Tools {
		tools[i] = &m.Tools[i]
	}
	// Go compares strings bytewise: this is octetwise UTF-8 order.
	sort.Slice(tools, func(i, j int) bool { return tools[i].Name < tools[j].Name })

	// decode turns an RSM id, a tool node of this version, into its tool
	// name. The ids are positional: the tool need not exist.
	decode := func(id string) (string, bool) {
		version, name, err := manifest.ParseToolNode(id)
		return name, err == nil && version == v.Version
	}
	size := s.pageSize(rsm.Max)
	lo, hi := 0, len(tools)
	switch {
	case rsm.After != nil:
		name, ok := decode(*rsm.After)
		if !ok {
			return wire.ItemsResult{}, surface.ErrBadRequest
		}
		lo = sort.Search(len(tools), func(i int) bool { return tools[i].Name > name })
		hi = min(lo+size, len(tools))
	case rsm.Before != nil:
		if *rsm.Before != "" {
			name, ok := decode(*rsm.Before)
			if !ok {
				return wire.ItemsResult{}, surface.ErrBadRequest
			}
			hi = sort.Search(len(tools), func(i int) bool { return tools[i].Name >= name })
		}
		lo = max(hi-size, 0)
	case rsm.Index != nil:
		lo = min(*rsm.Index, len(tools))
		hi = min(lo+size, len(tools))
	default:
		hi = min(size, len(tools))
	}

	out := wire.ItemsResult{Node: node, Set: &wire.RSMResult{Count: len(tools)}}
	for _, t := range tools[lo:hi] {
		out.Items = append(out.Items, wire.Item{JID: v.JID, Node: manifest.ToolNode(v.Version, t.Name), Name: toolDisplayName(t)})
	}
	if n := len(out.Items); n > 0 {
		first := lo
		out.Set.HasItems = true
		out.Set.First, out.Set.Last = out.Items[0].Node, out.Items[n-1].Node
		out.Set.FirstIndex = &first
	}
	return out, nil
}

// pageSize clamps a requested RSM max to the directory's page cap.
func (s *Service) pageSize(max *int) int {
	limit := s.Dir.PageMax
	if limit <= 0 {
		limit = defaultToolPage
	}
	if max == nil {
		return min(limit, defaultToolPage)
	}
	return min(*max, limit)
}

// toolDisplayName is the human-readable name of a tool: its title, or its
// name when it has none.
func toolDisplayName(t *manifest.Tool) string {
	if t.Title != "" {
		return t.Title
	}
	return t.Name
}

// displayName is the human-readable name of an endpoint version.
func displayName(v db.Version) string {
	if v.Title != "" {
		return v.Title
	}
	return v.Name
}

// formBool writes an XEP-0004 boolean the way the ProtoXEP's examples do.
func formBool(b bool) string {
	if b {
		return "1"
	}
	return "0"
}
