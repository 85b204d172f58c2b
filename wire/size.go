package wire

import (
	"encoding/xml"
	"errors"
	"io"
	"unicode/utf8"
)

// MaxStanzaBytes bounds the wire size of every stanza the gateway sends,
// measured after XML escaping (see BufferStanza). It fits under the 512
// KiB that Prosody's and ejabberd's defaults allow on component and s2s
// streams, with room for what a server adds when it routes a stanza on; a
// bigger stanza makes Prosody close the component stream, losing every
// reply in flight. The servers' settings: docs/gateway.md, "The stanza
// size bound".
const MaxStanzaBytes = 480 << 10

// quoteEscapeLen is what the longest escape any of these servers writes
// for " and ' takes (Prosody re-serializes them as &quot; and &apos;);
// Go writes &#34; and &#39;. Counting the longer form keeps a stanza under
// the limit after a server re-serializes it for the next hop.
const quoteEscapeLen = 6

// ErrStanzaTooLarge is returned when a stanza to send exceeds
// MaxStanzaBytes.
var ErrStanzaTooLarge = errors.New("wire: stanza exceeds the wire size limit")

// EscapedLen is the length of s, text held as a string or as bytes, once
// written as XML character data or an attribute value: & < > as &amp; &lt;
// &gt;, " and ' at 6 bytes, and tab, newline and carriage return as Go's
// character references (&#x9; etc.). A byte that is not a character XML
// allows, or not UTF-8, counts as the 3 bytes of U+FFFD that the one
// escaper (AppendAttrValue, AppendText) and encoding/xml write instead. It
// is an upper bound of what either writes for s.
func EscapedLen[T ~string | ~[]byte](s T) int {
	n := len(s)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '&':
			n += 4
		case c == '<', c == '>':
			n += 3
		case c == '"', c == '\'':
			n += quoteEscapeLen - 1
		case c == '\t', c == '\n', c == '\r':
			n += 4
		case c < 0x20:
			n += 2
		case c >= utf8.RuneSelf:
			// A valid rune that XML does not allow (U+FFFE, U+FFFF) is
			// as long as U+FFFD; only a byte that is not UTF-8 grows.
			r, w := decodeRune(s[i:])
			if r == utf8.RuneError && w == 1 {
				n += 2
			}
			i += w - 1
		}
	}
	return n
}

// TokenSize is an upper bound of the bytes token takes on the wire: names,
// a namespace declaration for every namespaced element or attribute, and
// escaped values.
func TokenSize(tok xml.Token) int {
	switch t := tok.(type) {
	case xml.StartElement:
		n := 2 + nameSize(t.Name) // <name>
		for _, a := range t.Attr {
			n += 4 + nameSize(a.Name) + EscapedLen(a.Value) // ' name="v"'
		}
		return n
	case xml.EndElement:
		return 3 + len(t.Name.Local) + 16 // </prefix:name>
	case xml.CharData:
		return EscapedLen(t)
	case xml.Comment:
		return 7 + len(t)
	case xml.ProcInst:
		return 5 + len(t.Target) + len(t.Inst)
	case xml.Directive:
		return 3 + len(t)
	}
	return 0
}

// nameSize bounds a qualified name plus, when namespaced, its declaration
// (' xmlns:prefix="space"', a prefix of at most 16 bytes).
func nameSize(n xml.Name) int {
	if n.Space == "" {
		return len(n.Local)
	}
	return len(n.Local) + 17 + 26 + EscapedLen(n.Space)
}

// BufferStanza reads r to its end, copying its tokens, and returns them
// with their wire size (the sum of TokenSize). It stops with
// ErrStanzaTooLarge, without reading the rest, once the size passes max.
func BufferStanza(r xml.TokenReader, max int) (Tokens, int, error) {
	var toks Tokens
	size := 0
	for {
		tok, err := r.Token()
		if tok != nil {
			size += TokenSize(tok)
			if size > max {
				return nil, size, ErrStanzaTooLarge
			}
			toks = append(toks, xml.CopyToken(tok))
		}
		if err == io.EOF {
			return toks, size, nil
		}
		if err != nil {
			return nil, size, err
		}
	}
}
