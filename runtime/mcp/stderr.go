package mcp

import (
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// stderrTail is how much of the end of a stdio server's standard error is
// kept for the operator.
const stderrTail = 4 << 10

// tail keeps the last max bytes of a stdio server's standard error.
type tail struct {
	mu      sync.Mutex
	max     int
	buf     []byte
	dropped bool
	secrets *secrets
}

// Write implements io.Writer.
func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
		t.dropped = true
	}
	return len(p), nil
}

// text returns the kept bytes with credentials redacted and control
// characters replaced.
func (t *tail) text() string {
	t.mu.Lock()
	s, dropped := string(t.buf), t.dropped
	t.mu.Unlock()
	if dropped {
		// The cut may have split a character or a credential.
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			s = s[i+1:]
		}
		s = "[earlier output dropped]\n" + s
	}
	s = t.secrets.redact(strings.ToValidUTF8(s, "\uFFFD"))
	return strings.TrimSpace(strings.Map(func(r rune) rune {
		if r == utf8.RuneError || r != '\n' && r != '\t' && unicode.IsControl(r) {
			return '\uFFFD'
		}
		return r
	}, s))
}
