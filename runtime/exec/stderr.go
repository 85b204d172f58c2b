package exec

import (
	"encoding/json"
	"sort"
	"strings"
)

// Redaction bounds: strings shorter than minSecretLen are too common to
// redact meaningfully; at most maxSecrets strings are tracked per
// execution.
const (
	minSecretLen = 6
	maxSecrets   = 256
	redacted     = "[redacted]"
)

// redactor replaces every secret with a marker, for runtime.Tail.Text.
func redactor(secrets []string) func(string) string {
	return func(s string) string {
		for _, sec := range secrets {
			s = strings.ReplaceAll(s, sec, redacted)
		}
		return s
	}
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

// envValues returns the configured env values (Options.Env) long enough to
// redact, longest first: an operator may configure a credential there, and
// a tool may print its environment to standard error. PATH and LANG are
// not secrets.
func envValues(env []string) []string {
	var out []string
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if k != "PATH" && k != "LANG" && len(v) >= minSecretLen && len(out) < maxSecrets {
			out = append(out, v)
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}
