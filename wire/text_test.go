package wire_test

import (
	"encoding/xml"
	"strings"
	"testing"
	"unicode/utf8"

	"agentgw/wire"
)

// TestValidText: the characters XML 1.0 allows pass, the others and
// invalid UTF-8 are refused.
func TestValidText(t *testing.T) {
	for _, c := range []struct {
		s    string
		want bool
	}{
		{"", true},
		{"plain text", true},
		{"tab\tnewline\ncr\r", true},
		{"<&>\"'", true},
		{"\u007f\u0085", true}, // DEL and C1 controls are XML 1.0 characters
		{"\uD7FF\uE000\uFFFD", true},
		{"\U00010000\U0010FFFF", true},
		{"nul\x00", false},
		{"bell\a", false},
		{"\x1f", false},
		{"\uFFFE", false},
		{"\uFFFF", false},
		{"\xed\xa0\x80", false}, // an encoded surrogate is not UTF-8
		{"\xff", false},
		{"cut \xe2\x82", false},
	} {
		if got := wire.ValidText(c.s); got != c.want {
			t.Errorf("ValidText(%q) = %v, want %v", c.s, got, c.want)
		}
	}
}

// TestValidTextAgreesWithDecoder: for every character of the Basic
// Multilingual Plane and the edges of the others, ValidText says yes
// exactly when encoding/xml reads the character back as text.
func TestValidTextAgreesWithDecoder(t *testing.T) {
	check := func(r rune) {
		s := string(r)
		if !utf8.ValidRune(r) {
			return
		}
		var v struct {
			Text string `xml:",chardata"`
		}
		err := xml.NewDecoder(strings.NewReader("<a>x" + s + "</a>")).Decode(&v)
		if r == '<' || r == '&' {
			return // markup, not text
		}
		if got, want := wire.ValidText(s), err == nil; got != want {
			t.Errorf("ValidText(%U) = %v, decoder accepts: %v", r, got, want)
		}
	}
	for r := rune(0); r < 0x10000; r++ {
		check(r)
	}
	for _, r := range []rune{0x10000, 0x1FFFE, 0x1FFFF, 0x10FFFE, 0x10FFFF} {
		check(r)
	}
}

// TestValidJSONText: JSON escapes the controls XML refuses, so they pass;
// U+FFFE, U+FFFF and invalid UTF-8 do not.
func TestValidJSONText(t *testing.T) {
	for _, c := range []struct {
		s    string
		want bool
	}{
		{"", true},
		{"plain ascii", true},
		{"tab\tnul\x00bell\x07", true},
		{"é ☃ 😀 \uFFFD", true},
		{"a\uFFFEb", false},
		{"a\uFFFFb", false},
		{"bad \xff byte", false},
		{"cut \xef\xbf", false},
	} {
		if got := wire.ValidJSONText(c.s); got != c.want {
			t.Errorf("ValidJSONText(%q) = %v, want %v", c.s, got, c.want)
		}
	}
	for r := rune(0); r <= 0x10FFFF; r++ {
		if r >= 0xD800 && r <= 0xDFFF {
			continue
		}
		want := r != 0xFFFE && r != 0xFFFF
		if got := wire.JSONChar(r); got != want {
			t.Fatalf("JSONChar(%U) = %v, want %v", r, got, want)
		}
	}
}
