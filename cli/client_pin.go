package cli

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"os"

	"agentgw/api"
	"agentgw/directory"
	"agentgw/manifest"
	"agentgw/task"
	"agentgw/wire"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"mellium.im/xmpp/jid"
)

// maxToolPages bounds the tool collection pages tools reads.
const maxToolPages = 100

// pin is the exact, immutable metadata an invocation is pinned to (client
// guide, steps 3 to 7): the endpoint, API version and manifest hash, and,
// when known, the tool's definition and its compiled input schema.
type pin struct {
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
	input *jsonschema.Schema
}

// hashB64 is the pinned hash as XEP-0300 writes it.
func (p *pin) hashB64() string { return base64.StdEncoding.EncodeToString(p.Hash[:]) }

// errPin reports metadata that does not verify: a hash that does not
// match, a version that changed, a missing feature.
var errPin = errors.New("pinning failed")

func pinError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errPin, fmt.Sprintf(format, args...))
}

// checkEndpoint is step 3 of the client guide: the endpoint identity and
// the features invocation needs, from its node-less disco#info. Feature
// advertisement is authoritative; nothing is inferred.
func (cmd *clientCmd) checkEndpoint(ctx context.Context, endpoint jid.JID) (wire.Element, error) {
	info, err := cmd.query(ctx, endpoint.String(), `<query xmlns='http://jabber.org/protocol/disco#info'/>`)
	if err != nil {
		return wire.Element{}, err
	}
	if !hasIdentity(info, directory.CategoryAutomation, directory.TypeEndpoint) {
		return wire.Element{}, pinError("%s is not an agent endpoint", endpoint)
	}
	for _, f := range []string{directory.NSEndpoint, api.FeatureManifest, api.FeatureSchema} {
		if !hasFeature(info, f) {
			return wire.Element{}, pinError("%s does not advertise %s", endpoint, f)
		}
	}
	return info, nil
}

// retrieveManifest is step 4: the active manifest, its JSON verified
// against its hash and parsed. The version and hash returned select
// everything that follows.
func (cmd *clientCmd) retrieveManifest(ctx context.Context, endpoint jid.JID) (*manifest.Manifest, error) {
	payload, err := wire.Marshal(api.ManifestRequest{}.TokenReader())
	if err != nil {
		return nil, err
	}
	el, err := cmd.query(ctx, endpoint.String(), payload)
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
		return nil, pinError("the manifest from %s names %s version %s", endpoint, safeText(m.JID, 100), safeText(m.Version, 64))
	}
	return m, nil
}

// pinRetrieved follows steps 3 to 7 of the client guide for one tool:
// endpoint features, the manifest, the version-pinned tool node and the
// input schema, each verified against the hashes pinned before it.
func (cmd *clientCmd) pinRetrieved(ctx context.Context, endpoint jid.JID, toolName string) (*pin, error) {
	info, err := cmd.checkEndpoint(ctx, endpoint)
	if err != nil {
		return nil, err
	}
	if !hasFeature(info, task.NS) {
		return nil, pinError("%s does not advertise %s", endpoint, task.NS)
	}
	m, err := cmd.retrieveManifest(ctx, endpoint)
	if err != nil {
		return nil, err
	}
	// The endpoint information names the active version too. If it moved
	// between the two queries, the manifest just retrieved (version and
	// hash together) is what is pinned: never one with the other's hash.
	t, ok := m.Tool(toolName)
	if !ok {
		return nil, fmt.Errorf("%s version %s has no tool %q", endpoint, m.Version, safeText(toolName, 100))
	}
	p := &pin{Endpoint: endpoint, Version: m.Version, Hash: m.Hash, Source: "retrieved", Tool: t}

	// Step 6: the tool node of the pinned version.
	node := manifest.ToolNode(m.Version, t.Name)
	ti, err := cmd.query(ctx, endpoint.String(), `<query xmlns='http://jabber.org/protocol/disco#info' node='`+xmlEscape(node)+`'/>`)
	if err != nil {
		return nil, err
	}
	if !hasIdentity(ti, directory.CategoryAutomation, api.TypeTool) || !hasFeature(ti, api.FeatureTool) {
		return nil, pinError("%s: %s is not a tool node", endpoint, node)
	}
	form := formValues(ti)
	inputHash := base64.StdEncoding.EncodeToString(t.InputHash[:])
	if form["api_version"] != m.Version || form["input_schema_hash_algo"] != wire.HashAlgoSHA256 ||
		form["input_schema_hash_value"] != inputHash {
		return nil, pinError("%s: the tool information of %s does not match the pinned manifest", endpoint, safeText(t.Name, 100))
	}

	// Step 7: the input schema, under the pinned manifest hash.
	req := api.SchemaRequest{Tool: t.Name, Version: m.Version, Direction: api.DirectionInput, Hash: wire.Hash(m.Hash)}
	payload, err := wire.Marshal(req.TokenReader())
	if err != nil {
		return nil, err
	}
	el, err := cmd.query(ctx, endpoint.String(), payload)
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
	if p.input, err = manifest.CompileSchema([]byte(sc.JSON), true, manifest.Options{}); err != nil {
		return nil, pinError("the input schema from %s does not compile: %v", endpoint, err)
	}
	return p, nil
}

