package wire

import (
	"encoding/xml"
	"errors"
	"slices"
	"strconv"
)

// This file holds the requesting side of XEP-0030 and XEP-0059: the
// requests a client sends and the parsers of the results the gateway
// writes with InfoResult, ItemsResult and RSMResult.

// InfoRequest is an XEP-0030 disco#info query, at a node or none.
type InfoRequest struct{ Node string }

// TokenReader implements xmlstream.Marshaler.
func (r InfoRequest) TokenReader() xml.TokenReader {
	var attrs []xml.Attr
	if r.Node != "" {
		attrs = append(attrs, Attr("node", r.Node))
	}
	return Elem(xml.Name{Space: NSDiscoInfo, Local: "query"}, attrs)
}

// ItemsRequest is an XEP-0030 disco#items query, with an optional
// XEP-0059 set.
type ItemsRequest struct {
	Node string
	RSM  *RSMRequest
}

// TokenReader implements xmlstream.Marshaler.
func (r ItemsRequest) TokenReader() xml.TokenReader {
	var attrs []xml.Attr
	if r.Node != "" {
		attrs = append(attrs, Attr("node", r.Node))
	}
	var kids []xml.TokenReader
	if r.RSM != nil {
		kids = append(kids, r.RSM.TokenReader())
	}
	return Elem(xml.Name{Space: NSDiscoItems, Local: "query"}, attrs, kids...)
}

// TokenReader writes the request <set/> (XEP-0059).
func (r RSMRequest) TokenReader() xml.TokenReader {
	name := func(l string) xml.Name { return xml.Name{Space: NSRSM, Local: l} }
	var kids []xml.TokenReader
	if r.Max != nil {
		kids = append(kids, TextElem(name("max"), strconv.Itoa(*r.Max)))
	}
	if r.After != nil {
		kids = append(kids, TextElem(name("after"), *r.After))
	}
	if r.Before != nil {
		kids = append(kids, TextElem(name("before"), *r.Before))
	}
	if r.Index != nil {
		kids = append(kids, TextElem(name("index"), strconv.Itoa(*r.Index)))
	}
	return Elem(name("set"), nil, kids...)
}

// errNotDisco is the error of a payload that is not the disco result asked.
var errNotDisco = errors.New("wire: not a disco result")

// discoNode checks that q is the <query/> of the disco namespace ns and
// returns its node attribute.
func discoNode(q Element, ns string) (string, error) {
	if q.Start.Name != (xml.Name{Space: ns, Local: "query"}) {
		return "", errNotDisco
	}
	node, _ := q.AttrValue("node")
	return node, nil
}

// ParseInfoResult reads a disco#info result, its XEP-0128 forms included.
func ParseInfoResult(q Element) (InfoResult, error) {
	var r InfoResult
	var err error
	if r.Node, err = discoNode(q, NSDiscoInfo); err != nil {
		return r, err
	}
	for _, c := range q.Children() {
		switch c.Start.Name {
		case xml.Name{Space: NSDiscoInfo, Local: "identity"}:
			var id Identity
			id.Category, _ = c.AttrValue("category")
			id.Type, _ = c.AttrValue("type")
			id.Name, _ = c.AttrValue("name")
			r.Identities = append(r.Identities, id)
		case xml.Name{Space: NSDiscoInfo, Local: "feature"}:
			if v, ok := c.AttrValue("var"); ok {
				r.Features = append(r.Features, v)
			}
		case xml.Name{Space: NSData, Local: "x"}:
			// Another entity's extension forms (XEP-0128) are read
			// as far as they go.
			f, err := ParseForm(c, FormRules{Lax: true})
			if err != nil {
				return r, err
			}
			r.Forms = append(r.Forms, f)
		}
	}
	return r, nil
}

// HasFeature reports whether the result advertises feature.
func (r InfoResult) HasFeature(feature string) bool { return slices.Contains(r.Features, feature) }

// HasIdentity reports whether the result has the identity category/type.
func (r InfoResult) HasIdentity(category, typ string) bool {
	return slices.ContainsFunc(r.Identities, func(id Identity) bool { return id.Category == category && id.Type == typ })
}

// Name is the name of the first identity, or "".
func (r InfoResult) Name() string {
	if len(r.Identities) == 0 {
		return ""
	}
	return r.Identities[0].Name
}

// Values returns the first value of each field of the result's forms.
func (r InfoResult) Values() map[string]string {
	out := map[string]string{}
	for _, f := range r.Forms {
		for _, fl := range f.Fields {
			if len(fl.Values) > 0 {
				out[fl.Var] = fl.Values[0]
			}
		}
	}
	return out
}

// ParseItemsResult reads a disco#items result and its XEP-0059 set.
func ParseItemsResult(q Element) (ItemsResult, error) {
	var r ItemsResult
	var err error
	if r.Node, err = discoNode(q, NSDiscoItems); err != nil {
		return r, err
	}
	for _, c := range q.Children() {
		switch c.Start.Name {
		case xml.Name{Space: NSDiscoItems, Local: "item"}:
			var it Item
			it.JID, _ = c.AttrValue("jid")
			it.Node, _ = c.AttrValue("node")
			it.Name, _ = c.AttrValue("name")
			r.Items = append(r.Items, it)
		case xml.Name{Space: NSRSM, Local: "set"}:
			set, err := parseRSMResult(c, false)
			if err != nil {
				return r, err
			}
			r.Set = &set
		}
	}
	return r, nil
}

// ParseRSMResultStrict reads a response <set/> that holds only RSM
// elements, each at most once: anything else is an ErrBadRSM.
func ParseRSMResultStrict(set Element) (RSMResult, error) { return parseRSMResult(set, true) }

// parseRSMResult reads a response <set/>; unless strict, it skips elements
// of other namespaces, and of a repeated element the last wins.
func parseRSMResult(set Element, strict bool) (RSMResult, error) {
	var r RSMResult
	var seen []string
	for _, c := range set.Children() {
		local := c.Start.Name.Local
		if strict && (c.Start.Name.Space != NSRSM || slices.Contains(seen, local)) {
			return r, ErrBadRSM{Reason: "unexpected element in set"}
		}
		if c.Start.Name.Space != NSRSM {
			continue
		}
		seen = append(seen, local)
		switch local {
		case "first":
			r.First, r.HasItems = c.Text(), true
			if v, ok := c.AttrValue("index"); ok {
				i, err := strconv.Atoi(v)
				if err != nil {
					return r, ErrBadRSM{Reason: "first index is not a number"}
				}
				r.FirstIndex = &i
			}
		case "last":
			r.Last, r.HasItems = c.Text(), true
		case "count":
			n, err := strconv.Atoi(c.Text())
			if err != nil {
				return r, ErrBadRSM{Reason: "count is not a number"}
			}
			r.Count = n
		}
	}
	return r, nil
}
