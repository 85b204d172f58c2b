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
	return l
}
