package adhoc

import "agentgw/wire"

// The XEP-0004 data-forms types are wire's, the one implementation the
// gateway has; adhoc names them so that its mapping reads in its own
// terms.
type (
	// Form is wire.Form.
	Form = wire.Form
	// Field is wire.Field.
	Field = wire.Field
	// Option is wire.Option.
	Option = wire.Option
	// Validate is wire.Validate (XEP-0122).
	Validate = wire.Validate
	// Range is wire.Range (XEP-0122).
	Range = wire.Range
)

// XEP-0004 form types.
const (
	FormForm   = wire.FormForm
	FormSubmit = wire.FormSubmit
	FormCancel = wire.FormCancel
	FormResult = wire.FormResult
)

// XEP-0004 field types (§3.3).
const (
	FieldBoolean    = wire.FieldBoolean
	FieldFixed      = wire.FieldFixed
	FieldHidden     = wire.FieldHidden
	FieldJIDMulti   = wire.FieldJIDMulti
	FieldJIDSingle  = wire.FieldJIDSingle
	FieldListMulti  = wire.FieldListMulti
	FieldListSingle = wire.FieldListSingle
	FieldTextMulti  = wire.FieldTextMulti
	FieldTextSingle = wire.FieldTextSingle
)

// formRules are what a command form may hold beyond a strict XEP-0004
// reading: fields extended by other namespaces, which are skipped.
var formRules = wire.FormRules{Extensions: true}

// ParseForm reads an <x xmlns='jabber:x:data'/> as a command takes it:
// strictly, but tolerating field extensions of other namespaces. A
// refusal is a wire.ErrBadForm.
func ParseForm(x wire.Element) (Form, error) { return wire.ParseForm(x, formRules) }
