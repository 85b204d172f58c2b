package api

import (
	"crypto/sha256"
	"encoding/xml"
	"strings"

	"agentgw/manifest"
	"agentgw/wire"
)

// Element names of the urn:xmpp:agent-api:0 schema, for routing.
var (
	NameRegister           = xml.Name{Space: NS, Local: "register"}
	NameRegistered         = xml.Name{Space: NS, Local: "registered"}
	NameActivate           = xml.Name{Space: NS, Local: "activate"}
	NameActive             = xml.Name{Space: NS, Local: "active"}
	NameDeactivate         = xml.Name{Space: NS, Local: "deactivate"}
	NameDeactivated        = xml.Name{Space: NS, Local: "deactivated"}
	NameRegistrationStatus = xml.Name{Space: NS, Local: "registration-status"}
	NameRegistration       = xml.Name{Space: NS, Local: "registration"}
	NameRemoveVersion      = xml.Name{Space: NS, Local: "remove-version"}
	NameRemoveEndpoint     = xml.Name{Space: NS, Local: "remove-endpoint"}
	NameRemoved            = xml.Name{Space: NS, Local: "removed"}
	NameManifestRequest    = xml.Name{Space: NS, Local: "manifest-request"}
	NameManifest           = xml.Name{Space: NS, Local: "manifest"}
	NameSchemaRequest      = xml.Name{Space: NS, Local: "schema-request"}
	NameSchema             = xml.Name{Space: NS, Local: "schema"}

	nameJSON         = xml.Name{Space: NS, Local: "json"}
	nameVersion      = xml.Name{Space: NS, Local: "version"}
	nameManifestHash = xml.Name{Space: NS, Local: "manifest-hash"}
	nameSchemaHash   = xml.Name{Space: NS, Local: "schema-hash"}
)

// Directions of a schema request (the XSD's direction type).
const (
	DirectionInput  = "input"
	DirectionOutput = "output"
)

// ParseError reports a payload that does not follow the XML Schema of
// urn:xmpp:agent-api:0 or the value grammars of the ProtoXEP. Handlers answer
// it with <bad-request/>. Its message names the element and the rule, never a
// value taken from the payload.
type ParseError struct {
	Element string
	Reason  string
}

func (e *ParseError) Error() string { return "api: <" + e.Element + "/>: " + e.Reason }

func parseErr(local, reason string) error { return &ParseError{Element: local, Reason: reason} }

// Register is the <register/> request: one manifest document, as JSON text
// after XML character extraction.
type Register struct {
	Manifest string
}

// TokenReader implements xmlstream.Marshaler.
func (r Register) TokenReader() xml.TokenReader {
	return wire.Elem(NameRegister, nil,
		wire.Elem(NameManifest, []xml.Attr{wire.Attr("media-type", MediaTypeJSON)}, wire.Text(r.Manifest)))
}

// ParseRegister reads a <register/> request.
func ParseRegister(el wire.Element) (Register, error) {
	if err := expectName(el, NameRegister); err != nil {
		return Register{}, err
	}
	kids := el.Children()
	if len(kids) != 1 || kids[0].Start.Name != NameManifest {
		return Register{}, parseErr("register", "must contain exactly one <manifest/>")
	}
	m := kids[0]
	if mt, _ := m.AttrValue("media-type"); mt != MediaTypeJSON {
		return Register{}, parseErr("manifest", "media-type must be "+MediaTypeJSON)
	}
	if len(m.Children()) != 0 {
		return Register{}, parseErr("manifest", "must contain only JSON text")
	}
	return Register{Manifest: m.Text()}, nil
}

// Registered is the result of <register/>.
type Registered struct {
	JID, Version string
	Hash         wire.Hash
}

// TokenReader implements xmlstream.Marshaler.
func (r Registered) TokenReader() xml.TokenReader {
	return wire.Elem(NameRegistered, jidVersionAttrs(r.JID, r.Version), r.Hash.TokenReader())
}

