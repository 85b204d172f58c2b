package wire

import (
	"encoding/xml"
	"slices"
)

// NSData is the XEP-0004 Data Forms namespace.
const NSData = "jabber:x:data"

// NSValidate is the XEP-0122 Data Forms Validation namespace.
const NSValidate = "http://jabber.org/protocol/xdata-validate"

// XEP-0004 form types (§3.1).
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

// formTypeVar is the XEP-0068 field that names a form's type.
const formTypeVar = "FORM_TYPE"

// Form is an XEP-0004 data form: a form to fill, a submission, a
// cancellation or a result. A result is a single-item one (Fields) or a
// multi-item one (Reported and Items, §3.4); the search surface's results
// (XEP-0055 §3) are multi-item forms with nothing else.
//
// It is the one data-forms type of agentgw: search, ad-hoc commands,
// extended disco#info (XEP-0128) and the client all read and write it.
type Form struct {
	// Type is FormForm, FormSubmit, FormCancel or FormResult.
	Type string
	// FormType is the value of the hidden FORM_TYPE field (XEP-0068). It
	// is written as the first field, as XEP-0128 requires for extended
	// service discovery, and lifted out of Fields when a form is read.
	FormType string
	// Title and Instructions are for a human; each instruction is one
	// <instructions/> element.
	Title        string
	Instructions []string
	// Fields are the form's fields in order.
	Fields []Field
	// Reported declares the columns of a multi-item result: Var, Type,
	// Label and the rest, never values. A non-nil Reported is written
	// even when it is empty. Items are the rows, each row's fields in
	// reported order, of which only Var and Values are written.
	Reported []Field
	Items    [][]Field
}

