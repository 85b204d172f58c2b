package wire

import "encoding/xml"

// NSData is the XEP-0004 Data Forms namespace.
const NSData = "jabber:x:data"

// Field is one XEP-0004 field. An empty Type is omitted (text-single).
type Field struct {
	Var, Type, Label string
	Values           []string
}

// Form is an XEP-0004 form. In a result form with FormType set, the hidden
// FORM_TYPE field is written first, as XEP-0128 requires for extended
// service discovery.
type Form struct {
	Type     string // "result", "form", "submit"
	FormType string
	Title    string
	Fields   []Field
}

// TokenReader implements xmlstream.Marshaler.
func (f Form) TokenReader() xml.TokenReader {
	name := func(l string) xml.Name { return xml.Name{Space: NSData, Local: l} }
	kids := []xml.TokenReader{}
	if f.Title != "" {
		kids = append(kids, TextElem(name("title"), f.Title))
	}
	fields := f.Fields
	if f.FormType != "" {
		fields = append([]Field{{Var: "FORM_TYPE", Type: "hidden", Values: []string{f.FormType}}}, fields...)
	}
	for _, fl := range fields {
		kids = append(kids, fl.tokenReader())
	}
	return Elem(name("x"), []xml.Attr{Attr("type", f.Type)}, kids...)
}

func (fl Field) tokenReader() xml.TokenReader {
	attrs := []xml.Attr{Attr("var", fl.Var)}
	if fl.Type != "" {
		attrs = append(attrs, Attr("type", fl.Type))
	}
	if fl.Label != "" {
		attrs = append(attrs, Attr("label", fl.Label))
	}
	vals := make([]xml.TokenReader, 0, len(fl.Values))
	for _, v := range fl.Values {
		vals = append(vals, TextElem(xml.Name{Space: NSData, Local: "value"}, v))
	}
	return Elem(xml.Name{Space: NSData, Local: "field"}, attrs, vals...)
}
