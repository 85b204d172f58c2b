// Package manifest implements the agent manifest model of the XMPP Agent
// Gateway ProtoXEP: I-JSON checks, validation, RFC 8785 canonical form,
// XEP-0300 SHA-256 hashes, and version-0 tool schema rules.
//
// Parse runs the whole registration pipeline of the ProtoXEP sections
// "Manifest Model" and "Registration Flow" and returns a *Manifest whose
// Canonical bytes are what is hashed, stored and served. Canonicalize and
// CompileSchema expose the I-JSON/RFC 8785 step and the version-0 schema
// step for later use on invocation arguments. ToolNode, ParseToolNode,
// ToolsNode and ParseToolsNode implement the discovery node names of
// "Protocol Namespaces and Identifiers".
//
// # Limits
//
// Every attacker-controlled dimension is bounded ("JSON Payload Encoding",
// "Security Considerations"). Exceeding a limit yields an *Error of kind
// KindTooLarge, which maps to <resource-constraint/>. Unset fields of
// Limits take these defaults:
//
//	Field             Default     Bounds
//	MaxManifestBytes  1 MiB       raw manifest (or document given to Canonicalize)
//	MaxSchemaBytes    256 KiB     canonical bytes of each tool schema; raw bytes of each external $ref document
//	MaxDepth          64          nesting depth of objects and arrays (the root is depth 1)
//	MaxTools          1024        tools per manifest (the normative schema allows 4096)
//	MaxStringBytes    64 KiB      each decoded string or member name, in UTF-8 bytes
//	MaxMembers        4096        members per object, elements per array
//	MaxNumberBytes    128         source text of each JSON number
//	MaxPatternBytes   1024        each regular expression ("pattern" values, "patternProperties" keys)
//	MaxSchemaNodes    8192        schema objects (root and subschemas) per tool schema
//	MaxRefLoads       8           external documents loaded per schema compilation (only with AllowedRefs)
//	MaxPatternCost    2000        estimated RE2 instructions per regular expression, counted repeats expanded
//	MaxPatterns       256         regular expressions per tool schema
//	MaxRegexCost      50000       summed pattern cost per manifest (per schema for CompileSchema)
//	MaxApplicators    4096        subschemas applied in place to one value ($ref, allOf, anyOf, oneOf, not, if/then/else, dependentSchemas), $ref targets counted at each use
//	MaxUniqueItems    512         items of an instance array under "uniqueItems":true
//	MaxValidationSteps 262144     work budget of one validation (see below)
//
// The length limits of the normative manifest schema (for example 4096
// characters for agent.description) also apply and are reported as
// KindTooLarge. Timeouts in the extension object are capped at 2^31-1
// seconds. The time to parse is linear in the input under these bounds:
// patterns are parsed (never compiled) and their compiled size estimated
// before anything is compiled. With Options.KeepValidators, Parse keeps
// each tool's compiled schemas (Tool.InputValidator, Tool.OutputValidator)
// so that a pinned schema is compiled once for as long as its manifest is
// held.
//
// Validation runs under a step budget: Validator.Validate first counts the
// work of validating an instance, one step per subschema applied to each
// value (every branch of anyOf and oneOf included), one per enum value,
// one per pair of items under uniqueItems, and cost×bytes/64 per regular
// expression match, and refuses the instance with KindTooLarge (wrapping
// ErrValidationBudget) past MaxValidationSteps, or when an array under
// uniqueItems is longer than MaxUniqueItems. The refusal says nothing about
// the instance. Handlers answer <resource-constraint/>.
//
// # I-JSON and XML
//
// Before anything is hashed, documents must be a single JSON value with
// unique member names (compared after unescaping), valid UTF-8 without
// lone surrogates (raw or \u-escaped), and numbers that are finite IEEE-754
// doubles (1e400 fails; 1e-400 underflows to 0 and is accepted, as in RFC
// 8785 implementations). U+FFFE and U+FFFF are rejected because the
// canonical bytes must be legal XML 1.0 character data; other control
// characters are escaped by RFC 8785 and so are allowed in general, but the
// agent and tool text fields that the gateway renders into XML (names,
// titles, descriptions, vendor, tags, permissions) must consist of XML 1.0
// characters.
//
// # Version-0 tool schemas
//
//   - Dialect: JSON Schema 2020-12 only. An absent $schema selects it; any
//     other $schema, including draft-07, 2019-09, the unversioned
//     "https://json-schema.org/schema" and the http:// spelling of 2020-12,
//     fails with an "unsupported dialect" error. The check applies to
//     every $schema in the document, not only the root, and to every
//     subschema a $ref reaches: the validator embeds the older
//     meta-schemas, and a reference into one of them also fails.
//   - Input schemas must declare "type":"object" at the root. Output
//     schemas must be JSON objects but need not declare a type.
//   - Keywords: the walk accepts the keywords of the core, applicator,
//     unevaluated, validation, meta-data, format-annotation and content
//     vocabularies, plus "definitions" and "dependencies", which the
//     2020-12 meta-schema still defines and the validator implements. The
//     ProtoXEP lets unknown annotations be ignored but requires unsupported
//     assertions to fail, and a keyword's name does not say which it is, so
//     every other keyword fails closed (including 2019-09's $recursiveRef
//     and additionalItems, and OpenAPI's nullable). Members whose name
//     starts with "x-" are treated as annotations and ignored, contents
//     included. The walk follows schema-valued keywords only; the values of
//     const, enum, default and examples are data and are never inspected.
//   - $vocabulary: an entry declared true must be one of the seven
//     vocabularies above; format-assertion is not supported. Entries
//     declared false are ignored.
//   - format is annotation-only, and content keywords are annotations.
//   - Regular expressions use Go's RE2 syntax, not ECMA-262: matching is
//     linear-time, but lookaround and backreferences are rejected, and a
//     few classes differ (\s is ASCII-only in RE2; RE2 also accepts some
//     syntax ECMA-262 lacks, such as (?i) flags). Each pattern is at most
//     MaxPatternBytes.
//   - References: same-document $ref, $anchor, $dynamicRef and
//     $dynamicAnchor work. A JSON-pointer fragment must descend through
//     schema keywords only, so data cannot be compiled as a schema. An
//     external reference fails unless its URL lies under an
//     Options.AllowedRefs prefix and Options.LoadRef supplies it; this
//     package never touches the network or the file system (the
//     validator's default loader would read file: URLs).
//
// # Errors
//
// Bad input yields an *Error with a Kind, a JSON pointer and a message.
// Messages never reflect string values, numbers or loaded content. Member
// names appear in pointers, and keywords, vocabulary URIs and $ref targets
// in messages, only when they are at most 64 bytes of
// [A-Za-z0-9._~$:@+-/#%]; anything else is shown as "*".
package manifest
