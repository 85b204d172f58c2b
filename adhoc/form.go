package adhoc

import (
	"encoding/xml"
	"errors"

	"agentgw/wire"
)

// XEP-0004 form types.
const (
	FormForm   = "form"
	FormSubmit = "submit"
	FormCancel = "cancel"
	FormResult = "result"
)

// XEP-0004 field types (§3.3).
const (
	FieldBoolean    = "boolean"
	FieldFixed      = "fixed"
	FieldHidden     = "hidden"
	FieldJIDMulti   = "jid-multi"
	FieldJIDSingle  = "jid-single"
	FieldListMulti  = "list-multi"
	FieldListSingle = "list-single"
	FieldTextMulti  = "text-multi"
	FieldTextSingle = "text-single"
)

// Form is an XEP-0004 data form: a form to fill, a submission, or a
// result, which may be a single-item one (Fields) or a multi-item one
// (Reported and Items, §3.4).
type Form struct {
	// Type is FormForm, FormSubmit, FormCancel or FormResult.
	Type string
	// Title and Instructions are for a human; each instruction is one
	// <instructions/> element.
	Title        string
	Instructions []string
	// Fields are the form's fields in order.
	Fields []Field
	// Reported declares the columns of a multi-item result; Items are its
	// rows, each row's fields in reported order.
	Reported []Field
	Items    [][]Field
}

// Field is one XEP-0004 field.
type Field struct {
	// Var names the field; a fixed field may have none.
	Var string
	// Type is one of the Field* constants; empty means text-single in a
	// form and is how submitted fields usually arrive.
	Type string
	// Label is the field's caption.
	Label string
	// Desc is the field's <desc/>: a natural-language description.
	Desc string
	// Required is <required/>.
	Required bool
	// Values are the field's <value/> elements.
	Values []string
	// Options are the choices of a list field.
	Options []Option
	// Validate is the XEP-0122 validation of the field, if any.
	Validate *Validate
}

// Option is one <option/> of a list field.
type Option struct {
	Label, Value string
}

// Validate is an XEP-0122 <validate/> element: a datatype and either the
// basic method (no Range) or the range method. ListMin and ListMax, when
// set, add <list-range/> for a list-multi field.
type Validate struct {
	// Datatype is an XEP-0122 datatype such as "xs:integer"; empty means
	// xs:string.
	Datatype string
	// Range is the range method; nil means the basic method.
	Range *Range
	// ListMin and ListMax bound how many values a list-multi takes; empty
	// leaves that side open.
	ListMin, ListMax string
}

// Range is the XEP-0122 range method: inclusive bounds in the datatype's
// lexical space; an empty bound is open.
type Range struct {
	Min, Max string
}

func dataName(local string) xml.Name     { return xml.Name{Space: NSData, Local: local} }
func validateName(local string) xml.Name { return xml.Name{Space: NSValidate, Local: local} }

// TokenReader implements xmlstream.Marshaler.
func (f Form) TokenReader() xml.TokenReader {
	kids := []xml.TokenReader{}
	if f.Title != "" {
		kids = append(kids, wire.TextElem(dataName("title"), f.Title))
	}
	for _, in := range f.Instructions {
		kids = append(kids, wire.TextElem(dataName("instructions"), in))
	}
	for _, fl := range f.Fields {
		kids = append(kids, fl.TokenReader())
	}
	if len(f.Reported) > 0 {
		cols := make([]xml.TokenReader, 0, len(f.Reported))
		for _, fl := range f.Reported {
			fl.Values = nil
			cols = append(cols, fl.TokenReader())
		}
		kids = append(kids, wire.Elem(dataName("reported"), nil, cols...))
		for _, it := range f.Items {
			row := make([]xml.TokenReader, 0, len(it))
			for _, fl := range it {
				row = append(row, Field{Var: fl.Var, Values: fl.Values}.TokenReader())
			}
			kids = append(kids, wire.Elem(dataName("item"), nil, row...))
		}
	}
	return wire.Elem(dataName("x"), []xml.Attr{wire.Attr("type", f.Type)}, kids...)
}

// TokenReader implements xmlstream.Marshaler. Children are written in the
// order of the XEP-0004 schema (desc, required, value, option), then the
// XEP-0122 validation.
func (fl Field) TokenReader() xml.TokenReader {
	var attrs []xml.Attr
	if fl.Label != "" {
		attrs = append(attrs, wire.Attr("label", fl.Label))
	}
	if fl.Type != "" {
		attrs = append(attrs, wire.Attr("type", fl.Type))
	}
	if fl.Var != "" {
		attrs = append(attrs, wire.Attr("var", fl.Var))
	}
	var kids []xml.TokenReader
	if fl.Desc != "" {
		kids = append(kids, wire.TextElem(dataName("desc"), fl.Desc))
	}
	if fl.Required {
		kids = append(kids, wire.Elem(dataName("required"), nil))
	}
	for _, v := range fl.Values {
		kids = append(kids, wire.TextElem(dataName("value"), v))
	}
	for _, o := range fl.Options {
		var oa []xml.Attr
		if o.Label != "" {
			oa = []xml.Attr{wire.Attr("label", o.Label)}
		}
		kids = append(kids, wire.Elem(dataName("option"), oa, wire.TextElem(dataName("value"), o.Value)))
	}
	if fl.Validate != nil {
		kids = append(kids, fl.Validate.TokenReader())
	}
	return wire.Elem(dataName("field"), attrs, kids...)
}

