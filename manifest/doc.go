// Package manifest implements the agent manifest model of the XMPP Agent
// Gateway ProtoXEP: I-JSON checks, validation, RFC 8785 canonical form,
// XEP-0300 SHA-256 hashes, and version-0 tool schema rules.
//
// Parse runs the whole registration pipeline and returns a *Manifest whose
// Canonical bytes are what is hashed, stored and served. Every
// attacker-controlled dimension is bounded by a field of Limits; past one,
// or past the validation budget, the *Error is of KindTooLarge
// (<resource-constraint/>). Parsing is linear in the input, and the
// package never touches the network or the file system. Bad input yields
// an *Error with a Kind, a JSON pointer and a message that never reflects
// values. The API and the rules in full: docs/manifests.md.
package manifest
