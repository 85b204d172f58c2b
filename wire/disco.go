package wire

import "encoding/xml"

// XEP-0030 namespaces.
const (
	NSDiscoInfo  = "http://jabber.org/protocol/disco#info"
	NSDiscoItems = "http://jabber.org/protocol/disco#items"
)

// Identity is an XEP-0030 identity.
type Identity struct {
	Category, Type, Name string
}

// InfoResult is a disco#info result; unlike mellium's disco.Info it carries
// XEP-0128 extension forms.
type InfoResult struct {
	Node       string
	Identities []Identity
	Features   []string
	Forms      []Form
}

// TokenReader implements xmlstream.Marshaler.
func (r InfoResult) TokenReader() xml.TokenReader {
	var attrs []xml.Attr
	if r.Node != "" {
		attrs = append(attrs, Attr("node", r.Node))
	}
	kids := make([]xml.TokenReader, 0, len(r.Identities)+len(r.Features)+len(r.Forms))
	for _, id := range r.Identities {
		a := []xml.Attr{Attr("category", id.Category), Attr("type", id.Type)}
		if id.Name != "" {
			a = append(a, Attr("name", id.Name))
		}
		kids = append(kids, Elem(xml.Name{Space: NSDiscoInfo, Local: "identity"}, a))
	}
	for _, f := range r.Features {
		kids = append(kids, Elem(xml.Name{Space: NSDiscoInfo, Local: "feature"}, []xml.Attr{Attr("var", f)}))
	}
	for _, f := range r.Forms {
		kids = append(kids, f.TokenReader())
	}
	return Elem(xml.Name{Space: NSDiscoInfo, Local: "query"}, attrs, kids...)
}

// Item is an XEP-0030 item.
type Item struct {
	JID, Node, Name string
}

// ItemsResult is a disco#items result with an optional XEP-0059 set.
type ItemsResult struct {
	Node  string
	Items []Item
	Set   *RSMResult
}

// TokenReader implements xmlstream.Marshaler.
func (r ItemsResult) TokenReader() xml.TokenReader {
	var attrs []xml.Attr
	if r.Node != "" {
		attrs = append(attrs, Attr("node", r.Node))
	}
	kids := make([]xml.TokenReader, 0, len(r.Items)+1)
	for _, it := range r.Items {
		a := []xml.Attr{Attr("jid", it.JID)}
		if it.Node != "" {
			a = append(a, Attr("node", it.Node))
		}
		if it.Name != "" {
			a = append(a, Attr("name", it.Name))
		}
		kids = append(kids, Elem(xml.Name{Space: NSDiscoItems, Local: "item"}, a))
	}
	if r.Set != nil {
		kids = append(kids, r.Set.TokenReader())
	}
	return Elem(xml.Name{Space: NSDiscoItems, Local: "query"}, attrs, kids...)
}
