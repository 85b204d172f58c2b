package manifest

import (
	"strconv"
	"strings"
)

// Kind classifies an *Error so that a protocol handler can choose the
// stanza error condition without inspecting the message.
type Kind int

// Error kinds. The zero Kind is deliberately not one of them.
const (
	// KindMalformed means the input is not JSON or violates the I-JSON
	// prerequisites of RFC 8785 (duplicate member names, lone surrogates,
	// invalid UTF-8, numbers outside the IEEE-754 double range). Handlers
	// answer <bad-request/> or <not-acceptable/>.
	KindMalformed Kind = iota + 1
	// KindInvalid means the JSON is well formed but violates the manifest
	// schema, an application rule, or the version-0 tool schema rules.
	// Handlers answer <not-acceptable/>.
	KindInvalid
	// KindTooLarge means a documented Limits bound was exceeded. Handlers
	// answer <resource-constraint/>.
	KindTooLarge
	// KindDomain means agent.jid lies outside the component domain given
	// in Options.Domain.
	KindDomain
)

// String returns a short lowercase name for the kind.
func (k Kind) String() string {
	switch k {
	case KindMalformed:
		return "malformed"
	case KindInvalid:
		return "invalid"
	case KindTooLarge:
		return "too-large"
	case KindDomain:
		return "domain"
	}
	return "unknown"
}

// Error is the only error type returned by this package for bad input.
//
// Its message is safe to return to the peer that sent the input: it names a
// location and a rule but never reflects string values, numbers, or the
// contents of any file. Member names appear in Path, and a few identifiers
// (keywords, vocabulary URIs, $ref targets) in Msg, only when they are short
// and drawn from a conservative ASCII set; anything else is shown as "*".
type Error struct {
	// Kind classifies the failure.
	Kind Kind
	// Path is an RFC 6901 JSON pointer to the offending value, for example
	// "/tools/1/name" or "/tools/0/inputSchema/properties/city/pattern".
	// It is empty when the failure concerns the whole document.
	Path string
	// Msg describes the violated rule.
	Msg string

	// err is the underlying library error, if any. It may quote input, so
	// Error never includes it; Unwrap exposes it for local debugging only.
	err error
}

// Error returns "manifest: PATH: MSG", or "manifest: MSG" without a path.
func (e *Error) Error() string {
	if e.Path == "" {
		return "manifest: " + e.Msg
	}
	return "manifest: " + e.Path + ": " + e.Msg
}

// Unwrap returns the underlying library error, if any. Its text may quote
// the rejected input and must not be sent to peers.
func (e *Error) Unwrap() error { return e.err }

func newError(k Kind, path, msg string) *Error {
	return &Error{Kind: k, Path: path, Msg: msg}
}

func wrapError(k Kind, path, msg string, err error) *Error {
	return &Error{Kind: k, Path: path, Msg: msg, err: err}
}

// maxSafeIdent bounds identifiers that may be echoed in error messages.
const maxSafeIdent = 64

// isSafeIdent reports whether s may be echoed in a diagnostic: short, ASCII,
// and free of quotes, spaces, markup and control characters.
func isSafeIdent(s string) bool {
	if s == "" || len(s) > maxSafeIdent {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("._~$:@+-/#%", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// safeIdent returns s quoted when it is safe to echo, and "*" otherwise.
func safeIdent(s string) string {
	if isSafeIdent(s) {
		return strconv.Quote(s)
	}
	return "*"
}

// pointerSegment renders one JSON pointer segment, replacing member names
// that are unsafe to echo with "*".
func pointerSegment(s string) string {
	if !isSafeIdent(s) {
		return "*"
	}
	s = strings.ReplaceAll(s, "~", "~0")
	return strings.ReplaceAll(s, "/", "~1")
}

// pointer builds a sanitized JSON pointer from raw segments.
func pointer(segs ...string) string {
	var b strings.Builder
	for _, s := range segs {
		b.WriteByte('/')
		b.WriteString(pointerSegment(s))
	}
	return b.String()
}

// joinPointer appends the sanitized segments to an already sanitized base.
func joinPointer(base string, segs ...string) string {
	return base + pointer(segs...)
}