// pinOutOfBand builds a pin from trusted out-of-band data, for a caller
// that may invoke but not see the endpoint: nothing is retrieved. With a
// manifest file, its canonical hash and version must agree with the flags
// given, and arguments are validated against its input schema; with
// version and hash alone, the target is the only validator.
func pinOutOfBand(endpoint jid.JID, toolName, version, hashB64, manifestFile string) (*pin, error) {
	p := &pin{Endpoint: endpoint, Version: version, Source: "flags"}
	if hashB64 != "" {
		d, err := wire.ParseHashBase64(hashB64)
		if err != nil {
			return nil, fmt.Errorf("%w: client call: -hash must be the Base64 SHA-256 manifest hash", errUsage)
		}
		p.Hash = d
	}
	if manifestFile == "" {
		return p, nil
	}
	raw, err := os.ReadFile(manifestFile)
	if err != nil {
		return nil, fmt.Errorf("client call: -manifest: %w", err)
	}
	m, err := manifest.Parse(raw, manifest.Options{})
	if err != nil {
		return nil, fmt.Errorf("client call: -manifest %s: %w", manifestFile, err)
	}
	if m.JID != endpoint.String() {
		return nil, pinError("%s is the manifest of %s, not %s", manifestFile, m.JID, endpoint)
	}
	if version != "" && version != m.Version {
		return nil, pinError("%s is version %s, not %s", manifestFile, m.Version, version)
	}
	if hashB64 != "" && p.Hash != m.Hash {
		return nil, pinError("%s does not hash to %s", manifestFile, hashB64)
	}
	t, ok := m.Tool(toolName)
	if !ok {
		return nil, fmt.Errorf("%s version %s has no tool %q", endpoint, m.Version, safeText(toolName, 100))
	}
	p.Version, p.Hash, p.Source, p.Tool = m.Version, m.Hash, "manifest-file", t
	if p.input, err = manifest.CompileSchema(t.InputSchema, true, manifest.Options{}); err != nil {
		return nil, fmt.Errorf("client call: -manifest: input schema of %s: %w", safeText(toolName, 100), err)
	}
	return p, nil
}

// canonicalArgs checks arguments locally: I-JSON, within the target's
// default size limit, an object, and valid against the pinned input
// schema when there is one. It returns the RFC 8785 form, which is what
// is sent, so that a retry is byte-identical.
func (p *pin) canonicalArgs(raw string) ([]byte, error) {
	canon, err := manifest.Canonicalize([]byte(raw), manifest.Limits{
		MaxManifestBytes: task.DefaultMaxArgumentBytes, MaxStringBytes: task.DefaultMaxArgumentBytes,
	})
	if err != nil {
		return nil, fmt.Errorf("arguments: %w", err)
	}
	if len(canon) == 0 || canon[0] != '{' {
		return nil, errors.New("arguments: must be a JSON object")
	}
	if p.input != nil {
		if err := validateJSON(p.input, canon); err != nil {
			return nil, fmt.Errorf("arguments do not satisfy the input schema of %s: %w", p.Tool.Name, err)
		}
	}
	return canon, nil
}