// ParseRegistered reads a <registered/> result.
func ParseRegistered(el wire.Element) (Registered, error) {
	j, v, h, err := parseJIDVersionHash(el, NameRegistered)
	return Registered{JID: j, Version: v, Hash: h}, err
}

// Activate is the <activate/> request: select a registered version after
// checking its hash.
type Activate struct {
	JID, Version string
	Hash         wire.Hash
}

// TokenReader implements xmlstream.Marshaler.
func (a Activate) TokenReader() xml.TokenReader {
	return wire.Elem(NameActivate, jidVersionAttrs(a.JID, a.Version), a.Hash.TokenReader())
}

// ParseActivate reads an <activate/> request.
func ParseActivate(el wire.Element) (Activate, error) {
	j, v, h, err := parseJIDVersionHash(el, NameActivate)
	return Activate{JID: j, Version: v, Hash: h}, err
}

// Active is the result of <activate/>.
type Active struct {
	JID, Version string
}

// TokenReader implements xmlstream.Marshaler.
func (a Active) TokenReader() xml.TokenReader {
	return wire.Elem(NameActive, jidVersionAttrs(a.JID, a.Version))
}

// ParseActive reads an <active/> result.
func ParseActive(el wire.Element) (Active, error) {
	j, v, err := parseJIDVersion(el, NameActive, true)
	return Active{JID: j, Version: v}, err
}

// EndpointOp is one of the requests and results that carry only an
// endpoint's JID (the XSD's endpointOperation type): <deactivate/>,
// <deactivated/>, <registration-status/> and <remove-endpoint/>. Name says
// which.
type EndpointOp struct {
	Name xml.Name
	JID  string
}

// TokenReader implements xmlstream.Marshaler.
func (o EndpointOp) TokenReader() xml.TokenReader {
	return wire.Elem(o.Name, []xml.Attr{wire.Attr("jid", o.JID)})
}

// ParseEndpointOp reads an element of the endpointOperation type named name.
func ParseEndpointOp(el wire.Element, name xml.Name) (EndpointOp, error) {
	if err := expectEmpty(el, name); err != nil {
		return EndpointOp{}, err
	}
	j, err := requireJID(el, name)
	if err != nil {
		return EndpointOp{}, err
	}
	return EndpointOp{Name: name, JID: j}, nil
}

// RemoveVersion is the <remove-version/> request.
type RemoveVersion struct {
	JID, Version string
}

// TokenReader implements xmlstream.Marshaler.
func (r RemoveVersion) TokenReader() xml.TokenReader {
	return wire.Elem(NameRemoveVersion, jidVersionAttrs(r.JID, r.Version))
}

// ParseRemoveVersion reads a <remove-version/> request.
func ParseRemoveVersion(el wire.Element) (RemoveVersion, error) {
	j, v, err := parseJIDVersion(el, NameRemoveVersion, true)
	return RemoveVersion{JID: j, Version: v}, err
}

// Removed is the result of <remove-version/> (with Version) and of
// <remove-endpoint/> (Version empty, so the attribute is omitted).
type Removed struct {
	JID, Version string
}

// TokenReader implements xmlstream.Marshaler.
func (r Removed) TokenReader() xml.TokenReader {
	return wire.Elem(NameRemoved, jidVersionAttrs(r.JID, r.Version))
}

// ParseRemoved reads a <removed/> result.
func ParseRemoved(el wire.Element) (Removed, error) {
	j, v, err := parseJIDVersion(el, NameRemoved, false)
	return Removed{JID: j, Version: v}, err
}

// Registration is the result of <registration-status/>: every registered
// version, which one is active, and which may be removed now.
type Registration struct {
	JID      string
	Versions []RegisteredVersion
}

// RegisteredVersion is one <version/> of a <registration/>.
type RegisteredVersion struct {
	ID        string
	Active    bool
	Removable bool
	Hash      wire.Hash
}

