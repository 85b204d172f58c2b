package wire

import "unicode/utf8"

// ValidText reports whether s can be carried as XML 1.0 character data or
// an attribute value: valid UTF-8 made only of characters of the Char
// production (tab, newline, carriage return, U+0020–U+D7FF,
// U+E000–U+FFFD, U+10000–U+10FFFF). It is the one check of the tree:
// encoding/xml would write any other character as U+FFFD without a word,
// so input that must arrive as sent is checked with ValidText and refused.
func ValidText(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !IsChar(r) {
			return false
		}
	}
	return true
}

// IsChar reports whether r matches the Char production of XML 1.0: the
// one character check, behind ValidText, the writer's escaper (encode.go),
// which writes any other character as U+FFFD, and the stanza reader
// (stanzaread). Surrogates cannot reach it from valid UTF-8.
func IsChar(r rune) bool {
	switch {
	case r >= 0x20:
		return r <= 0xD7FF || 0xE000 <= r && r <= 0xFFFD || 0x10000 <= r && r <= utf8.MaxRune
	default:
		return r == '\t' || r == '\n' || r == '\r'
	}
}

// JSONChar reports whether r may stand in a JSON string that XML 1.0
// carries: JSON escapes the control characters below U+0020, so of the
// characters IsChar refuses only U+FFFE and U+FFFF (and surrogates, which
// valid UTF-8 cannot hold) remain.
func JSONChar(r rune) bool {
	return r < 0x20 || IsChar(r)
}

// ValidJSONText reports whether s, written as a JSON string, can be
// carried in XML 1.0 character data: valid UTF-8 with no character that
// JSONChar refuses. It is the one JSON-in-XML check of the tree (task
// event payloads, upstream MCP text, I-JSON strings of manifests).
func ValidJSONText(s string) bool {
	for i := 0; i < len(s); {
		if s[i] < utf8.RuneSelf {
			i++ // JSON escapes what XML refuses of ASCII
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || !JSONChar(r) {
			return false
		}
		i += n
	}
	return true
}
