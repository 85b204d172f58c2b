package task

import (
	"crypto/sha256"
	"encoding/binary"
)

// fingerprintDomain separates replay fingerprints from every other SHA-256
// use; bump its version if the field list below ever changes.
const fingerprintDomain = "agentgw invoke fingerprint v1"

// FingerprintInput lists every input of the admission replay fingerprint
// ("Invocation": "authenticated caller bare JID, target bare JID, protocol
// namespace, request ID, tool, API version, manifest hash, canonical
// arguments, deadline, and every security-relevant extension").
type FingerprintInput struct {
	// Caller is the authenticated sender's normalized bare JID.
	Caller string
	// Target is the endpoint's normalized bare JID.
	Target string
	// RequestID is the caller's request-id.
	RequestID string
	// Tool is the exact tool name.
	Tool string
	// APIVersion is the exact API version.
	APIVersion string
	// ManifestHash is the SHA-256 manifest digest (algorithm sha-256 is
	// the only one version 0 admits).
	ManifestHash [32]byte
	// Arguments is the RFC 8785 form of the arguments.
	Arguments []byte
	// Deadline is the caller's deadline, or the zero Instant. Deadlines
	// that denote the same instant (2026-07-27T21:15:00+02:00 and
	// 2026-07-27T19:15:00.000Z) are the same input.
	Deadline Instant
}

// Fingerprint computes the replay fingerprint: SHA-256 over the domain
// string and then, in this order, each field as a 4-byte big-endian length
// followed by its bytes:
//
//  1. the namespace "urn:xmpp:agent-task:0"
//  2. the caller bare JID
//  3. the target bare JID
//  4. the request ID
//  5. the tool name
//  6. the API version
//  7. the hash algorithm "sha-256"
//  8. the 32 raw bytes of the manifest digest
//  9. the arguments media type "application/json"
//  10. the canonical arguments
//  11. "1" and the canonical deadline (Instant.String) if a deadline was
//     given, else "0" and nothing
//  12. the number of security-relevant extensions, as 4 bytes: always 0.
//     Version 0 defines none, and ParseInvoke rejects every unknown child
//     element, so no extension can change the meaning of a request
//     without changing this count.
//
// Length prefixes make the encoding injective: no two different inputs
// produce the same byte string.
func Fingerprint(in FingerprintInput) [32]byte {
	h := sha256.New()
	h.Write([]byte(fingerprintDomain))
	field := func(b []byte) {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	field([]byte(NS))
	field([]byte(in.Caller))
	field([]byte(in.Target))
	field([]byte(in.RequestID))
	field([]byte(in.Tool))
	field([]byte(in.APIVersion))
	field([]byte(hashAlgo))
	field(in.ManifestHash[:])
	field([]byte(MediaTypeJSON))
	field(in.Arguments)
	if in.Deadline.IsZero() {
		field([]byte("0"))
	} else {
		field([]byte("1"))
		field([]byte(in.Deadline.String()))
	}
	var zero [4]byte
	h.Write(zero[:])
	var out [32]byte
	h.Sum(out[:0])
	return out
}