// TokenReader implements xmlstream.Marshaler.
func (r Registration) TokenReader() xml.TokenReader {
	kids := make([]xml.TokenReader, 0, len(r.Versions))
	for _, v := range r.Versions {
		kids = append(kids, wire.Elem(nameVersion, []xml.Attr{
			wire.Attr("id", v.ID),
			wire.Attr("active", xsBool(v.Active)),
			wire.Attr("removable", xsBool(v.Removable)),
		}, v.Hash.TokenReader()))
	}
	return wire.Elem(NameRegistration, []xml.Attr{wire.Attr("jid", r.JID)}, kids...)
}

// ParseRegistration reads a <registration/> result.
func ParseRegistration(el wire.Element) (Registration, error) {
	if err := expectName(el, NameRegistration); err != nil {
		return Registration{}, err
	}
	j, err := requireJID(el, NameRegistration)
	if err != nil {
		return Registration{}, err
	}
	r := Registration{JID: j}
	for _, c := range el.Children() {
		if c.Start.Name != nameVersion {
			return Registration{}, parseErr("registration", "may contain only <version/>")
		}
		var v RegisteredVersion
		if v.ID, _ = c.AttrValue("id"); !manifest.ValidVersion(v.ID) {
			return Registration{}, parseErr("version", "id must be a valid version")
		}
		if v.Active, err = parseXSBool(c, "active"); err != nil {
			return Registration{}, err
		}
		if v.Removable, err = parseXSBool(c, "removable"); err != nil {
			return Registration{}, err
		}
		if v.Hash, err = onlyHash(c); err != nil {
			return Registration{}, err
		}
		r.Versions = append(r.Versions, v)
	}
	return r, nil
}

// ManifestRequest is the <manifest-request/> query. An empty Version asks
// for the active version.
type ManifestRequest struct {
	Version string
}

// TokenReader implements xmlstream.Marshaler.
func (r ManifestRequest) TokenReader() xml.TokenReader {
	var attrs []xml.Attr
	if r.Version != "" {
		attrs = []xml.Attr{wire.Attr("version", r.Version)}
	}
	return wire.Elem(NameManifestRequest, attrs)
}

// ParseManifestRequest reads a <manifest-request/> query. A version
// attribute, if present, must match the version grammar.
func ParseManifestRequest(el wire.Element) (ManifestRequest, error) {
	if err := expectEmpty(el, NameManifestRequest); err != nil {
		return ManifestRequest{}, err
	}
	v, err := versionAttr(el, NameManifestRequest, false)
	if err != nil {
		return ManifestRequest{}, err
	}
	return ManifestRequest{Version: v}, nil
}

// Manifest is the result of <manifest-request/>: the exact version, its hash
// and the canonical bytes that were hashed.
type Manifest struct {
	Version string
	Hash    wire.Hash
	JSON    string
}

// TokenReader implements xmlstream.Marshaler.
func (m Manifest) TokenReader() xml.TokenReader {
	return wire.Elem(NameManifest, []xml.Attr{
		wire.Attr("media-type", MediaTypeJSON),
		wire.Attr("version", m.Version),
	}, m.Hash.TokenReader(), wire.TextElem(nameJSON, m.JSON))
}

// ParseManifest reads a <manifest/> result.
func ParseManifest(el wire.Element) (Manifest, error) {
	if err := expectName(el, NameManifest); err != nil {
		return Manifest{}, err
	}
	v, _ := el.AttrValue("version")
	if !manifest.ValidVersion(v) {
		return Manifest{}, parseErr("manifest", "version must be a valid version")
	}
	if mt, _ := el.AttrValue("media-type"); mt != MediaTypeJSON {
		return Manifest{}, parseErr("manifest", "media-type must be "+MediaTypeJSON)
	}
	kids := el.Children()
	if len(kids) != 2 || kids[1].Start.Name != nameJSON || len(kids[1].Children()) != 0 {
		return Manifest{}, parseErr("manifest", "must contain a <hash/> and then <json/>")
	}
	h, err := parseHash(kids[0])
	if err != nil {
		return Manifest{}, err
	}
	return Manifest{Version: v, Hash: h, JSON: kids[1].Text()}, nil
}

