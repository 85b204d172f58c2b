package manifest

// Default limits. Each one bounds an attacker-controlled dimension of a
// manifest or tool schema, as required by the "JSON Payload Encoding" and
// "Security Considerations" sections of the ProtoXEP. The package
// documentation has the table; keep the two in step.
const (
	// DefaultMaxManifestBytes bounds the raw manifest document (1 MiB).
	DefaultMaxManifestBytes = 1 << 20
	// DefaultMaxSchemaBytes bounds the canonical form of one tool schema
	// (256 KiB).
	DefaultMaxSchemaBytes = 256 << 10
	// DefaultMaxDepth bounds the nesting depth of objects and arrays.
	DefaultMaxDepth = 64
	// DefaultMaxTools bounds the number of tools in one manifest. The
	// normative manifest schema allows at most 4096.
	DefaultMaxTools = 1024
	// DefaultMaxStringBytes bounds one decoded string or member name
	// (64 KiB).
	DefaultMaxStringBytes = 64 << 10
	// DefaultMaxMembers bounds the members of one object or the elements
	// of one array.
	DefaultMaxMembers = 4096
	// DefaultMaxNumberBytes bounds the source text of one JSON number. It
	// keeps the arbitrary-precision arithmetic of schema evaluation cheap.
	DefaultMaxNumberBytes = 128
	// DefaultMaxPatternBytes bounds the source of one regular expression
	// (a "pattern" value or a "patternProperties" key).
	DefaultMaxPatternBytes = 1024
	// DefaultMaxSchemaNodes bounds the number of subschemas in one tool
	// schema, a measure of compilation and evaluation complexity.
	DefaultMaxSchemaNodes = 8192
	// DefaultMaxRefLoads bounds the number of external documents that one
	// schema compilation may load through an allowlisted $ref.
	DefaultMaxRefLoads = 8
	// DefaultMaxPatternCost bounds what one regular expression compiles
	// to: the estimated number of RE2 instructions, with every counted
	// repeat expanded (`[^a]{1000}` costs about 1000). It bounds the time
	// to compile a pattern and, per byte, to match it.
	DefaultMaxPatternCost = 2000
	// DefaultMaxPatterns bounds the regular expressions ("pattern" values
	// and "patternProperties" keys) in one tool schema.
	DefaultMaxPatterns = 256
	// DefaultMaxRegexCost bounds the summed DefaultMaxPatternCost-style
	// cost of every regular expression in one manifest (all its tool
	// schemas together), or in one schema given to CompileSchema. At
	// this value compiling them all takes tens of milliseconds.
	DefaultMaxRegexCost = 50000
	// DefaultMaxApplicators bounds the subschemas that apply in place to
	// one instance value: a schema, plus everything its $ref, $dynamicRef,
	// allOf, anyOf, oneOf, not, if, then, else and dependentSchemas reach
	// without descending into the instance, counted with repetition. A
	// chain of anyOf over $refs that doubles at every level is refused at
	// registration by this bound.
	DefaultMaxApplicators = 4096
	// DefaultMaxUniqueItems bounds the length of an instance array that
	// "uniqueItems":true applies to; checking it is quadratic.
	DefaultMaxUniqueItems = 512
	// DefaultMaxValidationSteps is the budget of one validation of an
	// instance (arguments, a result's structuredContent or an input
	// response) against a tool schema. Before the validator runs, the
	// work is counted: one step per subschema applied to each instance
	// value (every anyOf and oneOf branch counted), one per enum value
	// compared, one per pair of items compared for uniqueItems, and
	// (cost × bytes)/64 per regular expression match. Past the budget the
	// value is refused with KindTooLarge (<resource-constraint/>) and the
	// validator never runs. The validator takes about 2 µs a step on a
	// loaded 2-core machine, so a validation takes at most about half a
	// second.
	DefaultMaxValidationSteps = 1 << 18
)

// maxTimeoutSeconds is the largest accepted defaultTimeoutSeconds or
// maximumTimeoutSeconds. The manifest schema only sets a minimum; without
// an upper bound "1e300" would be a valid JSON Schema integer that no Go
// int can hold. It is a fixed protocol sanity bound, not a tunable limit.
const maxTimeoutSeconds = 1<<31 - 1

