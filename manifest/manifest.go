package manifest

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// SpecVersion is the manifestSpecVersion this package implements.
const SpecVersion = "0"

// Options configures Parse and CompileSchema. The zero Options applies the
// default limits, accepts any domain, and refuses every external $ref.
type Options struct {
	// Domain is the component domain. When set, agent.jid must be a bare
	// JID whose domainpart equals it after normalization; otherwise Parse
	// fails with KindDomain.
	Domain string
	// Limits bounds resource use; unset fields take their defaults.
	Limits Limits
	// AllowedRefs lists the URL prefixes an external $ref may name. A
	// prefix matches at a path boundary only. Empty (the default) refuses
	// every external reference.
	AllowedRefs []string
	// LoadRef fetches an allowlisted external schema document. This
	// package never loads anything from the network or the file system on
	// its own: with AllowedRefs set but LoadRef nil, references still fail.
	// At most Limits.MaxRefLoads documents of at most Limits.MaxSchemaBytes
	// each are fetched per schema, and each is held to the same version-0
	// rules as the tool schema.
	LoadRef func(url string) ([]byte, error)
	// KeepValidators makes Parse keep each tool's compiled schemas
	// (Tool.InputValidator, Tool.OutputValidator), which take about 25
	// times their canonical size, for a caller that validates with them
	// and caches the manifest. Otherwise they are dropped once checked.
	KeepValidators bool
}

// Manifest is a validated, immutable agent manifest (ProtoXEP "Manifest
// Model"). Optional members that are absent are empty strings.
type Manifest struct {
	// JID is agent.jid as a normalized bare JID. Canonical keeps the
	// registered spelling.
	JID string
	// Name is agent.name, the stable implementation name.
	Name string
	// Title is agent.title, a human-readable display name.
	Title string
	// Description is agent.description.
	Description string
	// Version is agent.version, the endpoint API version.
	Version string
	// Vendor is agent.vendor.
	Vendor string
	// Homepage is agent.homepage, an informational HTTPS URI that must
	// never be dereferenced automatically.
	Homepage string
	// AvatarURL is agent.avatarUrl, a public HTTPS avatar URI.
	AvatarURL string
	// ImplementationName is implementation.name.
	ImplementationName string
	// ImplementationVersion is implementation.version.
	ImplementationVersion string
	// MCPProtocolVersion is mcpProtocolVersion.
	MCPProtocolVersion string

	// Canonical is the RFC 8785 form of the manifest: the bytes that are
	// hashed and served in <json/>.
	Canonical []byte
	// Hash is the SHA-256 digest of Canonical.
	Hash [32]byte
	// Tools are the tool definitions in manifest order.
	Tools []Tool
}

// HashBase64 returns the XEP-0300 <hash algo='sha-256'/> value of the
// manifest: standard Base64 with padding.
func (m *Manifest) HashBase64() string {
	return HashBase64(m.Canonical)
}

// Tool returns the tool with exactly the given name (no normalization).
func (m *Manifest) Tool(name string) (*Tool, bool) {
	for i := range m.Tools {
		if m.Tools[i].Name == name {
			return &m.Tools[i], true
		}
	}
	return nil, false
}

// Tool is one validated tool definition.
type Tool struct {
	// Name is the exact MCP tool name.
	Name string
	// Title is the optional human-readable title.
	Title string
	// Description is the optional description.
	Description string
	// InputSchema is the RFC 8785 form of inputSchema, served by schema
	// retrieval with direction "input".
	InputSchema []byte
	// InputHash is the SHA-256 digest of InputSchema.
	InputHash [32]byte
	// OutputSchema is the RFC 8785 form of outputSchema, or nil if the
	// tool has none.
	OutputSchema []byte
	// OutputHash is the SHA-256 digest of OutputSchema; zero if absent.
	OutputHash [32]byte
	// Annotations are the MCP annotation hints. They are declarations,
	// never authority.
	Annotations Annotations
	// Ext is the "urn:xmpp:agent-api:0" extension object.
	Ext Extension

	// input and output are the schemas compiled by Parse, kept so that a
	// pinned schema is compiled once for as long as its manifest is held.
	input, output *Validator
}

// InputValidator returns the compiled input schema, or nil for a Tool
// that Parse did not make with Options.KeepValidators.
func (t *Tool) InputValidator() *Validator { return t.input }

// OutputValidator returns the compiled output schema, or nil when the
// tool has none or Parse did not make the Tool with
// Options.KeepValidators.
func (t *Tool) OutputValidator() *Validator { return t.output }

// NeedsApproval reports whether the tool declares approvalRequired or
// names requiredPermissions: such a tool may run only under a trusted
// local grant that vouches for them (ProtoXEP "Security Considerations":
// fail closed).
func (t *Tool) NeedsApproval() bool {
	return t.Ext.ApprovalRequired || len(t.Ext.RequiredPermissions) > 0
}

// Annotations holds the MCP tool annotations. A nil hint was absent, which
// MCP distinguishes from false.
type Annotations struct {
	// Title is annotations.title, if present.
	Title string
	// ReadOnly is readOnlyHint.
	ReadOnly *bool
	// Destructive is destructiveHint.
	Destructive *bool
	// Idempotent is idempotentHint.
	Idempotent *bool
	// OpenWorld is openWorldHint.
	OpenWorld *bool
}

