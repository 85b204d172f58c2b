package agentclient

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"

	"agentgw/api"
	"agentgw/directory"
	"agentgw/manifest"
	"agentgw/task"
	"agentgw/wire"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"mellium.im/xmpp/jid"
)

// maxToolPages bounds the tool collection pages Tools reads.
const maxToolPages = 100

// Pin is the exact, immutable metadata an invocation is pinned to (client
// guide, steps 3 to 7): the endpoint, API version and manifest hash, and,
// when known, the tool's definition and its compiled input schema.
type Pin struct {
	Endpoint jid.JID
	Version  string
	Hash     [32]byte
	// Source says where the pin came from: "retrieved" over XMPP,
	// "manifest-file" (a trusted local copy) or "flags" (version and hash
	// given out of band, nothing to validate arguments against).
	Source string
	// Tool is the tool definition; nil for a "flags" pin.
	Tool *manifest.Tool
	// input validates arguments; nil for a "flags" pin.
	input *manifest.Validator
}

// HashB64 is the pinned hash as XEP-0300 writes it.
func (p *Pin) HashB64() string { return base64.StdEncoding.EncodeToString(p.Hash[:]) }

// ErrPin reports metadata that does not verify: a hash that does not
// match, a version that changed, a missing feature.
var ErrPin = errors.New("pinning failed")

// ErrNoTool is the error of a tool the pinned manifest does not have.
var ErrNoTool = errors.New("no such tool")

func pinError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrPin, fmt.Sprintf(format, args...))
}

// CheckEndpoint is step 3 of the client guide: the endpoint identity and
// the features invocation needs, from its node-less disco#info. Feature
// advertisement is authoritative; nothing is inferred.
func (c *Client) CheckEndpoint(ctx context.Context, endpoint jid.JID) (wire.InfoResult, error) {
	info, err := c.Info(ctx, endpoint.String(), "")
	if err != nil {
		return wire.InfoResult{}, err
	}
	if !info.HasIdentity(directory.CategoryAutomation, directory.TypeEndpoint) {
		return wire.InfoResult{}, pinError("%s is not an agent endpoint", endpoint)
	}
	for _, f := range []string{directory.NSEndpoint, api.FeatureManifest, api.FeatureSchema} {
		if !info.HasFeature(f) {
			return wire.InfoResult{}, pinError("%s does not advertise %s", endpoint, f)
		}
	}
	return info, nil
}

// Manifest is step 4: the active manifest, its JSON verified against its
// hash and parsed. The version and hash returned select everything that
// follows.
func (c *Client) Manifest(ctx context.Context, endpoint jid.JID) (*manifest.Manifest, error) {
	el, err := c.get(ctx, endpoint.String(), api.ManifestRequest{}.TokenReader())
	if err != nil {
		return nil, err
	}
	mr, err := api.ParseManifest(el)
	if err != nil {
		return nil, pinError("manifest from %s: %v", endpoint, err)
	}
	digest := [32]byte(mr.Hash)
	if !api.VerifyJSON(mr.JSON, mr.Hash) {
		return nil, pinError("the manifest from %s does not match its hash", endpoint)
	}
	m, err := manifest.Parse([]byte(mr.JSON), manifest.Options{})
	if err != nil {
		return nil, pinError("the manifest from %s is not valid: %v", endpoint, err)
	}
	if m.Hash != digest || !bytes.Equal(m.Canonical, []byte(mr.JSON)) {
		return nil, pinError("the manifest from %s is not in canonical form", endpoint)
	}
	if m.Version != mr.Version || m.JID != endpoint.String() {
		return nil, pinError("the manifest from %s names %s version %s", endpoint, SafeText(m.JID, 100), SafeText(m.Version, 64))
	}
	return m, nil
}

// Pin follows steps 3 to 7 of the client guide for one tool: endpoint
// features, the manifest, the version-pinned tool node and the input
// schema, each verified against the hashes pinned before it.
func (c *Client) Pin(ctx context.Context, endpoint jid.JID, toolName string) (*Pin, error) {
	info, err := c.CheckEndpoint(ctx, endpoint)
	if err != nil {
		return nil, err
	}
	if !info.HasFeature(task.NS) {
		return nil, pinError("%s does not advertise %s", endpoint, task.NS)
	}
	m, err := c.Manifest(ctx, endpoint)
	if err != nil {
		return nil, err
	}
	// The endpoint information names the active version too. If it moved
	// between the two queries, the manifest just retrieved (version and
	// hash together) is what is pinned: never one with the other's hash.
	return c.PinTool(ctx, m, toolName)
}

