package legacy

// This file implements XEP-0054 (vcard-temp) and XEP-0292 (vCard4 over IQ)
// for virtual endpoints: an IQ get addressed to a visible endpoint is
// answered with the endpoint's public profile.

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"

	"agentgw/db"
	"agentgw/wire"
)

// Namespaces of the two vCard formats.
const (
	// NSVCardTemp is the XEP-0054 namespace; it is also the disco feature.
	NSVCardTemp = "vcard-temp"
	// NSVCard4 is the RFC 6351 xCard namespace that XEP-0292 carries over
	// IQ; it is also the disco feature an entity answering such IQs
	// advertises.
	NSVCard4 = "urn:ietf:params:xml:ns:vcard-4.0"
)

// Element names of the two vCard payloads, as the gateway routes them.
var (
	// NameVCardTemp is <vCard xmlns='vcard-temp'/>.
	NameVCardTemp = xml.Name{Space: NSVCardTemp, Local: "vCard"}
	// NameVCard4 is <vcard xmlns='urn:ietf:params:xml:ns:vcard-4.0'/>.
	NameVCard4 = xml.Name{Space: NSVCard4, Local: "vcard"}
)

// VCardFeatures are the features answering vCard IQs adds to an endpoint's
// disco#info. They are advertised on endpoints only: the gateway JID has no
// profile.
var VCardFeatures = []string{NSVCardTemp, NSVCard4}

// ErrNotVCard is returned by the parsers for an element of another name.
var ErrNotVCard = errors.New("legacy: not a vCard element")

// Profile is an endpoint's public profile: only manifest data meant for
// every requester who may see the endpoint. The URLs are copied, never
// dereferenced (ProtoXEP §"Manifest Model").
type Profile struct {
	// Name is agent.name, the stable implementation name.
	Name string
	// Title is agent.title, the display name; it may be empty.
	Title string
	// Description is agent.description.
	Description string
	// Homepage is agent.homepage, an informational https URI.
	Homepage string
	// AvatarURL is agent.avatarUrl, a public https URI of an image.
	AvatarURL string
}

// ProfileOf reads the public profile of a stored manifest version. Name,
// title and description are the copies the store keeps; the two URLs are
// read from the canonical manifest, matching member names exactly (JSON
// decoding into a struct would match them case-insensitively).
func ProfileOf(v db.Version) (Profile, error) {
	p := Profile{Name: v.Name, Title: v.Title, Description: v.Description}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(v.Canonical, &doc); err != nil {
		return Profile{}, fmt.Errorf("legacy: profile of %s: %w", v.JID, err)
	}
	var agent map[string]json.RawMessage
	if err := json.Unmarshal(doc["agent"], &agent); err != nil {
		return Profile{}, fmt.Errorf("legacy: profile of %s: agent: %w", v.JID, err)
	}
	for _, f := range []struct {
		key string
		dst *string
	}{{"homepage", &p.Homepage}, {"avatarUrl", &p.AvatarURL}} {
		raw, ok := agent[f.key]
		if !ok {
			continue
		}
		if err := json.Unmarshal(raw, f.dst); err != nil {
			return Profile{}, fmt.Errorf("legacy: profile of %s: %s: %w", v.JID, f.key, err)
		}
	}
	return p, nil
}

// DisplayName is the title, or the name when there is no title: the same
// rule as the directory's item names.
func (p Profile) DisplayName() string {
	if p.Title != "" {
		return p.Title
	}
	return p.Name
}

// VCardTemp is the profile as XEP-0054 vcard-temp.
func (p Profile) VCardTemp() VCardTemp {
	return VCardTemp{FN: p.DisplayName(), Nickname: p.Name, PhotoExtval: p.AvatarURL, URL: p.Homepage, Desc: p.Description}
}

// VCard4 is the profile as an XEP-0292 vCard4.
func (p Profile) VCard4() VCard4 {
	return VCard4{FN: p.DisplayName(), Nickname: p.Name, Note: p.Description, URL: p.Homepage, PhotoURI: p.AvatarURL}
}

// VCardTemp is an XEP-0054 <vCard/> holding the properties an endpoint
// publishes. Empty properties are omitted. N is omitted too: an agent has no
// family or given name, and deployed clients display FN.
type VCardTemp struct {
	// FN is the formatted name.
	FN string
	// Nickname is NICKNAME.
	Nickname string
	// PhotoExtval is PHOTO/EXTVAL: a URI of the image, never inlined.
	PhotoExtval string
	// URL is URL.
	URL string
	// Desc is DESC.
	Desc string
}

