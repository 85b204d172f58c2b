package search

import (
	"encoding/xml"

	"agentgw/surface"
	"agentgw/wire"
)

// Fields is the answer to a search get (XEP-0055 §2, §3): instructions, the
// legacy fields offered, and the XEP-0004 form equivalent to them.
type Fields struct {
	Instructions string
	// Legacy names the legacy field elements offered; each is written
	// empty.
	Legacy []string
	// Form is the data form (type "form"), if any.
	Form *wire.Form
}

// TokenReader implements xmlstream.Marshaler.
func (f Fields) TokenReader() xml.TokenReader {
	var kids []xml.TokenReader
	if f.Instructions != "" {
		kids = append(kids, wire.TextElem(xml.Name{Space: NS, Local: "instructions"}, f.Instructions))
	}
	for _, l := range f.Legacy {
		kids = append(kids, wire.Elem(xml.Name{Space: NS, Local: l}, nil))
	}
	if f.Form != nil {
		kids = append(kids, f.Form.TokenReader())
	}
	return wire.Elem(Name, nil, kids...)
}

// ParseFields reads the answer to a search get, as a client would.
func ParseFields(q wire.Element) (Fields, error) {
	var f Fields
	if q.Start.Name != Name {
		return f, surface.ErrBadRequest
	}
	for _, c := range q.Children() {
		switch {
		case c.Start.Name == xml.Name{Space: NS, Local: "instructions"}:
			f.Instructions = c.Text()
		case c.Start.Name.Space == NS:
			f.Legacy = append(f.Legacy, c.Start.Name.Local)
		case c.Start.Name == nameForm && f.Form == nil:
			form, err := parseForm(c)
			if err != nil {
				return f, err
			}
			f.Form = &form
		}
	}
	return f, nil
}

// Query is a search submission: the nick, whether it came as the legacy
// <nick/> (XEP-0055 §2) rather than a data form (§3), and the XEP-0059 set.
type Query struct {
	Nick   string
	Legacy bool
	RSM    *wire.RSMRequest
}

// TokenReader implements xmlstream.Marshaler, writing the request as a
// client would: the set first, then the form or the legacy field.
func (r Query) TokenReader() xml.TokenReader {
	var kids []xml.TokenReader
	if r.RSM != nil {
		kids = append(kids, r.RSM.TokenReader())
	}
	if r.Legacy {
		kids = append(kids, wire.TextElem(xml.Name{Space: NS, Local: FieldNick}, r.Nick))
	} else {
		form := wire.Form{Type: wire.FormSubmit, FormType: NS, Fields: []wire.Field{{Var: FieldNick, Values: []string{r.Nick}}}}
		kids = append(kids, form.TokenReader())
	}
	return wire.Elem(Name, nil, kids...)
}

var (
	nameForm = xml.Name{Space: wire.NSData, Local: "x"}
	nameSet  = xml.Name{Space: wire.NSRSM, Local: "set"}
	nameNick = xml.Name{Space: NS, Local: FieldNick}
)

// ParseRequest reads a search set's <query/>, applying the rules in the
// package documentation; its errors are surface.ErrBadRequest and surface.ErrNotAcceptable.
func ParseRequest(q wire.Element) (Query, error) {
	var req Query
	if q.Start.Name != Name {
		return req, surface.ErrBadRequest
	}
	var form *wire.Element
	legacy := false
	for _, c := range q.Children() {
		switch {
		case c.Start.Name == nameNick:
			if legacy || len(c.Children()) > 0 {
				return req, surface.ErrBadRequest
			}
			legacy, req.Nick = true, c.Text()
		case c.Start.Name == nameForm:
			if form != nil {
				return req, surface.ErrBadRequest
			}
			form = &c
		case c.Start.Name == nameSet:
			if req.RSM != nil {
				return req, surface.ErrBadRequest
			}
			rsm, err := wire.ParseRSM(c)
			if err != nil {
				return req, surface.ErrBadRequest
			}
			req.RSM = &rsm
		case c.Start.Name.Space == NS:
			// A legacy field this service does not offer.
			return req, surface.ErrNotAcceptable
		}
		// Anything else is an extension in another namespace: ignored.
	}
	switch {
	case form != nil && legacy:
		return req, surface.ErrBadRequest
	case form != nil:
		nick, err := parseSubmission(*form)
		if err != nil {
			return req, err
		}
		req.Nick = nick
	case legacy:
		req.Legacy = true
	default:
		return req, surface.ErrBadRequest
	}
	if len(req.Nick) > maxNickBytes {
		return req, surface.ErrNotAcceptable
	}
	return req, nil
}

