package task

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"

	"agentgw/internal/ident"
)

// Identifier grammar of "Invocation": 22 to 128 characters of
// [A-Za-z0-9._~-].
const (
	minIDLen = 22
	maxIDLen = 128
	// idRandomBytes is the entropy of every generated identifier: 128
	// bits, the minimum the ProtoXEP requires.
	idRandomBytes = 16
)

// Prefixes of generated identifiers. They make logs readable; the
// randomness is in the 32 hex digits that follow.
const (
	prefixTask  = "task-"
	prefixEvent = "evt-"
	prefixInput = "input-"
)

// ValidID reports whether s matches [A-Za-z0-9._~-]{22,128}, the grammar
// of request, task, event and input request IDs.
func ValidID(s string) bool {
	return ident.Unreserved(s, minIDLen, maxIDLen)
}

// NewID returns prefix followed by 32 lowercase hex digits of 128 bits read
// from r, or from crypto/rand when r is nil.
func NewID(r io.Reader, prefix string) (string, error) {
	if r == nil {
		r = rand.Reader
	}
	var b [idRandomBytes]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return "", fmt.Errorf("task: read random: %w", err)
	}
	id := prefix + hex.EncodeToString(b[:])
	if !ValidID(id) {
		return "", fmt.Errorf("task: prefix %q makes an invalid identifier", prefix)
	}
	return id, nil
}