// validateJSON validates canonical JSON against a compiled schema.
func validateJSON(s *jsonschema.Schema, canonical []byte) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(canonical))
	if err != nil {
		return err
	}
	return s.Validate(v)
}

// toolEntry is what tools prints for each tool.
type toolEntry struct {
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	Node        string          `json:"node"`
	Features    []string        `json:"features"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// toolListing is what tools prints.
type toolListing struct {
	Endpoint string      `json:"endpoint"`
	Version  string      `json:"version"`
	Hash     string      `json:"hash"`
	Tools    []toolEntry `json:"tools"`
}

// tools pins the active manifest and lists the tools of that exact
// version (client guide, step 5), paged, with the details the pinned
// manifest gives for each.
func (cmd *clientCmd) tools(ctx context.Context, endpointArgument string) error {
	endpoint, err := endpointArg(endpointArgument)
	if err != nil {
		return err
	}
	if _, err := cmd.checkEndpoint(ctx, endpoint); err != nil {
		return err
	}
	m, err := cmd.retrieveManifest(ctx, endpoint)
	if err != nil {
		return err
	}
	out := toolListing{Endpoint: endpoint.String(), Version: m.Version, Hash: m.HashBase64(), Tools: []toolEntry{}}
	collection := manifest.ToolsNode(m.Version)
	after := ""
	for page := 0; page < maxToolPages; page++ {
		set := fmt.Sprintf("<max>%d</max>", searchPageSize)
		if after != "" {
			set += "<after>" + xmlEscape(after) + "</after>"
		}
		items, err := cmd.query(ctx, endpoint.String(), `<query xmlns='http://jabber.org/protocol/disco#items' node='`+
			xmlEscape(collection)+`'><set xmlns='http://jabber.org/protocol/rsm'>`+set+`</set></query>`)
		if err != nil {
			return err
		}
		n, count := 0, -1
		for _, it := range items.Children() {
			if it.Start.Name == (xml.Name{Space: wire.NSRSM, Local: "set"}) {
				if c, ok := it.Child(xml.Name{Space: wire.NSRSM, Local: "count"}); ok {
					fmt.Sscan(c.Text(), &count)
				}
				continue
			}
			if it.Start.Name.Local != "item" {
				continue
			}
			node, _ := it.AttrValue("node")
			if node == after {
				return pinError("%s did not page its tool collection", endpoint)
			}
			after = node
			n++
			version, name, err := manifest.ParseToolNode(node)
			if err != nil || version != m.Version {
				return pinError("%s listed a tool node of another version", endpoint)
			}
			t, ok := m.Tool(name)
			if !ok {
				return pinError("%s listed a tool the pinned manifest lacks", endpoint)
			}
			out.Tools = append(out.Tools, toolEntry{
				Name: t.Name, Title: t.Title, Description: t.Description, Node: node,
				Features: task.ToolFeatures(t), InputSchema: t.InputSchema,
			})
		}
		if n == 0 || (count >= 0 && len(out.Tools) >= count) {
			break
		}
	}
	if cmd.json {
		return cmd.emit(out)
	}
	cmd.printf("%s version %s (sha-256 %s): %d tools\n", out.Endpoint, safeText(out.Version, 64), out.Hash, len(out.Tools))
	for _, t := range out.Tools {
		cmd.printf("  %s", safeText(t.Name, 100))
		if t.Title != "" {
			cmd.printf(" (%s)", safeText(t.Title, 100))
		}
		cmd.printf("\n")
		if t.Description != "" {
			cmd.printf("    %s\n", safeText(t.Description, 400))
		}
		if len(t.Features) > 0 {
			cmd.printf("    features: %s\n", safeText(fmt.Sprint(t.Features), 400))
		}
		cmd.printf("    input: %s\n", safeText(string(t.InputSchema), 400))
	}
	return nil
}
