package exec

import (
	"encoding/json"
	"sort"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Redaction bounds: strings shorter than minSecretLen are too common to
// redact meaningfully; at most maxSecrets strings are tracked per
// execution.
const (
	minSecretLen = 6
	maxSecrets   = 256
	redacted     = "[redacted]"
)

// tail keeps the last max bytes written to it.
type tail struct {
	mu      sync.Mutex
	max     int
	buf     []byte
	dropped bool
}

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

// text returns the kept bytes, redacted and made printable.
func (t *tail) text(secrets []string) string {
	t.mu.Lock()
	s := string(t.buf)
	dropped := t.dropped
	t.mu.Unlock()
	if dropped {
		// The cut may have split a character or a secret.
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			s = s[i+1:]
		}
		s = "[earlier output dropped]\n" + s
	}
	for _, sec := range secrets {
		s = strings.ReplaceAll(s, sec, redacted)
	}
	return strings.Map(func(r rune) rune {
		if r == utf8.RuneError || r != '\n' && r != '\t' && unicode.IsControl(r) {
			return '\uFFFD'
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
}

// secretStrings returns the string values (not member names) of a JSON
// document that are long enough to redact, longest first, so that a
// secret containing another is replaced whole.
func secretStrings(doc json.RawMessage, into []string) []string {
	var v any
	if json.Unmarshal(doc, &v) != nil {
		return into
	}
	var walk func(any)
	walk = func(v any) {
		if len(into) >= maxSecrets {
			return
		}
		switch v := v.(type) {
		case string:
			if len(v) >= minSecretLen {
				into = append(into, v)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		case map[string]any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(v)
	sort.Slice(into, func(i, j int) bool { return len(into[i]) > len(into[j]) })
	return into
}