// parseSubmission reads a submitted search form and returns its nick (""
// if the field is absent or empty).
func parseSubmission(x wire.Element) (string, error) {
	if typ, _ := x.AttrValue("type"); typ != "submit" {
		return "", surface.ErrBadRequest
	}
	form, err := parseForm(x)
	if err != nil {
		return "", err
	}
	if form.FormType == "" {
		return "", surface.ErrBadRequest
	}
	if form.FormType != NS {
		return "", surface.ErrNotAcceptable
	}
	nick := ""
	for _, f := range form.Fields {
		if f.Var != FieldNick {
			return "", surface.ErrNotAcceptable
		}
		switch len(f.Values) {
		case 0:
		case 1:
			nick = f.Values[0]
		default:
			return "", surface.ErrBadRequest
		}
	}
	return nick, nil
}

// parseForm reads a search form or submission: strictly, with values
// only and no multi-item part. Any refusal is surface.ErrBadRequest.
func parseForm(x wire.Element) (wire.Form, error) {
	form, err := wire.ParseForm(x, wire.FormRules{ValuesOnly: true})
	if err != nil || form.Reported != nil || form.Items != nil {
		return form, surface.ErrBadRequest
	}
	return form, nil
}

// Item is one search result: an endpoint and its display name.
type Item struct {
	JID, Nick string
}

// Result is the answer to a search set: a multi-item result form, or legacy
// items if the request was legacy, and the XEP-0059 set outside either.
type Result struct {
	Legacy bool
	Items  []Item
	Set    *wire.RSMResult
}

// TokenReader implements xmlstream.Marshaler.
func (r Result) TokenReader() xml.TokenReader {
	kids := make([]xml.TokenReader, 0, len(r.Items)+2)
	if r.Legacy {
		// One flat slice of tokens: cheaper to encode than nested readers.
		toks := make(wire.Tokens, 0, 5*len(r.Items))
		item := xml.Name{Space: NS, Local: "item"}
		for _, it := range r.Items {
			toks = append(toks, xml.StartElement{Name: item, Attr: []xml.Attr{wire.Attr("jid", it.JID)}},
				xml.StartElement{Name: nameNick})
			if it.Nick != "" {
				toks = append(toks, xml.CharData(it.Nick))
			}
			toks = append(toks, xml.EndElement{Name: nameNick}, xml.EndElement{Name: item})
		}
		kids = append(kids, toks.Reader())
	} else {
		form := wire.Form{Type: wire.FormResult, Reported: reportedColumns, Items: make([][]wire.Field, 0, len(r.Items))}
		for _, it := range r.Items {
			form.Items = append(form.Items, []wire.Field{
				{Var: FieldJID, Values: []string{it.JID}},
				{Var: FieldNick, Values: []string{it.Nick}},
			})
		}
		kids = append(kids, form.TokenReader())
	}
	if r.Set != nil {
		kids = append(kids, r.Set.TokenReader())
	}
	return wire.Elem(Name, nil, kids...)
}

// ParseResult reads the answer to a search set, as a client would. A
// result with a data form is read as a form result, anything else as
// legacy items.
func ParseResult(q wire.Element) (Result, error) {
	var r Result
	if q.Start.Name != Name {
		return r, surface.ErrBadRequest
	}
	r.Legacy = true
	for _, c := range q.Children() {
		switch {
		case c.Start.Name == nameForm:
			form, err := wire.ParseMultiResult(c)
			if err != nil {
				return r, err
			}
			r.Legacy = false
			for _, row := range form.Items {
				var it Item
				for _, f := range row {
					v := ""
					if len(f.Values) > 0 {
						v = f.Values[0]
					}
					switch f.Var {
					case FieldJID:
						it.JID = v
					case FieldNick:
						it.Nick = v
					}
				}
				r.Items = append(r.Items, it)
			}
		case c.Start.Name == xml.Name{Space: NS, Local: "item"}:
			it := Item{}
			it.JID, _ = c.AttrValue("jid")
			if nick, ok := c.Child(nameNick); ok {
				it.Nick = nick.Text()
			}
			r.Items = append(r.Items, it)
		case c.Start.Name == nameSet:
			set, err := wire.ParseRSMResultStrict(c)
			if err != nil {
				return r, err
			}
			r.Set = &set
		}
	}
	return r, nil
}