// Limits bounds the resources a manifest, tool schema, or JSON document may
// consume. A field that is zero or negative takes its default, so the zero
// Limits is DefaultLimits(). Exceeding any limit yields an *Error of kind
// KindTooLarge.
type Limits struct {
	// MaxManifestBytes bounds the raw document given to Parse or
	// Canonicalize.
	MaxManifestBytes int
	// MaxSchemaBytes bounds the canonical bytes of each tool schema, and
	// the raw bytes of each externally loaded schema document.
	MaxSchemaBytes int
	// MaxDepth bounds the nesting depth of objects and arrays; the root
	// value is at depth 1.
	MaxDepth int
	// MaxTools bounds the length of the "tools" array.
	MaxTools int
	// MaxStringBytes bounds each decoded string and member name, in UTF-8
	// bytes.
	MaxStringBytes int
	// MaxMembers bounds the members of each object and the elements of
	// each array.
	MaxMembers int
	// MaxNumberBytes bounds the source text of each JSON number.
	MaxNumberBytes int
	// MaxPatternBytes bounds the source of each regular expression in a
	// tool schema.
	MaxPatternBytes int
	// MaxSchemaNodes bounds the number of schema objects (the root and
	// every subschema) in one tool schema.
	MaxSchemaNodes int
	// MaxRefLoads bounds the external documents loaded while compiling one
	// schema. It only matters when Options.AllowedRefs is not empty.
	MaxRefLoads int
	// MaxPatternCost bounds the estimated compiled size of each regular
	// expression, in RE2 instructions.
	MaxPatternCost int
	// MaxPatterns bounds the regular expressions in one tool schema.
	MaxPatterns int
	// MaxRegexCost bounds the summed cost of the regular expressions of
	// one manifest (or of one schema given to CompileSchema).
	MaxRegexCost int
	// MaxApplicators bounds the subschemas applied in place to one
	// instance value, $ref targets counted at each use.
	MaxApplicators int
	// MaxUniqueItems bounds the instance arrays that uniqueItems applies
	// to.
	MaxUniqueItems int
	// MaxValidationSteps is the work budget of one validation.
	MaxValidationSteps int
}

// DefaultLimits returns the limits used when Options.Limits is zero.
func DefaultLimits() Limits {
	return Limits{
		MaxManifestBytes: DefaultMaxManifestBytes,
		MaxSchemaBytes:   DefaultMaxSchemaBytes,
		MaxDepth:         DefaultMaxDepth,
		MaxTools:         DefaultMaxTools,
		MaxStringBytes:   DefaultMaxStringBytes,
		MaxMembers:       DefaultMaxMembers,
		MaxNumberBytes:   DefaultMaxNumberBytes,
		MaxPatternBytes:  DefaultMaxPatternBytes,
		MaxSchemaNodes:   DefaultMaxSchemaNodes,
		MaxRefLoads:      DefaultMaxRefLoads,

		MaxPatternCost:     DefaultMaxPatternCost,
		MaxPatterns:        DefaultMaxPatterns,
		MaxRegexCost:       DefaultMaxRegexCost,
		MaxApplicators:     DefaultMaxApplicators,
		MaxUniqueItems:     DefaultMaxUniqueItems,
		MaxValidationSteps: DefaultMaxValidationSteps,
	}
}

// withDefaults returns l with every unset (zero or negative) field replaced
// by its default, so that a partially filled Limits never disables a bound.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	fill := func(v *int, def int) {
		if *v <= 0 {
			*v = def
		}
	}
	fill(&l.MaxManifestBytes, d.MaxManifestBytes)
	fill(&l.MaxSchemaBytes, d.MaxSchemaBytes)
	fill(&l.MaxDepth, d.MaxDepth)
	fill(&l.MaxTools, d.MaxTools)
	fill(&l.MaxStringBytes, d.MaxStringBytes)
	fill(&l.MaxMembers, d.MaxMembers)
	fill(&l.MaxNumberBytes, d.MaxNumberBytes)
	fill(&l.MaxPatternBytes, d.MaxPatternBytes)
	fill(&l.MaxSchemaNodes, d.MaxSchemaNodes)
	fill(&l.MaxRefLoads, d.MaxRefLoads)
	fill(&l.MaxPatternCost, d.MaxPatternCost)
	fill(&l.MaxPatterns, d.MaxPatterns)
	fill(&l.MaxRegexCost, d.MaxRegexCost)
	fill(&l.MaxApplicators, d.MaxApplicators)
	fill(&l.MaxUniqueItems, d.MaxUniqueItems)
	fill(&l.MaxValidationSteps, d.MaxValidationSteps)
	return l
}