// TokenReader implements xmlstream.Marshaler. Properties are written in the
// order of the XEP-0054 DTD.
func (v VCardTemp) TokenReader() xml.TokenReader {
	prop := func(local, text string) xml.TokenReader {
		if text == "" {
			return nil
		}
		return wire.TextElem(xml.Name{Space: NSVCardTemp, Local: local}, text)
	}
	var photo xml.TokenReader
	if v.PhotoExtval != "" {
		photo = wire.Elem(xml.Name{Space: NSVCardTemp, Local: "PHOTO"}, nil, prop("EXTVAL", v.PhotoExtval))
	}
	return wire.Elem(NameVCardTemp, nil,
		prop("FN", v.FN),
		prop("NICKNAME", v.Nickname),
		photo,
		prop("URL", v.URL),
		prop("DESC", v.Desc),
	)
}

// ParseVCardTemp reads the properties VCardTemp holds from a <vCard/>
// element. Other properties are ignored; of a repeated property the first
// wins.
func ParseVCardTemp(el wire.Element) (VCardTemp, error) {
	if el.Start.Name != NameVCardTemp {
		return VCardTemp{}, ErrNotVCard
	}
	var v VCardTemp
	for _, c := range el.Children() {
		if c.Start.Name.Space != NSVCardTemp {
			continue
		}
		switch c.Start.Name.Local {
		case "FN":
			first(&v.FN, c.Text())
		case "NICKNAME":
			first(&v.Nickname, c.Text())
		case "URL":
			first(&v.URL, c.Text())
		case "DESC":
			first(&v.Desc, c.Text())
		case "PHOTO":
			if ext, ok := c.Child(xml.Name{Space: NSVCardTemp, Local: "EXTVAL"}); ok {
				first(&v.PhotoExtval, ext.Text())
			}
		}
	}
	return v, nil
}

// VCard4 is an RFC 6351 <vcard/> as XEP-0292 carries it, holding the
// properties an endpoint publishes. Empty properties are omitted.
type VCard4 struct {
	// FN is fn/text.
	FN string
	// Nickname is nickname/text.
	Nickname string
	// Note is note/text: the description.
	Note string
	// URL is url/uri.
	URL string
	// PhotoURI is photo/uri: a URI of the image, never inlined.
	PhotoURI string
}

// TokenReader implements xmlstream.Marshaler.
func (v VCard4) TokenReader() xml.TokenReader {
	prop := func(local, valueType, value string) xml.TokenReader {
		if value == "" {
			return nil
		}
		return wire.Elem(xml.Name{Space: NSVCard4, Local: local}, nil,
			wire.TextElem(xml.Name{Space: NSVCard4, Local: valueType}, value))
	}
	return wire.Elem(NameVCard4, nil,
		prop("fn", "text", v.FN),
		prop("nickname", "text", v.Nickname),
		prop("note", "text", v.Note),
		prop("url", "uri", v.URL),
		prop("photo", "uri", v.PhotoURI),
	)
}

// ParseVCard4 reads the properties VCard4 holds from a <vcard/> element.
// Other properties are ignored; of a repeated property the first wins.
func ParseVCard4(el wire.Element) (VCard4, error) {
	if el.Start.Name != NameVCard4 {
		return VCard4{}, ErrNotVCard
	}
	var v VCard4
	value := func(c wire.Element, valueType string) string {
		x, _ := c.Child(xml.Name{Space: NSVCard4, Local: valueType})
		return x.Text()
	}
	for _, c := range el.Children() {
		if c.Start.Name.Space != NSVCard4 {
			continue
		}
		switch c.Start.Name.Local {
		case "fn":
			first(&v.FN, value(c, "text"))
		case "nickname":
			first(&v.Nickname, value(c, "text"))
		case "note":
			first(&v.Note, value(c, "text"))
		case "url":
			first(&v.URL, value(c, "uri"))
		case "photo":
			first(&v.PhotoURI, value(c, "uri"))
		}
	}
	return v, nil
}

// first sets *dst to s unless it is already set.
func first(dst *string, s string) {
	if *dst == "" {
		*dst = s
	}
}
