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
// string and then each field of the request (namespace, caller, target,
// request ID, tool, version, hash, arguments, deadline, extension count)
// as a 4-byte big-endian length followed by its bytes, so the encoding is
// injective. The field list: docs/task-package.md, "Replay fingerprint".
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
