package manifest

import (
	"encoding/base64"
	"strings"
	"unicode/utf8"

	"agentgw/internal/ident"
	"agentgw/wire"
)

// Namespaces and node prefixes from the ProtoXEP section "Protocol
// Namespaces and Identifiers".
const (
	// NS is the Agent API XML namespace; it also names the XMPP extension
	// object inside a tool definition.
	NS = "urn:xmpp:agent-api:0"
	// NSTool is the tool feature and the prefix of tool nodes.
	NSTool = "urn:xmpp:agent-tool:0"
	// NSTools is the prefix of tool collection nodes.
	NSTools = "urn:xmpp:agent-tools:0"
)

// maxVersionBytes is the upper bound of the version grammar.
const maxVersionBytes = 64

// ValidVersion reports whether v is a valid endpoint API version: 1 to 64
// characters from [A-Za-z0-9._~-]. Versions are opaque, case-sensitive and
// compared exactly.
func ValidVersion(v string) bool {
	return ident.Unreserved(v, 1, maxVersionBytes)
}

// ValidToolName reports whether name is a valid tool name: nonempty, valid
// UTF-8, and made only of characters legal in XML 1.0. Names are compared
// code point by code point, without Unicode normalization.
func ValidToolName(name string) bool {
	return name != "" && wire.ValidText(name)
}

// ToolsNode returns the tool collection node for version:
// "urn:xmpp:agent-tools:0#VERSION". The version is not validated.
func ToolsNode(version string) string {
	return NSTools + "#" + version
}

// ParseToolsNode returns the version named by a tool collection node.
func ParseToolsNode(node string) (version string, err error) {
	v, ok := strings.CutPrefix(node, NSTools+"#")
	if !ok {
		return "", newError(KindInvalid, "", "not a tool collection node")
	}
	if !ValidVersion(v) {
		return "", newError(KindInvalid, "", "tool collection node has an invalid version")
	}
	return v, nil
}

// ToolNode returns the tool node for a tool of an API version:
// "urn:xmpp:agent-tool:0#VERSION#NAME", with NAME the unpadded base64url
// (RFC 4648 section 5) encoding of the UTF-8 tool name. Its arguments are
// not validated; ParseToolNode is strict.
func ToolNode(version, toolName string) string {
	return NSTool + "#" + version + "#" + base64.RawURLEncoding.EncodeToString([]byte(toolName))
}

// ParseToolNode returns the version and tool name named by a tool node. It
// rejects a wrong prefix, an invalid version, padding, characters outside
// the base64url alphabet, noncanonical encodings (nonzero trailing bits),
// invalid UTF-8, empty names, and names with characters illegal in XML 1.0.
func ParseToolNode(node string) (version, toolName string, err error) {
	rest, ok := strings.CutPrefix(node, NSTool+"#")
	if !ok {
		return "", "", newError(KindInvalid, "", "not a tool node")
	}
	// The version grammar excludes '#', so the first '#' ends it.
	version, enc, ok := strings.Cut(rest, "#")
	if !ok {
		return "", "", newError(KindInvalid, "", "tool node lacks an encoded tool name")
	}
	if !ValidVersion(version) {
		return "", "", newError(KindInvalid, "", "tool node has an invalid version")
	}
	if enc == "" {
		return "", "", newError(KindInvalid, "", "tool node has an empty tool name")
	}
	if strings.ContainsRune(enc, '=') {
		return "", "", newError(KindInvalid, "", "tool node name must not be padded")
	}
	// Strict rejects nonzero trailing bits. The decoder also skips CR and
	// LF, so the re-encoding comparison catches those and anything else
	// that would make two nodes name one tool.
	raw, derr := base64.RawURLEncoding.Strict().DecodeString(enc)
	if derr != nil || base64.RawURLEncoding.EncodeToString(raw) != enc {
		return "", "", wrapError(KindInvalid, "", "tool node name is not canonical unpadded base64url", derr)
	}
	name := string(raw)
	switch {
	case name == "":
		return "", "", newError(KindInvalid, "", "tool node has an empty tool name")
	case !utf8.ValidString(name):
		return "", "", newError(KindInvalid, "", "tool node name is not valid UTF-8")
	case !wire.ValidText(name):
		return "", "", newError(KindInvalid, "", "tool node name contains a character not allowed in XML 1.0")
	}
	return version, name, nil
}