// PinTool is steps 6 and 7 for a tool of a manifest already verified: the
// tool node of that version and its input schema, under its hash.
func (c *Client) PinTool(ctx context.Context, m *manifest.Manifest, toolName string) (*Pin, error) {
	p, err := pinOf(m, toolName, "retrieved")
	if err != nil {
		return nil, err
	}
	endpoint, t := p.Endpoint, p.Tool

	// Step 6: the tool node of the pinned version.
	node := manifest.ToolNode(m.Version, t.Name)
	ti, err := c.Info(ctx, endpoint.String(), node)
	if err != nil {
		return nil, err
	}
	if !ti.HasIdentity(directory.CategoryAutomation, api.TypeTool) || !ti.HasFeature(api.FeatureTool) {
		return nil, pinError("%s: %s is not a tool node", endpoint, node)
	}
	form := ti.Values()
	inputHash := base64.StdEncoding.EncodeToString(t.InputHash[:])
	if form["api_version"] != m.Version || form["input_schema_hash_algo"] != wire.HashAlgoSHA256 ||
		form["input_schema_hash_value"] != inputHash {
		return nil, pinError("%s: the tool information of %s does not match the pinned manifest", endpoint, SafeText(t.Name, 100))
	}

	// Step 7: the input schema, under the pinned manifest hash.
	req := api.SchemaRequest{Tool: t.Name, Version: m.Version, Direction: api.DirectionInput, Hash: wire.Hash(m.Hash)}
	el, err := c.get(ctx, endpoint.String(), req.TokenReader())
	if err != nil {
		return nil, err
	}
	sc, err := api.ParseSchema(el)
	if err != nil {
		return nil, pinError("schema from %s: %v", endpoint, err)
	}
	mh, sh := [32]byte(sc.ManifestHash), [32]byte(sc.SchemaHash)
	if sc.Tool != t.Name || sc.Version != m.Version || sc.Direction != api.DirectionInput ||
		mh != m.Hash || sh != t.InputHash || !api.VerifyJSON(sc.JSON, sc.SchemaHash) {
		return nil, pinError("the input schema from %s does not match the pinned manifest", endpoint)
	}
	if p.input, err = manifest.CachedValidator([]byte(sc.JSON), true); err != nil {
		return nil, pinError("the input schema from %s does not compile: %v", endpoint, err)
	}
	return p, nil
}

// PinFlags is a pin from a version and hash given out of band, for a
// caller that may invoke but not see the endpoint: the target is the only
// validator of the arguments.
func PinFlags(endpoint jid.JID, version string, hash [32]byte) *Pin {
	return &Pin{Endpoint: endpoint, Version: version, Hash: hash, Source: "flags"}
}

// PinManifest pins a tool of a trusted local copy of the manifest, whose
// input schema then validates the arguments.
func PinManifest(m *manifest.Manifest, toolName string) (*Pin, error) {
	p, err := pinOf(m, toolName, "manifest-file")
	if err != nil {
		return nil, err
	}
	if p.input, err = manifest.CachedValidator(p.Tool.InputSchema, true); err != nil {
		return nil, fmt.Errorf("input schema of %s: %w", SafeText(toolName, 100), err)
	}
	return p, nil
}

// pinOf pins the version and hash of m and its tool toolName, as learnt
// from source; the input schema is left to the caller.
func pinOf(m *manifest.Manifest, toolName, source string) (*Pin, error) {
	endpoint, err := jid.Parse(m.JID)
	if err != nil {
		return nil, pinError("the manifest names no endpoint")
	}
	t, ok := m.Tool(toolName)
	if !ok {
		return nil, fmt.Errorf("%w: %s version %s has no tool %q", ErrNoTool, endpoint, m.Version, SafeText(toolName, 100))
	}
	return &Pin{Endpoint: endpoint, Version: m.Version, Hash: m.Hash, Source: source, Tool: t}, nil
}

// ErrArguments is the error of arguments that fail the local checks.
var ErrArguments = errors.New("arguments")

// CanonicalArgs checks arguments locally: I-JSON, within the target's
// default size limit, an object, and valid against the pinned input
// schema when there is one. It returns the RFC 8785 form, which is what
// is sent, so that a retry is byte-identical.
func (p *Pin) CanonicalArgs(raw []byte) ([]byte, error) {
	canon, err := manifest.Canonicalize(raw, manifest.Limits{
		MaxManifestBytes: task.DefaultMaxArgumentBytes, MaxStringBytes: task.DefaultMaxArgumentBytes,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrArguments, err)
	}
	if len(canon) == 0 || canon[0] != '{' {
		return nil, fmt.Errorf("%w: must be a JSON object", ErrArguments)
	}
	if p.input != nil {
		if err := ValidateJSON(p.input, canon); err != nil {
			return nil, fmt.Errorf("%w do not satisfy the input schema of %s: %w", ErrArguments, p.Tool.Name, err)
		}
	}
	return canon, nil
}

// ValidateJSON validates canonical JSON against a compiled schema, within
// its validation budget.
func ValidateJSON(s *manifest.Validator, canonical []byte) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(canonical))
	if err != nil {
		return err
	}
	return s.Validate(v)
}

// ToolNode is one item of a version's tool collection, with its
// definition in the pinned manifest.
type ToolNode struct {
	Node string
	Tool *manifest.Tool
}

// Tools lists the tools of the exact version m (client guide, step 5),
// paged, each checked against m.
func (c *Client) Tools(ctx context.Context, m *manifest.Manifest) ([]ToolNode, error) {
	endpoint := m.JID
	collection := manifest.ToolsNode(m.Version)
	var out []ToolNode
	after := ""
	for page := 0; page < maxToolPages; page++ {
		max := SearchPageSize
		rsm := &wire.RSMRequest{Max: &max}
		if after != "" {
			a := after
			rsm.After = &a
		}
		items, err := c.Items(ctx, endpoint, collection, rsm)
		if err != nil {
			return nil, err
		}
		count := -1
		if items.Set != nil {
			count = items.Set.Count
		}
		for _, it := range items.Items {
			if it.Node == after {
				return nil, pinError("%s did not page its tool collection", endpoint)
			}
			after = it.Node
			version, name, err := manifest.ParseToolNode(it.Node)
			if err != nil || version != m.Version {
				return nil, pinError("%s listed a tool node of another version", endpoint)
			}
			t, ok := m.Tool(name)
			if !ok {
				return nil, pinError("%s listed a tool the pinned manifest lacks", endpoint)
			}
			out = append(out, ToolNode{Node: it.Node, Tool: t})
		}
		if len(items.Items) == 0 || (count >= 0 && len(out) >= count) {
			break
		}
	}
	return out, nil
}