// SchemaRequest is the <schema-request/> query: one schema of a tool of a
// version, selected under the manifest hash the client pinned.
type SchemaRequest struct {
	Tool, Version, Direction string
	Hash                     wire.Hash
}

// TokenReader implements xmlstream.Marshaler.
func (r SchemaRequest) TokenReader() xml.TokenReader {
	return wire.Elem(NameSchemaRequest, schemaAttrs(r.Tool, r.Version, r.Direction), r.Hash.TokenReader())
}

// ParseSchemaRequest reads a <schema-request/> query: tool must be a valid
// tool name, version a valid version, direction input or output, and the
// manifest hash present.
func ParseSchemaRequest(el wire.Element) (SchemaRequest, error) {
	if err := expectName(el, NameSchemaRequest); err != nil {
		return SchemaRequest{}, err
	}
	tool, version, dir, err := parseSchemaAttrs(el)
	if err != nil {
		return SchemaRequest{}, err
	}
	h, err := onlyHash(el)
	if err != nil {
		return SchemaRequest{}, err
	}
	return SchemaRequest{Tool: tool, Version: version, Direction: dir, Hash: h}, nil
}

// Schema is the result of <schema-request/>.
type Schema struct {
	Tool, Version, Direction string
	ManifestHash, SchemaHash wire.Hash
	JSON                     string
}

// TokenReader implements xmlstream.Marshaler.
func (s Schema) TokenReader() xml.TokenReader {
	attrs := append(schemaAttrs(s.Tool, s.Version, s.Direction), wire.Attr("media-type", MediaTypeSchema))
	return wire.Elem(NameSchema, attrs,
		wire.Elem(nameManifestHash, nil, s.ManifestHash.TokenReader()),
		wire.Elem(nameSchemaHash, nil, s.SchemaHash.TokenReader()),
		wire.TextElem(nameJSON, s.JSON))
}

// ParseSchema reads a <schema/> result.
func ParseSchema(el wire.Element) (Schema, error) {
	if err := expectName(el, NameSchema); err != nil {
		return Schema{}, err
	}
	tool, version, dir, err := parseSchemaAttrs(el)
	if err != nil {
		return Schema{}, err
	}
	if mt, _ := el.AttrValue("media-type"); mt != MediaTypeSchema {
		return Schema{}, parseErr("schema", "media-type must be "+MediaTypeSchema)
	}
	kids := el.Children()
	if len(kids) != 3 || kids[0].Start.Name != nameManifestHash || kids[1].Start.Name != nameSchemaHash ||
		kids[2].Start.Name != nameJSON || len(kids[2].Children()) != 0 {
		return Schema{}, parseErr("schema", "must contain <manifest-hash/>, <schema-hash/> and <json/>")
	}
	s := Schema{Tool: tool, Version: version, Direction: dir, JSON: kids[2].Text()}
	if s.ManifestHash, err = onlyHash(kids[0]); err != nil {
		return Schema{}, err
	}
	if s.SchemaHash, err = onlyHash(kids[1]); err != nil {
		return Schema{}, err
	}
	return s, nil
}

// VerifyJSON reports whether json hashes to h: what a client checks after
// XML character extraction of a <json/> element.
func VerifyJSON(json string, h wire.Hash) bool {
	return sha256.Sum256([]byte(json)) == [32]byte(h)
}

func expectName(el wire.Element, name xml.Name) error {
	if el.Start.Name != name {
		return parseErr(name.Local, "unexpected element")
	}
	return nil
}

// expectEmpty checks that el is named name and has no children.
func expectEmpty(el wire.Element, name xml.Name) error {
	if err := expectName(el, name); err != nil {
		return err
	}
	if len(el.Children()) != 0 {
		return parseErr(name.Local, "must be empty")
	}
	return nil
}

func jidVersionAttrs(jid, version string) []xml.Attr {
	attrs := []xml.Attr{wire.Attr("jid", jid)}
	if version != "" {
		attrs = append(attrs, wire.Attr("version", version))
	}
	return attrs
}

