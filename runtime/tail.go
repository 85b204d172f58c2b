package runtime

import (
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Tail keeps the last Max bytes written to it: the end of a tool process's
// standard error, for the operator's log. It is safe for concurrent use.
type Tail struct {
	Max int

	mu      sync.Mutex
	buf     []byte
	dropped bool
}

// Write implements io.Writer; it never fails.
func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.Max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
		t.dropped = true
	}
	return len(p), nil
}

// Text returns the kept bytes with redact applied (nil: none), invalid
// UTF-8 and control characters other than newline and tab replaced, and
// surrounding space trimmed. When earlier output was dropped, the partial
// first line (which may hold half a character or half a secret) is too.
func (t *Tail) Text(redact func(string) string) string {
	t.mu.Lock()
	s, dropped := string(t.buf), t.dropped
	t.mu.Unlock()
	if dropped {
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			s = s[i+1:]
		}
		s = "[earlier output dropped]\n" + s
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	if redact != nil {
		s = redact(s)
	}
	return strings.TrimSpace(strings.Map(func(r rune) rune {
		if r == utf8.RuneError || r != '\n' && r != '\t' && unicode.IsControl(r) {
			return '\uFFFD'
		}
		return r
	}, s))
}