// Field is one XEP-0004 field.
type Field struct {
	// Var names the field; only a fixed field may have none.
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

// Field returns the field named v and whether there is one.
func (f Form) Field(v string) (Field, bool) {
	for _, fl := range f.Fields {
		if fl.Var == v {
			return fl, true
		}
	}
	return Field{}, false
}

func dataName(local string) xml.Name     { return xml.Name{Space: NSData, Local: local} }
func validateName(local string) xml.Name { return xml.Name{Space: NSValidate, Local: local} }

// Tokens every form repeats, boxed once: appending a struct to a Tokens
// slice allocates each time, and a 50-row result has hundreds of them.
// Nothing writes to a token it reads, so they can be shared.
var (
	tokValueStart xml.Token = xml.StartElement{Name: xml.Name{Space: NSData, Local: "value"}}
	tokValueEnd   xml.Token = xml.EndElement{Name: xml.Name{Space: NSData, Local: "value"}}
	tokFieldEnd   xml.Token = xml.EndElement{Name: xml.Name{Space: NSData, Local: "field"}}
	tokItemStart  xml.Token = xml.StartElement{Name: xml.Name{Space: NSData, Local: "item"}}
	tokItemEnd    xml.Token = xml.EndElement{Name: xml.Name{Space: NSData, Local: "item"}}
)

// TokenReader implements xmlstream.Marshaler. It returns one flat slice of
// tokens rather than nested readers: a 50-row result encodes about 2.5
// times faster that way. Fields are written with their children in the
// order of the XEP-0004 schema (desc, required, value, option), then the
// XEP-0122 validation.
func (f Form) TokenReader() xml.TokenReader {
	toks := make(Tokens, 0, f.tokenCount())
	toks = append(toks, xml.StartElement{Name: dataName("x"), Attr: []xml.Attr{Attr("type", f.Type)}})
	if f.Title != "" {
		toks = appendText(toks, dataName("title"), f.Title)
	}
	for _, in := range f.Instructions {
		toks = appendText(toks, dataName("instructions"), in)
	}
	if f.FormType != "" {
		toks = Field{Var: formTypeVar, Type: FieldHidden, Values: []string{f.FormType}}.appendTokens(toks)
	}
	for _, fl := range f.Fields {
		toks = fl.appendTokens(toks)
	}
	if f.Reported != nil || len(f.Items) > 0 {
		toks = append(toks, xml.StartElement{Name: dataName("reported")})
		for _, fl := range f.Reported {
			fl.Values = nil
			toks = fl.appendTokens(toks)
		}
		toks = append(toks, xml.EndElement{Name: dataName("reported")})
		for _, row := range f.Items {
			toks = append(toks, tokItemStart)
			for _, fl := range row {
				toks = Field{Var: fl.Var, Values: fl.Values}.appendTokens(toks)
			}
			toks = append(toks, tokItemEnd)
		}
	}
	toks = append(toks, xml.EndElement{Name: dataName("x")})
	return toks.Reader()
}

// tokenCount is about how many tokens f encodes to, so that TokenReader
// allocates once in the common case.
func (f Form) tokenCount() int {
	n := 4 + 3*len(f.Instructions) + 2*len(f.Reported)
	count := func(fl Field) int { return 2 + 3*len(fl.Values) + 5*len(fl.Options) }
	if f.FormType != "" {
		n += 5
	}
	for _, fl := range f.Fields {
		n += count(fl)
	}
	for _, row := range f.Items {
		n += 2
		for _, fl := range row {
			n += count(fl)
		}
	}
	return n
}

// appendText appends <name>text</name>, with no character data for "".
func appendText(toks Tokens, name xml.Name, text string) Tokens {
	toks = append(toks, xml.StartElement{Name: name})
	if text != "" {
		toks = append(toks, xml.CharData(text))
	}
	return append(toks, xml.EndElement{Name: name})
}

func (fl Field) appendTokens(toks Tokens) Tokens {
	n := 0
	for _, a := range [...]string{fl.Var, fl.Type, fl.Label} {
		if a != "" {
			n++
		}
	}
	attrs := make([]xml.Attr, 0, n)
	if fl.Var != "" {
		attrs = append(attrs, Attr("var", fl.Var))
	}
	if fl.Type != "" {
		attrs = append(attrs, Attr("type", fl.Type))
	}
	if fl.Label != "" {
		attrs = append(attrs, Attr("label", fl.Label))
	}
	toks = append(toks, xml.StartElement{Name: dataName("field"), Attr: attrs})
	if fl.Desc != "" {
		toks = appendText(toks, dataName("desc"), fl.Desc)
	}
	if fl.Required {
		toks = append(toks, xml.StartElement{Name: dataName("required")}, xml.EndElement{Name: dataName("required")})
	}
	for _, v := range fl.Values {
		toks = append(toks, tokValueStart)
		if v != "" {
			toks = append(toks, xml.CharData(v))
		}
		toks = append(toks, tokValueEnd)
	}
	for _, o := range fl.Options {
		var oa []xml.Attr
		if o.Label != "" {
			oa = []xml.Attr{Attr("label", o.Label)}
		}
		toks = append(toks, xml.StartElement{Name: dataName("option"), Attr: oa})
		toks = appendText(toks, dataName("value"), o.Value)
		toks = append(toks, xml.EndElement{Name: dataName("option")})
	}
	if fl.Validate != nil {
		toks = fl.Validate.appendTokens(toks)
	}
	return append(toks, tokFieldEnd)
}

// TokenReader implements xmlstream.Marshaler.
func (v Validate) TokenReader() xml.TokenReader { return v.appendTokens(nil).Reader() }

func (v Validate) appendTokens(toks Tokens) Tokens {
	var attrs []xml.Attr
	if v.Datatype != "" {
		attrs = []xml.Attr{Attr("datatype", v.Datatype)}
	}
	toks = append(toks, xml.StartElement{Name: validateName("validate"), Attr: attrs})
	bounds := func(local, lo, hi string) Tokens {
		var a []xml.Attr
		if hi != "" {
			a = append(a, Attr("max", hi))
		}
		if lo != "" {
			a = append(a, Attr("min", lo))
		}
		return append(toks, xml.StartElement{Name: validateName(local), Attr: a}, xml.EndElement{Name: validateName(local)})
	}
	if v.Range != nil {
		toks = bounds("range", v.Range.Min, v.Range.Max)
	} else {
		toks = append(toks, xml.StartElement{Name: validateName("basic")}, xml.EndElement{Name: validateName("basic")})
	}
	if v.ListMin != "" || v.ListMax != "" {
		toks = bounds("list-range", v.ListMin, v.ListMax)
	}
	return append(toks, xml.EndElement{Name: validateName("validate")})
}

// ErrBadForm reports an element that is not a well-formed data form, or
// not one the reading surface takes.
type ErrBadForm struct{ Reason string }

func (e ErrBadForm) Error() string { return "data form: " + e.Reason }

// FormRules say what a surface tolerates beyond a strict reading; the zero
// value is strict. Strictly read, a form is an <x xmlns='jabber:x:data'/>
// of one of the four types whose children are title, instructions, fields,
// at most one <reported/> and, after it, <item/>s; text holds no markup;
// every field but a fixed one has a var, given once; a field holds only
// desc, required, value, option (each with one value) and an XEP-0122
// validate; FORM_TYPE is hidden or untyped with one value; reported fields
// have no values; and an item's fields were reported, each once.
type FormRules struct {
	// Lax reads a form from elsewhere (extended disco#info, XEP-0128)
	// as far as it goes: it skips what it does not understand, accepts
	// any type, repeated and var-less fields and markup (whose text it
	// keeps), and lifts the first FORM_TYPE that has a value.
	Lax bool
	// Extensions lets a field carry elements of other namespaces, which
	// are skipped: XEP-0004 lets other specifications extend a field.
	Extensions bool
	// ValuesOnly refuses, in fields, anything but values: all that a
	// search submission or a search result has.
	ValuesOnly bool
}

// ParseForm reads an <x xmlns='jabber:x:data'/> under rules. A FORM_TYPE
// field among the top-level fields becomes Form.FormType. Any refusal is
// an ErrBadForm.
func ParseForm(x Element, rules FormRules) (Form, error) {
	return parseForm(x, x.Children(), rules)
}

// parseForm is ParseForm over x's children, kids.
func parseForm(x Element, kids []Element, rules FormRules) (Form, error) {
	var f Form
	if x.Start.Name != dataName("x") && !rules.Lax {
		return f, ErrBadForm{"not a data form"}
	}
	f.Type, _ = x.AttrValue("type")
	switch f.Type {
	case FormForm, FormSubmit, FormCancel, FormResult:
	default:
		if !rules.Lax {
			return f, ErrBadForm{"unknown form type"}
		}
	}
	p := formParser{rules: rules}
	for _, c := range kids {
		switch c.Start.Name {
		case dataName("title"):
			s, err := p.text(c, "title")
			if err != nil {
				return f, err
			}
			f.Title = s
		case dataName("instructions"):
			s, err := p.text(c, "instructions")
			if err != nil {
				return f, err
			}
			f.Instructions = append(f.Instructions, s)
		case dataName("field"):
			fl, err := p.field(c, f.Fields)
			if err != nil {
				return f, err
			}
			if fl.Var == formTypeVar {
				switch {
				case rules.Lax && (f.FormType != "" || len(fl.Values) == 0):
					// Kept as an ordinary field.
				case rules.Lax:
					f.FormType = fl.Values[0]
					continue
				case f.FormType != "" || len(fl.Values) != 1 || (fl.Type != "" && fl.Type != FieldHidden):
					return f, ErrBadForm{"FORM_TYPE must be one hidden field with one value"}
				default:
					f.FormType = fl.Values[0]
					continue
				}
			}
			f.Fields = append(f.Fields, fl)
		case dataName("reported"):
			if err := p.reported(c, &f); err != nil {
				return f, err
			}
		case dataName("item"):
			if err := p.item(c, &f); err != nil {
				return f, err
			}
		default:
			if !rules.Lax {
				return f, ErrBadForm{"unexpected element " + c.Start.Name.Local}
			}
		}
	}
	return f, nil
}

// ParseMultiResult reads a result form that consists of one <reported/>
// followed by <item/> elements and nothing else, as XEP-0055 §3 search
// results are: strictly, with values only.
func ParseMultiResult(x Element) (Form, error) {
	kids := x.Children()
	for i, c := range kids {
		want := dataName("item")
		if i == 0 {
			want = dataName("reported")
		}
		if c.Start.Name != want {
			return Form{}, ErrBadForm{"a multi-item result holds one reported, then items"}
		}
	}
	f, err := parseForm(x, kids, FormRules{ValuesOnly: true})
	switch {
	case err != nil:
		return f, err
	case f.Type != FormResult:
		return f, ErrBadForm{"form type is not result"}
	case f.Reported == nil:
		return f, ErrBadForm{"reported must be the first child"}
	}
	return f, nil
}

// formParser holds the rules and the state that spans a form's children.
type formParser struct {
	rules       FormRules
	sawReported bool // a <reported/> was read
}

// text reads the character data of a simple element.
func (p formParser) text(c Element, what string) (string, error) {
	if !p.rules.Lax && slices.ContainsFunc(c.Inner, func(t xml.Token) bool { _, ok := t.(xml.StartElement); return ok }) {
		return "", ErrBadForm{what + " has markup"}
	}
	return c.Text(), nil
}

func (p *formParser) reported(c Element, f *Form) error {
	if p.sawReported && !p.rules.Lax {
		return ErrBadForm{"reported twice"}
	}
	if f.Items != nil && !p.rules.Lax {
		return ErrBadForm{"unexpected reported"}
	}
	p.sawReported = true
	kids := c.Children()
	if f.Reported == nil {
		f.Reported = make([]Field, 0, len(kids))
	}
	for _, rc := range kids {
		fl, err := p.field(rc, f.Reported)
		if err != nil {
			return err
		}
		if len(fl.Values) > 0 && !p.rules.Lax {
			return ErrBadForm{"reported field " + fl.Var + " has a value"}
		}
		fl.Values = nil
		f.Reported = append(f.Reported, fl)
	}
	return nil
}

func (p *formParser) item(c Element, f *Form) error {
	if !p.rules.Lax && !p.sawReported {
		return ErrBadForm{"item without reported"}
	}
	var row []Field
	for _, ic := range c.Children() {
		fl, err := p.field(ic, row)
		if err != nil {
			return err
		}
		if !p.rules.Lax && !hasVar(f.Reported, fl.Var) {
			return ErrBadForm{"item field " + fl.Var + " is not reported"}
		}
		row = append(row, Field{Var: fl.Var, Values: fl.Values})
	}
	f.Items = append(f.Items, row)
	return nil
}

// field reads one <field/>; before are the fields already read beside it,
// among which its var must be new.
func (p formParser) field(el Element, before []Field) (Field, error) {
	var fl Field
	strict := !p.rules.Lax
	if el.Start.Name != dataName("field") {
		if strict {
			return fl, ErrBadForm{"unexpected element " + el.Start.Name.Local}
		}
		return fl, nil
	}
	fl.Var, _ = el.AttrValue("var")
	fl.Type, _ = el.AttrValue("type")
	fl.Label, _ = el.AttrValue("label")
	if strict {
		if fl.Var == "" && fl.Type != FieldFixed {
			return fl, ErrBadForm{"field without var"}
		}
		if fl.Var != "" && hasVar(before, fl.Var) {
			return fl, ErrBadForm{"field " + fl.Var + " given twice"}
		}
	}
	for _, c := range el.Children() {
		if c.Start.Name != dataName("value") && p.rules.ValuesOnly && strict {
			return fl, markupError(fl.Var)
		}
		switch c.Start.Name {
		case dataName("value"):
			s, err := p.text(c, "value")
			if err != nil {
				return fl, markupError(fl.Var)
			}
			fl.Values = append(fl.Values, s)
		case dataName("desc"):
			s, err := p.text(c, "desc")
			if err != nil {
				return fl, markupError(fl.Var)
			}
			fl.Desc = s
		case dataName("required"):
			fl.Required = true
		case dataName("option"):
			o := Option{}
			o.Label, _ = c.AttrValue("label")
			v, ok := c.Child(dataName("value"))
			if strict && (!ok || len(v.Children()) > 0) {
				return fl, markupError(fl.Var)
			}
			o.Value = v.Text()
			fl.Options = append(fl.Options, o)
		case validateName("validate"):
			v, err := p.validate(c)
			if err != nil {
				return fl, err
			}
			fl.Validate = &v
		default:
			if strict && (c.Start.Name.Space == NSData || !p.rules.Extensions) {
				return fl, markupError(fl.Var)
			}
		}
	}
	return fl, nil
}

func (p formParser) validate(el Element) (Validate, error) {
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
			if !p.rules.Lax {
				return v, ErrBadForm{"unknown validation " + c.Start.Name.Local}
			}
		}
	}
	return v, nil
}

// hasVar reports whether one of fields is named v.
func hasVar(fields []Field, v string) bool {
	for _, f := range fields {
		if f.Var == v {
			return true
		}
	}
	return false
}

// markupError is the refusal of a field with children it may not have.
func markupError(v string) error { return ErrBadForm{"field " + v + " has unexpected markup"} }