// parseJIDVersion reads the jid and version attributes of an empty element;
// version is optional unless needVersion.
func parseJIDVersion(el wire.Element, name xml.Name, needVersion bool) (jid, version string, err error) {
	if err := expectEmpty(el, name); err != nil {
		return "", "", err
	}
	return jidVersion(el, name, needVersion)
}

func jidVersion(el wire.Element, name xml.Name, needVersion bool) (jid, version string, err error) {
	if jid, err = requireJID(el, name); err != nil {
		return "", "", err
	}
	if version, err = versionAttr(el, name, needVersion); err != nil {
		return "", "", err
	}
	return jid, version, nil
}

// requireJID reads the jid attribute of el, named name, which must be set.
func requireJID(el wire.Element, name xml.Name) (string, error) {
	j, ok := el.AttrValue("jid")
	if !ok || j == "" {
		return "", parseErr(name.Local, "jid is required")
	}
	return j, nil
}

// versionAttr reads the version attribute of el, named name: when present
// (or needed) it must match the version grammar.
func versionAttr(el wire.Element, name xml.Name, needVersion bool) (string, error) {
	v, ok := el.AttrValue("version")
	if (ok || needVersion) && !manifest.ValidVersion(v) {
		return "", parseErr(name.Local, "version must match [A-Za-z0-9._~-]{1,64}")
	}
	return v, nil
}

// parseJIDVersionHash reads an element with jid and version attributes and
// exactly one <hash/> child.
func parseJIDVersionHash(el wire.Element, name xml.Name) (jid, version string, h wire.Hash, err error) {
	if err := expectName(el, name); err != nil {
		return "", "", wire.Hash{}, err
	}
	if jid, version, err = jidVersion(el, name, true); err != nil {
		return "", "", wire.Hash{}, err
	}
	h, err = onlyHash(el)
	return jid, version, h, err
}

// onlyHash reads the single <hash/> child of el (the XSD's hashContainer).
func onlyHash(el wire.Element) (wire.Hash, error) {
	kids := el.Children()
	if len(kids) != 1 {
		return wire.Hash{}, parseErr(el.Start.Name.Local, "must contain exactly one <hash/>")
	}
	return parseHash(kids[0])
}

// parseHash reads a <hash/> by wire.ParseHash, as a ParseError.
func parseHash(el wire.Element) (wire.Hash, error) {
	h, err := wire.ParseHash(el)
	if err != nil {
		return wire.Hash{}, parseErr("hash", err.(wire.ErrBadHash).Reason)
	}
	return h, nil
}

func schemaAttrs(tool, version, direction string) []xml.Attr {
	return []xml.Attr{
		wire.Attr("direction", direction),
		wire.Attr("tool", tool),
		wire.Attr("version", version),
	}
}

func parseSchemaAttrs(el wire.Element) (tool, version, direction string, err error) {
	local := el.Start.Name.Local
	tool, _ = el.AttrValue("tool")
	if !manifest.ValidToolName(tool) {
		return "", "", "", parseErr(local, "tool must be a valid tool name")
	}
	version, _ = el.AttrValue("version")
	if !manifest.ValidVersion(version) {
		return "", "", "", parseErr(local, "version must match [A-Za-z0-9._~-]{1,64}")
	}
	direction, _ = el.AttrValue("direction")
	if direction != DirectionInput && direction != DirectionOutput {
		return "", "", "", parseErr(local, "direction must be input or output")
	}
	return tool, version, direction, nil
}

func xsBool(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// parseXSBool reads a required xs:boolean attribute.
func parseXSBool(el wire.Element, attr string) (bool, error) {
	v, _ := el.AttrValue(attr)
	switch strings.TrimSpace(v) {
	case "true", "1":
		return true, nil
	case "false", "0":
		return false, nil
	}
	return false, parseErr(el.Start.Name.Local, attr+" must be an xs:boolean")
}
