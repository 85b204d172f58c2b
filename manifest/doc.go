// Package manifest implements the agent manifest model of the XMPP Agent
// Gateway ProtoXEP: I-JSON checks, validation, RFC 8785 canonical form,
// XEP-0300 SHA-256 hashes, and version-0 tool schema rules.
//
// Parse runs the whole registration pipeline of the ProtoXEP sections
// "Manifest Model" and "Registration Flow" and returns a *Manifest whose
// Canonical bytes are what is hashed, stored and served. Canonicalize and
// CompileSchema expose the I-JSON/RFC 8785 step and the version-0 schema
// step for invocation arguments. ToolNode, ParseToolNode, ToolsNode and
// ParseToolsNode implement the discovery node names of "Protocol
// Namespaces and Identifiers".
//
// Every attacker-controlled dimension is bounded by a field of Limits
// (defaults in docs/manifests.md and docs/limits.md); past one, and past
// the step budget of Validator.Validate, the *Error is of KindTooLarge,
// which maps to <resource-constraint/>. Parsing is linear in the input:
// patterns are parsed and their cost estimated before any is compiled.
//
// Documents must be I-JSON whose canonical bytes XML 1.0 can carry
// (wire.ValidJSONText); text the gateway renders into XML must be XML 1.0
// characters. Tool schemas are JSON Schema 2020-12 only, with RE2
// patterns; unknown keywords fail closed, and external $refs load only
// through Options.LoadRef under Options.AllowedRefs: the package never
// touches the network or the file system.
//
// Bad input yields an *Error with a Kind, a JSON pointer and a message
// that never reflects values. The full rules: docs/manifests.md.
package manifest