// TokenReader implements xmlstream.Marshaler.
func (v Validate) TokenReader() xml.TokenReader {
	var attrs []xml.Attr
	if v.Datatype != "" {
		attrs = []xml.Attr{wire.Attr("datatype", v.Datatype)}
	}
	var method xml.TokenReader
	if v.Range != nil {
		var ra []xml.Attr
		if v.Range.Max != "" {
			ra = append(ra, wire.Attr("max", v.Range.Max))
		}
		if v.Range.Min != "" {
			ra = append(ra, wire.Attr("min", v.Range.Min))
		}
		method = wire.Elem(validateName("range"), ra)
	} else {
		method = wire.Elem(validateName("basic"), nil)
	}
	var lr xml.TokenReader
	if v.ListMin != "" || v.ListMax != "" {
		var la []xml.Attr
		if v.ListMax != "" {
			la = append(la, wire.Attr("max", v.ListMax))
		}
		if v.ListMin != "" {
			la = append(la, wire.Attr("min", v.ListMin))
		}
		lr = wire.Elem(validateName("list-range"), la)
	}
	return wire.Elem(validateName("validate"), attrs, method, lr)
}

// ErrBadForm reports an element that is not a well-formed data form.
var ErrBadForm = errors.New("adhoc: malformed data form")

// ParseForm reads an <x xmlns='jabber:x:data'/>. It refuses a form
// without a type, an unknown child, markup inside text, and a field
// declared twice.
func ParseForm(x wire.Element) (Form, error) {
	var f Form
	if x.Start.Name != dataName("x") {
		return f, ErrBadForm
	}
	f.Type, _ = x.AttrValue("type")
	switch f.Type {
	case FormForm, FormSubmit, FormCancel, FormResult:
	default:
		return f, ErrBadForm
	}
	seen := map[string]bool{}
	for _, c := range x.Children() {
		switch c.Start.Name {
		case dataName("title"):
			if len(c.Children()) > 0 {
				return f, ErrBadForm
			}
			f.Title = c.Text()
		case dataName("instructions"):
			if len(c.Children()) > 0 {
				return f, ErrBadForm
			}
			f.Instructions = append(f.Instructions, c.Text())
		case dataName("field"):
			fl, err := parseField(c)
			if err != nil {
				return f, err
			}
			if fl.Var != "" {
				if seen[fl.Var] {
					return f, ErrBadForm
				}
				seen[fl.Var] = true
			}
			f.Fields = append(f.Fields, fl)
		case dataName("reported"):
			for _, rc := range c.Children() {
				fl, err := parseField(rc)
				if err != nil {
					return f, err
				}
				f.Reported = append(f.Reported, fl)
			}
		case dataName("item"):
			var row []Field
			for _, ic := range c.Children() {
				fl, err := parseField(ic)
				if err != nil {
					return f, err
				}
				row = append(row, fl)
			}
			f.Items = append(f.Items, row)
		default:
			return f, ErrBadForm
		}
	}
	return f, nil
}

func parseField(el wire.Element) (Field, error) {
	var fl Field
	if el.Start.Name != dataName("field") {
		return fl, ErrBadForm
	}
	fl.Var, _ = el.AttrValue("var")
	fl.Type, _ = el.AttrValue("type")
	fl.Label, _ = el.AttrValue("label")
	for _, c := range el.Children() {
		switch c.Start.Name {
		case dataName("desc"):
			if len(c.Children()) > 0 {
				return fl, ErrBadForm
			}
			fl.Desc = c.Text()
		case dataName("required"):
			fl.Required = true
		case dataName("value"):
			if len(c.Children()) > 0 {
				return fl, ErrBadForm
			}
			fl.Values = append(fl.Values, c.Text())
		case dataName("option"):
			o := Option{}
			o.Label, _ = c.AttrValue("label")
			v, ok := c.Child(dataName("value"))
			if !ok || len(v.Children()) > 0 {
				return fl, ErrBadForm
			}
			o.Value = v.Text()
			fl.Options = append(fl.Options, o)
		case validateName("validate"):
			v, err := parseValidate(c)
			if err != nil {
				return fl, err
			}
			fl.Validate = &v
		default:
			// XEP-0004 lets other namespaces extend a field; anything
			// else in jabber:x:data is malformed.
			if c.Start.Name.Space == NSData {
				return fl, ErrBadForm
			}
		}
	}
	return fl, nil
}

func parseValidate(el wire.Element) (Validate, error) {
	var v Validate
	v.Datatype, _ = el.AttrValue("datatype")
	for _, c := range el.Children() {
		switch c.Start.Name {
		case validateName("basic"):
		case validateName("range"):
			r := Range{}
			r.Min, _ = c.AttrValue("min")
			r.Max, _ = c.AttrValue("max")
			v.Range = &r
		case validateName("list-range"):
			v.ListMin, _ = c.AttrValue("min")
			v.ListMax, _ = c.AttrValue("max")
		default:
			return v, ErrBadForm
		}
	}
	return v, nil
}

// Field returns the field named v and whether there is one.
func (f Form) Field(v string) (Field, bool) {
	for _, fl := range f.Fields {
		if fl.Var == v {
			return fl, true
		}
	}
	return Field{}, false
}
