package manifest

import (
	"bytes"
	_ "embed" // for the normative manifest schema
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"

	"agentgw/wire"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"mellium.im/xmpp/jid"
)

// manifestSchemaJSON is the normative manifest JSON Schema of the ProtoXEP
// section "Manifest Model", byte-identical to testdata/manifest.schema.json
// (a test asserts this).
//
//go:embed manifest.schema.json
var manifestSchemaJSON []byte

// ManifestSchemaID is the $id of the normative manifest schema.
const ManifestSchemaID = "urn:xmpp:agent-api:0:manifest-json"

// ManifestSchema returns the normative manifest JSON Schema, as embedded.
func ManifestSchema() []byte { return bytes.Clone(manifestSchemaJSON) }

// manifestSchema compiles the embedded schema once.
var manifestSchema = sync.OnceValues(func() (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(manifestSchemaJSON))
	if err != nil {
		return nil, fmt.Errorf("manifest: decode embedded schema: %w", err)
	}
	c := NewCompiler()
	if err := c.AddResource(ManifestSchemaID, doc); err != nil {
		return nil, fmt.Errorf("manifest: add embedded schema: %w", err)
	}
	sch, err := c.Compile(ManifestSchemaID)
	if err != nil {
		return nil, fmt.Errorf("manifest: compile embedded schema: %w", err)
	}
	return sch, nil
})

// patternMessages replace the generic pattern failure for members whose
// rule has a clearer name.
var patternMessages = map[string]string{
	"/agent/homepage":     "scheme must be https, written in lowercase",
	"/agent/avatarUrl":    "scheme must be https, written in lowercase",
	"/agent/version":      "invalid version: must match [A-Za-z0-9._~-]{1,64}",
	"/mcpProtocolVersion": "invalid MCP protocol version: must look like YYYY-MM-DD",
}

// validateManifestSchema validates a decoded manifest against the
// normative schema. A failure to compile the embedded schema is a bug, not
// bad input, so it is returned as a plain error.
func validateManifestSchema(doc any) error {
	sch, err := manifestSchema()
	if err != nil {
		return err
	}
	if err := sch.Validate(doc); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			e := validationError(ve, "")
			if msg, ok := patternMessages[e.Path]; ok && strings.HasPrefix(e.Msg, "does not match the pattern") {
				e.Msg = msg
			}
			e.err = fmt.Errorf("validate manifest: %w", err)
			return e
		}
		return wrapError(KindInvalid, "", "manifest does not satisfy the manifest schema", err)
	}
	return nil
}

// checkHTTPSURI enforces the agent.homepage and agent.avatarUrl rules: an
// RFC 3986 absolute-URI (so no fragment) whose scheme is literally
// lowercase "https", with a non-empty host and no userinfo. net/url is
// lenient, so the character repertoire and percent-encodings are checked
// here first.
func checkHTTPSURI(s, path string) error {
	invalid := func(msg string) error { return newError(KindInvalid, path, msg) }
	if !strings.HasPrefix(s, "https://") {
		return invalid("scheme must be https, written in lowercase")
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("-._~:/?#[]@!$&'()*+,;=", c) >= 0:
		case c == '%':
			if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
				return invalid("malformed percent-encoding in URI")
			}
		default:
			return invalid("URI contains a character not allowed by RFC 3986")
		}
	}
	u, err := url.Parse(s)
	if err != nil {
		return wrapError(KindInvalid, path, "not a valid URI", err)
	}
	switch {
	case u.User != nil:
		return invalid("userinfo is not allowed in the URI")
	case u.Hostname() == "":
		return invalid("URI must have a non-empty host")
	case strings.Contains(s, "#"):
		return invalid("URI must be absolute, without a fragment")
	}
	return nil
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// checkJID parses agent.jid and returns its normalized bare form. It must
// be a bare JID with a localpart, and under domain when domain is set.
func checkJID(s string, domain jid.JID, path string) (string, error) {
	j, err := jid.Parse(s)
	if err != nil {
		return "", wrapError(KindInvalid, path, "not a valid JID", err)
	}
	switch {
	case j.Resourcepart() != "":
		return "", newError(KindInvalid, path, "must be a bare JID (no resourcepart)")
	case j.Localpart() == "":
		return "", newError(KindInvalid, path, "must have a localpart")
	}
	if domain.Domainpart() != "" && j.Domainpart() != domain.Domainpart() {
		return "", newError(KindDomain, path, "domain is outside the component domain")
	}
	return j.Bare().String(), nil
}

// parseDomain normalizes Options.Domain; a zero JID means no restriction.
func parseDomain(s string) (jid.JID, error) {
	if s == "" {
		return jid.JID{}, nil
	}
	d, err := jid.Parse(s)
	if err != nil {
		return jid.JID{}, fmt.Errorf("manifest: invalid Options.Domain: %w", err)
	}
	if d.Localpart() != "" || d.Resourcepart() != "" {
		return jid.JID{}, errors.New("manifest: Options.Domain must be a bare domain")
	}
	return d, nil
}

// checkText rejects strings the gateway could not carry in XML 1.0 (for
// example in discovery forms), such as control characters other than tab,
// line feed and carriage return.
func checkText(s, path string) error {
	if !wire.ValidText(s) {
		return newError(KindInvalid, path, "contains a character not allowed in XML 1.0")
	}
	return nil
}
