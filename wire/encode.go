package wire

import (
	"encoding/xml"
	"errors"
	"io"
	"slices"
	"strconv"
	"unicode/utf8"
)

// This file is the one XML writer and the one escaper of the module: every
// stanza, payload or golden file we write as bytes ourselves goes through
// AppendXML (or Marshal, its canonical mode), and every attribute value or
// text we escape goes through AppendAttrValue or AppendText. EscapedLen
// (size.go) is an upper bound of what the escaper writes.

// ErrUnbalanced is returned by AppendXML and Marshal for a token stream whose
// end elements do not match its start elements.
var ErrUnbalanced = errors.New("wire: unbalanced elements")

// AppendXML appends the XML of the token stream r to dst, compactly: a
// namespace is declared only where it changes, other attribute namespaces
// get prefixes ns1, ns2, …, declarations among the attributes are
// re-derived from the names, empty elements self-close, and what XML does
// not allow is written U+FFFD: nothing that is not XML is ever written.
// The rules in full: docs/gateway.md, "Writing XML".
//
// A top element without a Space inherits the default namespace of where
// the bytes are written. r is read to io.EOF; an end element that does not
// match its start is ErrUnbalanced.
func AppendXML(dst []byte, r xml.TokenReader) ([]byte, error) {
	// Stanzas nest a few levels: the stack starts on the goroutine's
	// stack, not the heap.
	var open [8]xml.Name
	w := xmlWriter{b: dst, open: open[:0]}
	err := w.copy(r)
	return w.b, err
}

// xmlWriter holds the state of one AppendXML or Marshal.
type xmlWriter struct {
	b       []byte
	sorted  bool       // Marshal: attributes sorted, prefixes by sorted namespace
	open    []xml.Name // open elements, innermost last
	pending bool       // a start tag is open: ">" or "/>" not yet written
	spaces  []string   // scratch: attribute namespaces of one element
	attrs   []qattr    // scratch (sorted mode): one element's attributes
}

// qattr is an attribute with its qualified name as written.
type qattr struct {
	name  string
	value string
}

