package wire

import (
	"encoding/xml"
	"slices"
)

// MultiResult is an XEP-0004 multi-item result form (§3.4, "Multiple Items
// in Form Results"), which mellium's form package cannot express: a
// <reported/> element that declares the columns, then one <item/> per row,
// each row's fields in the reported order.
//
// It holds nothing else, no title, instructions or top-level fields, so
// that it is usable where a protocol requires a result form whose only
// children are <reported/> and <item/> (the agent gateway's XEP-0055 search
// results).
type MultiResult struct {
	// Reported declares the columns: Var, and optionally Type and Label.
	// Values are not written.
	Reported []Field
	// Items are the rows. Each field's Var must be one of Reported's; Type
	// and Label are not written (the reported field carries them).
	Items []FormItem
}

// FormItem is one <item/> of a MultiResult.
type FormItem struct {
	Fields []Field
}

// ErrBadMultiResult reports an element that is not a well-formed
// MultiResult.
type ErrBadMultiResult struct{ Reason string }

func (e ErrBadMultiResult) Error() string { return "multi-item form: " + e.Reason }

// TokenReader implements xmlstream.Marshaler. It returns one flat slice of
// tokens rather than nested readers: a 50-row form encodes about 2.5 times
// faster that way.
func (m MultiResult) TokenReader() xml.TokenReader {
	name := func(l string) xml.Name { return xml.Name{Space: NSData, Local: l} }
	n := 4 + 2*len(m.Reported)
	for _, it := range m.Items {
		n += 2
		for _, f := range it.Fields {
			n += 2 + 3*len(f.Values)
		}
	}
	toks := make(Tokens, 0, n)
	toks = append(toks,
		xml.StartElement{Name: name("x"), Attr: []xml.Attr{Attr("type", "result")}},
		xml.StartElement{Name: name("reported")})
	for _, f := range m.Reported {
		attrs := []xml.Attr{Attr("var", f.Var)}
		if f.Type != "" {
			attrs = append(attrs, Attr("type", f.Type))
		}
		if f.Label != "" {
			attrs = append(attrs, Attr("label", f.Label))
		}
		toks = append(toks, xml.StartElement{Name: name("field"), Attr: attrs}, xml.EndElement{Name: name("field")})
	}
	toks = append(toks, xml.EndElement{Name: name("reported")})
	for _, it := range m.Items {
		toks = append(toks, xml.StartElement{Name: name("item")})
		for _, f := range it.Fields {
			toks = append(toks, xml.StartElement{Name: name("field"), Attr: []xml.Attr{Attr("var", f.Var)}})
			for _, v := range f.Values {
				toks = append(toks, xml.StartElement{Name: name("value")})
				if v != "" {
					toks = append(toks, xml.CharData(v))
				}
				toks = append(toks, xml.EndElement{Name: name("value")})
			}
			toks = append(toks, xml.EndElement{Name: name("field")})
		}
		toks = append(toks, xml.EndElement{Name: name("item")})
	}
	toks = append(toks, xml.EndElement{Name: name("x")})
	return toks.Reader()
}

// ParseMultiResult reads an <x xmlns='jabber:x:data' type='result'/> that
// consists of one <reported/> followed by <item/> elements. It rejects any
// other child, a field without a var or declared twice, an item field that
// was not reported, values in <reported/>, and markup inside a value.
func ParseMultiResult(x Element) (MultiResult, error) {
	var m MultiResult
	if x.Start.Name != (xml.Name{Space: NSData, Local: "x"}) {
		return m, ErrBadMultiResult{"not a data form"}
	}
	if typ, _ := x.AttrValue("type"); typ != "result" {
		return m, ErrBadMultiResult{"form type is not result"}
	}
	kids := x.Children()
	if len(kids) == 0 || kids[0].Start.Name != (xml.Name{Space: NSData, Local: "reported"}) {
		return m, ErrBadMultiResult{"reported must be the first child"}
	}
	var vars []string
	for _, c := range kids[0].Children() {
		f, err := parseFormField(c)
		switch {
		case err != nil:
			return m, err
		case len(f.Values) > 0:
			return m, ErrBadMultiResult{"reported field " + f.Var + " has a value"}
		case slices.Contains(vars, f.Var):
			return m, ErrBadMultiResult{"field " + f.Var + " reported twice"}
		}
		vars = append(vars, f.Var)
		m.Reported = append(m.Reported, f)
	}
	for _, c := range kids[1:] {
		if c.Start.Name != (xml.Name{Space: NSData, Local: "item"}) {
			return m, ErrBadMultiResult{"unexpected element " + c.Start.Name.Local}
		}
		var it FormItem
		for _, fc := range c.Children() {
			f, err := parseFormField(fc)
			if err != nil {
				return m, err
			}
			if !slices.Contains(vars, f.Var) {
				return m, ErrBadMultiResult{"item field " + f.Var + " is not reported"}
			}
			if slices.ContainsFunc(it.Fields, func(g Field) bool { return g.Var == f.Var }) {
				return m, ErrBadMultiResult{"item has field " + f.Var + " twice"}
			}
			it.Fields = append(it.Fields, Field{Var: f.Var, Values: f.Values})
		}
		m.Items = append(m.Items, it)
	}
	return m, nil
}

// parseFormField reads a <field/> with a var and only <value/> children.
func parseFormField(el Element) (Field, error) {
	var f Field
	if el.Start.Name != (xml.Name{Space: NSData, Local: "field"}) {
		return f, ErrBadMultiResult{"unexpected element " + el.Start.Name.Local}
	}
	f.Var, _ = el.AttrValue("var")
	f.Type, _ = el.AttrValue("type")
	f.Label, _ = el.AttrValue("label")
	if f.Var == "" {
		return f, ErrBadMultiResult{"field without var"}
	}
	for _, v := range el.Children() {
		if v.Start.Name != (xml.Name{Space: NSData, Local: "value"}) || len(v.Children()) > 0 {
			return f, ErrBadMultiResult{"field " + f.Var + " has unexpected markup"}
		}
		f.Values = append(f.Values, v.Text())
	}
	return f, nil
}
