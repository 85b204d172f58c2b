package manifest

import (
	"errors"
	"fmt"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// ErrValidationBudget is wrapped by the *Error (of kind KindTooLarge) that
// Validator.Validate returns when an instance would cost more than
// Limits.MaxValidationSteps, or is an array longer than
// Limits.MaxUniqueItems under uniqueItems. The value was not validated.
var ErrValidationBudget = errors.New("manifest: validation budget exceeded")

// Validator is a compiled tool schema whose validations run under the
// work budget of Limits.MaxValidationSteps. It is safe for concurrent use
// and is meant to be compiled once per pinned schema and reused.
type Validator struct {
	root *jsonschema.Schema
	// dynamic lists, per $dynamicAnchor name, every subschema that
	// declares it: the budget charges a $dynamicRef for all of them,
	// since the one that applies depends on the instance's path.
	dynamic map[string][]*jsonschema.Schema
	lim     Limits
}

// Schema returns the underlying compiled schema. Validating with it
// directly bypasses the budget.
func (v *Validator) Schema() *jsonschema.Schema { return v.root }

// Validate validates a decoded JSON instance (as jsonschema.UnmarshalJSON
// returns it). The work is counted first, without running any assertion;
// past the budget it returns an *Error of kind KindTooLarge that wraps
// ErrValidationBudget and says nothing about the instance. Otherwise it
// returns the validator's verdict: nil, or a *jsonschema.ValidationError,
// whose text quotes the instance and must never be sent to a peer.
func (v *Validator) Validate(doc any) error {
	if err := v.charge(doc); err != nil {
		return err
	}
	return v.root.Validate(doc)
}

// charge counts the work of validating doc and fails past the budget.
func (v *Validator) charge(doc any) error {
	c := &coster{v: v, max: v.lim.MaxValidationSteps}
	c.eval(v.root, doc)
	switch {
	case c.uniqueTooLong:
		return wrapError(KindTooLarge, "", fmt.Sprintf(
			"an array under uniqueItems has more than %d items", v.lim.MaxUniqueItems), ErrValidationBudget)
	case c.steps > c.max:
		return wrapError(KindTooLarge, "", fmt.Sprintf(
			"validation would take more than %d steps", c.max), ErrValidationBudget)
	}
	return nil
}

// coster walks schema and instance together the way the validator does,
// but applies every branch (anyOf and oneOf never short-circuit here, and
// every additionalProperties, patternProperties and items schema is
// charged for every member), so that its count is an upper bound.
type coster struct {
	v          *Validator
	steps, max int
	// active holds the subschemas being applied, innermost last; those
	// from base on apply to the current instance value. Meeting one of
	// them again is a reference cycle, which the validator reports as an
	// error without going round, so the count stops there too.
	active        []*jsonschema.Schema
	base          int
	uniqueTooLong bool
}

func (c *coster) over() bool { return c.steps > c.max || c.uniqueTooLong }

// child charges s for a member or item of the current instance value.
func (c *coster) child(s *jsonschema.Schema, v any) {
	if s == nil || c.over() {
		return
	}
	base := c.base
	c.base = len(c.active)
	c.eval(s, v)
	c.base = base
}

func (c *coster) eval(s *jsonschema.Schema, v any) {
	if s == nil || c.over() {
		return
	}
	c.steps++
	if s.Bool != nil {
		return
	}
	for _, a := range c.active[c.base:] {
		if a == s {
			return
		}
	}
	c.active = append(c.active, s)
	defer func() { c.active = c.active[:len(c.active)-1] }()

	// In place.
	inPlace := func(ss ...*jsonschema.Schema) {
		for _, sub := range ss {
			c.eval(sub, v)
		}
	}
	inPlace(s.Ref, s.Not, s.If, s.Then, s.Else)
	if s.DynamicRef != nil {
		inPlace(s.DynamicRef.Ref)
		inPlace(c.v.dynamic[s.DynamicRef.Anchor]...)
	}
	inPlace(s.AllOf...)
	inPlace(s.AnyOf...)
	inPlace(s.OneOf...)
	if s.Enum != nil {
		c.steps += len(s.Enum.Values)
	}

	switch v := v.(type) {
	case map[string]any:
		for name, sub := range s.DependentSchemas {
			if _, ok := v[name]; ok {
				inPlace(sub)
			}
		}
		for name, dep := range s.Dependencies {
			if sub, ok := dep.(*jsonschema.Schema); ok {
				if _, present := v[name]; present {
					inPlace(sub)
				}
			}
		}
		for name, mv := range v {
			if c.over() {
				return
			}
			c.child(s.Properties[name], mv)
			for re, sub := range s.PatternProperties {
				c.steps += matchCost(re, len(name))
				c.child(sub, mv)
			}
			if sub, ok := s.AdditionalProperties.(*jsonschema.Schema); ok {
				c.child(sub, mv)
			}
			c.child(s.UnevaluatedProperties, mv)
			c.child(s.PropertyNames, name)
		}
	case []any:
		if s.UniqueItems {
			if len(v) > c.v.lim.MaxUniqueItems {
				c.uniqueTooLong = true
				return
			}
			c.steps += len(v) * (len(v) - 1) / 2
		}
		for i, item := range v {
			if c.over() {
				return
			}
			if i < len(s.PrefixItems) {
				c.child(s.PrefixItems[i], item)
			}
			c.child(s.Items2020, item)
			c.child(s.Contains, item)
			c.child(s.UnevaluatedItems, item)
			switch items := s.Items.(type) {
			case *jsonschema.Schema:
				c.child(items, item)
			case []*jsonschema.Schema:
				if i < len(items) {
					c.child(items[i], item)
				}
			}
			if sub, ok := s.AdditionalItems.(*jsonschema.Schema); ok {
				c.child(sub, item)
			}
		}
	case string:
		if s.Pattern != nil {
			c.steps += matchCost(s.Pattern, len(v))
		}
	}
}

// matchCost is the budget charge of matching re against n bytes: RE2
// matching is linear, about cost × n elementary steps, which are far
// cheaper than one subschema application.
func matchCost(re jsonschema.Regexp, n int) int {
	cost := DefaultMaxPatternCost
	if b, ok := re.(*boundedRegexp); ok {
		cost = b.cost
	}
	return 1 + cost*n/64
}

// inPlaceChildren calls f with every subschema that applies to the same
// instance value as s.
func inPlaceChildren(s *jsonschema.Schema, dynamic map[string][]*jsonschema.Schema, f func(*jsonschema.Schema)) {
	for _, sub := range []*jsonschema.Schema{s.Ref, s.Not, s.If, s.Then, s.Else} {
		if sub != nil {
			f(sub)
		}
	}
	if s.DynamicRef != nil {
		if s.DynamicRef.Ref != nil {
			f(s.DynamicRef.Ref)
		}
		for _, sub := range dynamic[s.DynamicRef.Anchor] {
			f(sub)
		}
	}
	for _, list := range [][]*jsonschema.Schema{s.AllOf, s.AnyOf, s.OneOf} {
		for _, sub := range list {
			f(sub)
		}
	}
	for _, sub := range s.DependentSchemas {
		f(sub)
	}
	for _, dep := range s.Dependencies {
		if sub, ok := dep.(*jsonschema.Schema); ok {
			f(sub)
		}
	}
}

// checkApplicators enforces Limits.MaxApplicators over every subschema of
// a compiled graph: the in-place expansion of s is 1 plus that of each
// in-place child, $ref targets counted at each use. A reference cycle
// back into a subschema being expanded counts nothing more (the
// validator stops there with an error). nodes is every subschema of the
// graph, as checkCompiled collected them.
func checkApplicators(nodes []*jsonschema.Schema, dynamic map[string][]*jsonschema.Schema, lim Limits, path string) error {
	const visiting = -1
	limit := lim.MaxApplicators
	memo := make(map[*jsonschema.Schema]int, len(nodes))
	var expand func(s *jsonschema.Schema) int
	expand = func(s *jsonschema.Schema) int {
		switch n, ok := memo[s]; {
		case ok && n == visiting:
			return 0
		case ok:
			return n
		}
		memo[s] = visiting
		n := 1
		inPlaceChildren(s, dynamic, func(sub *jsonschema.Schema) {
			if n <= limit {
				n = min(n+expand(sub), limit+1)
			}
		})
		memo[s] = n
		return n
	}
	for _, s := range nodes {
		if expand(s) > limit {
			return newError(KindTooLarge, path, fmt.Sprintf(
				"more than %d subschemas apply in place to one value (through $ref, allOf, anyOf, oneOf and the like)", limit))
		}
	}
	return nil
}