func (w *xmlWriter) copy(r xml.TokenReader) error {
	for {
		tok, err := r.Token()
		if tok != nil {
			if terr := w.token(tok); terr != nil {
				return terr
			}
		}
		if err == io.EOF {
			if len(w.open) != 0 {
				return ErrUnbalanced
			}
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func (w *xmlWriter) token(tok xml.Token) error {
	switch t := tok.(type) {
	case xml.StartElement:
		w.closePending()
		w.start(t)
	case xml.EndElement:
		n := len(w.open)
		if n == 0 || w.open[n-1].Local != t.Name.Local {
			return ErrUnbalanced
		}
		w.open = w.open[:n-1]
		if w.pending {
			w.b = append(w.b, "/>"...)
			w.pending = false
			return nil
		}
		w.b = append(w.b, "</"...)
		w.b = append(w.b, t.Name.Local...)
		w.b = append(w.b, '>')
	case xml.CharData:
		if len(t) == 0 {
			return nil
		}
		w.closePending()
		w.b = AppendText(w.b, t)
	}
	// Comments, processing instructions and directives are not written.
	return nil
}

func (w *xmlWriter) closePending() {
	if w.pending {
		w.b = append(w.b, '>')
		w.pending = false
	}
}

// IsNSDecl reports whether n is a namespace declaration as encoding/xml's
// decoder reports one (xmlns="…" or xmlns:p="…").
func IsNSDecl(n xml.Name) bool {
	return n.Space == "" && n.Local == "xmlns" || n.Space == "xmlns"
}

func (w *xmlWriter) start(t xml.StartElement) {
	parent, top := "", len(w.open) == 0
	if !top {
		parent = w.open[len(w.open)-1].Space
	}
	w.b = append(w.b, '<')
	w.b = append(w.b, t.Name.Local...)
	declare := t.Name.Space != parent
	// The namespaces of the attributes, in order of appearance or, for
	// Marshal, sorted: ns1 is the first.
	w.spaces = w.spaces[:0]
	for _, a := range t.Attr {
		if sp := a.Name.Space; sp != "" && !IsNSDecl(a.Name) && sp != xmlNS && sp != "xml" && !slices.Contains(w.spaces, sp) {
			w.spaces = append(w.spaces, sp)
		}
	}
	if w.sorted {
		w.startSorted(t, declare)
	} else {
		if declare {
			w.attr("xmlns", "", t.Name.Space)
		}
		declared := 0
		for _, a := range t.Attr {
			if IsNSDecl(a.Name) || a.Name.Local == "" {
				continue
			}
			switch sp := a.Name.Space; sp {
			case "":
				w.attr("", a.Name.Local, a.Value)
			case xmlNS, "xml":
				w.attr("xml", a.Name.Local, a.Value)
			default:
				i := slices.Index(w.spaces, sp)
				p := nsPrefix(i)
				if i >= declared {
					// Declared before its first use, in order.
					w.attr("xmlns", p, sp)
					declared = i + 1
				}
				w.attr(p, a.Name.Local, a.Value)
			}
		}
	}
	w.open = append(w.open, t.Name)
	w.pending = true
}

// startSorted writes the attributes of t sorted by qualified name, the
// declarations among them (Marshal's canonical form).
func (w *xmlWriter) startSorted(t xml.StartElement, declare bool) {
	slices.Sort(w.spaces)
	w.attrs = w.attrs[:0]
	if declare {
		w.attrs = append(w.attrs, qattr{"xmlns", t.Name.Space})
	}
	for i, sp := range w.spaces {
		w.attrs = append(w.attrs, qattr{"xmlns:" + nsPrefix(i), sp})
	}
	for _, a := range t.Attr {
		if IsNSDecl(a.Name) || a.Name.Local == "" {
			continue
		}
		switch sp := a.Name.Space; sp {
		case "":
			w.attrs = append(w.attrs, qattr{a.Name.Local, a.Value})
		case xmlNS, "xml":
			w.attrs = append(w.attrs, qattr{"xml:" + a.Name.Local, a.Value})
		default:
			w.attrs = append(w.attrs, qattr{nsPrefix(slices.Index(w.spaces, sp)) + ":" + a.Name.Local, a.Value})
		}
	}
	slices.SortStableFunc(w.attrs, func(a, b qattr) int {
		switch {
		case a.name < b.name:
			return -1
		case a.name > b.name:
			return 1
		}
		return 0
	})
	for _, a := range w.attrs {
		w.attr("", a.name, a.value)
	}
}

// nsPrefix is the generated prefix of the i-th attribute namespace: ns1, ….
func nsPrefix(i int) string {
	switch i {
	case 0:
		return "ns1"
	case 1:
		return "ns2"
	}
	return "ns" + strconv.Itoa(i+1)
}

// attr writes ` prefix:local='value'` (no colon without a prefix).
func (w *xmlWriter) attr(prefix, local, value string) {
	w.b = append(w.b, ' ')
	if prefix != "" {
		w.b = append(w.b, prefix...)
		if local != "" {
			w.b = append(w.b, ':')
		}
	}
	w.b = append(w.b, local...)
	w.b = append(w.b, '=', '\'')
	w.b = AppendAttrValue(w.b, value)
	w.b = append(w.b, '\'')
}

// AppendAttrValue appends s escaped as an attribute value, for either
// quote: & < > ' " as &amp; &lt; &gt; &apos; &quot;, tab, newline and
// carriage return as &#x9; &#xA; &#xD; (so that attribute value
// normalization does not turn them into spaces), and a character XML does
// not allow as U+FFFD.
func AppendAttrValue[T ~string | ~[]byte](dst []byte, s T) []byte {
	return appendEscaped(dst, s, true)
}

// AppendText appends s escaped as character data: & < > as &amp; &lt;
// &gt;, carriage return as &#xD; (a parser would make it a newline), and a
// character XML does not allow as U+FFFD.
func AppendText[T ~string | ~[]byte](dst []byte, s T) []byte {
	return appendEscaped(dst, s, false)
}

// appendEscaped is the one escaper. Runs of bytes that need nothing are
// appended whole.
func appendEscaped[T ~string | ~[]byte](dst []byte, s T, attr bool) []byte {
	last := 0
	for i := 0; i < len(s); {
		c := s[i]
		var esc string
		width := 1
		if c < utf8.RuneSelf {
			switch c {
			case '&':
				esc = "&amp;"
			case '<':
				esc = "&lt;"
			case '>':
				esc = "&gt;"
			case '\r':
				esc = "&#xD;"
			case '\'':
				if attr {
					esc = "&apos;"
				}
			case '"':
				if attr {
					esc = "&quot;"
				}
			case '\t':
				if attr {
					esc = "&#x9;"
				}
			case '\n':
				if attr {
					esc = "&#xA;"
				}
			default:
				if c < 0x20 {
					esc = "\uFFFD"
				}
			}
		} else {
			var r rune
			r, width = decodeRune(s[i:])
			if !IsChar(r) || r == utf8.RuneError && width == 1 {
				esc = "\uFFFD"
			}
		}
		if esc == "" {
			i += width
			continue
		}
		dst = append(dst, s[last:i]...)
		dst = append(dst, esc...)
		i += width
		last = i
	}
	return append(dst, s[last:]...)
}

// decodeRune decodes the first rune of s, without converting s.
func decodeRune[T ~string | ~[]byte](s T) (rune, int) {
	var buf [utf8.UTFMax]byte
	n := copy(buf[:], s[:min(len(s), utf8.UTFMax)])
	return utf8.DecodeRune(buf[:n])
}