// Extension is the XMPP-specific "urn:xmpp:agent-api:0" object of a tool.
// Absent booleans are false and absent timeouts are zero. Permissions and
// approval are declarations: effective authorization comes from policy.
type Extension struct {
	// SupportsProgress is supportsProgress.
	SupportsProgress bool
	// SupportsCancellation is supportsCancellation.
	SupportsCancellation bool
	// SupportsInput is supportsInput.
	SupportsInput bool
	// DefaultTimeoutSeconds is defaultTimeoutSeconds, or 0.
	DefaultTimeoutSeconds int
	// MaximumTimeoutSeconds is maximumTimeoutSeconds, or 0.
	MaximumTimeoutSeconds int
	// RequiredPermissions is requiredPermissions.
	RequiredPermissions []string
	// ApprovalRequired is approvalRequired.
	ApprovalRequired bool
	// Tags is tags.
	Tags []string
}

// Parse validates a manifest and returns its canonical form and hashes.
//
// The steps run in this order, and nothing is hashed unless all succeed:
// the size limit; the I-JSON and structural checks of Canonicalize; the
// normative manifest schema; the application rules (HTTPS URIs, version
// grammar, bare JID under Options.Domain, unique XML-safe tool names,
// timeouts); the version-0 rules for every tool schema (see CompileSchema);
// and finally RFC 8785 canonicalization and SHA-256.
//
// Bad input yields an *Error. Any other error (an invalid Options.Domain,
// or a broken embedded schema) is a local fault.
func Parse(raw []byte, opts Options) (*Manifest, error) {
	lim := opts.Limits.withDefaults()
	domain, err := parseDomain(opts.Domain)
	if err != nil {
		return nil, err
	}
	if len(raw) > lim.MaxManifestBytes {
		return nil, newError(KindTooLarge, "",
			fmt.Sprintf("manifest is %d bytes, limit is %d", len(raw), lim.MaxManifestBytes))
	}
	if err := checkJSON(raw, lim); err != nil {
		return nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, wrapError(KindMalformed, "", "manifest is not valid JSON", err)
	}
	root, ok := doc.(map[string]any)
	if !ok {
		return nil, newError(KindInvalid, "", "manifest must be a JSON object")
	}
	if tools, ok := root["tools"].([]any); ok && len(tools) > lim.MaxTools {
		return nil, newError(KindTooLarge, "/tools",
			fmt.Sprintf("manifest has %d tools, limit is %d", len(tools), lim.MaxTools))
	}
	if err := validateManifestSchema(doc); err != nil {
		return nil, err
	}
	m, err := buildManifest(root, domain)
	if err != nil {
		return nil, err
	}
	tools, _ := root["tools"].([]any)
	regexCost := new(int) // shared: the bound is per manifest
	for i := range m.Tools {
		def, _ := tools[i].(map[string]any)
		if err := addSchemas(&m.Tools[i], def, i, opts, lim, regexCost); err != nil {
			return nil, err
		}
	}
	if m.Canonical, err = transform(raw, ""); err != nil {
		return nil, err
	}
	m.Hash = sha256.Sum256(m.Canonical)
	return m, nil
}

// addSchemas applies the version-0 schema rules to a tool's input and
// output schemas and records their canonical forms and digests.
func addSchemas(t *Tool, def map[string]any, i int, opts Options, lim Limits, regexCost *int) error {
	for _, dir := range []struct {
		member    string
		input     bool
		bytes     *[]byte
		hash      *[32]byte
		validator **Validator
	}{
		{"inputSchema", true, &t.InputSchema, &t.InputHash, &t.input},
		{"outputSchema", false, &t.OutputSchema, &t.OutputHash, &t.output},
	} {
		v, ok := def[dir.member]
		if !ok {
			continue
		}
		path := pointer("tools", strconv.Itoa(i), dir.member)
		canon, err := canonicalValue(v, path)
		if err != nil {
			return err
		}
		if len(canon) > lim.MaxSchemaBytes {
			return newError(KindTooLarge, path,
				fmt.Sprintf("schema is %d bytes in canonical form, limit is %d", len(canon), lim.MaxSchemaBytes))
		}
		val, err := compileSchema(v, path, dir.input, opts, lim, regexCost)
		if err != nil {
			return err
		}
		*dir.bytes = canon
		*dir.hash = sha256.Sum256(canon)
		if opts.KeepValidators {
			*dir.validator = val
			if opts.cacheable() {
				compiled.put(cacheKey{*dir.hash, dir.input}, val, len(canon))
			}
		}
	}
	return nil
}

// canonicalValue canonicalizes a decoded, already checked JSON value.
// Re-encoding with encoding/json is lossless here: numbers are json.Number
// literals and strings are valid UTF-8, and RFC 8785 fixes the rest.
func canonicalValue(v any, path string) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, wrapError(KindMalformed, path, "cannot re-encode JSON value",
			fmt.Errorf("marshal: %w", err))
	}
	return transform(b, path)
}
