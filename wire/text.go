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
		if !isChar(r) {
			return false
		}
	}
	return true
}

// isChar reports whether r matches the Char production of XML 1.0: the
// one character check, behind ValidText and the writer's escaper
// (encode.go), which writes any other character as U+FFFD. Surrogates
// cannot reach it: valid UTF-8 does not encode them.
func isChar(r rune) bool {
	switch {
	case r >= 0x20:
		return r <= 0xD7FF || 0xE000 <= r && r <= 0xFFFD || 0x10000 <= r && r <= utf8.MaxRune
	default:
		return r == '\t' || r == '\n' || r == '\r'
	}
}
