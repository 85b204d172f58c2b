package c2s

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
)

// xmlNS is the namespace the xml: prefix is bound to.
const xmlNS = "http://www.w3.org/XML/1998/namespace"

// parseFragment decodes XML text into a token slice suitable for re-encoding
// by mellium: namespace declarations are dropped (each element carries its
// namespace in Name.Space), comments, processing instructions and directives
// are dropped, and the elements must be balanced.
func parseFragment(s string) ([]xml.Token, error) {
	d := xml.NewDecoder(strings.NewReader(s))
	var toks []xml.Token
	depth := 0
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("parse xml: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			t = t.Copy()
			attrs := t.Attr[:0]
			for _, a := range t.Attr {
				if isNSDecl(a.Name) {
					continue
				}
				attrs = append(attrs, a)
			}
			t.Attr = attrs
			toks = append(toks, t)
		case xml.EndElement:
			depth--
			toks = append(toks, t)
		case xml.CharData:
			if depth == 0 {
				if strings.TrimSpace(string(t)) != "" {
					return nil, errors.New("parse xml: text outside of an element")
				}
				continue
			}
			toks = append(toks, t.Copy())
		}
	}
	if depth != 0 {
		return nil, errors.New("parse xml: unbalanced elements")
	}
	return toks, nil
}

// isNSDecl reports whether an attribute name is a namespace declaration
// (xmlns="..." or xmlns:p="...") as the encoding/xml decoder reports it.
func isNSDecl(n xml.Name) bool {
	return (n.Space == "" && n.Local == "xmlns") || n.Space == "xmlns"
}

// sliceReader is an xml.TokenReader over a slice of tokens.
type sliceReader struct{ toks []xml.Token }

func (r *sliceReader) Token() (xml.Token, error) {
	if len(r.toks) == 0 {
		return nil, io.EOF
	}
	t := r.toks[0]
	r.toks = r.toks[1:]
	return t, nil
}

// writer serializes a token stream back to XML text. Every element whose
// namespace differs from its parent's gets an xmlns attribute (the top-level
// element always does), namespaced attributes get generated prefixes (xml:
// for the XML namespace), and empty elements are written as <a/>.
type writer struct {
	b       strings.Builder
	ns      []string // default namespace per open element
	pending bool     // a start tag is open: ">" or "/>" not yet written
}

// serializeElement serializes one whole element read from r, where r returns either
// the start element itself first (first == nil) or, when first is given, the
// tokens after it up to and including its end element.
func serializeElement(first *xml.StartElement, r xml.TokenReader) (string, error) {
	w := &writer{}
	depth := 0
	if first != nil {
		w.start(*first)
		depth = 1
	}
	for {
		// A TokenReader may return a token together with io.EOF.
		tok, err := r.Token()
		switch t := tok.(type) {
		case xml.StartElement:
			w.start(t)
			depth++
		case xml.EndElement:
			w.end(t)
			depth--
		case xml.CharData:
			w.text(t)
		}
		if depth == 0 && tok != nil {
			break
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", err
		}
	}
	if depth != 0 {
		return "", io.ErrUnexpectedEOF
	}
	return w.b.String(), nil
}

func (w *writer) closePending() {
	if w.pending {
		w.b.WriteByte('>')
		w.pending = false
	}
}

func (w *writer) start(t xml.StartElement) {
	w.closePending()
	parent := ""
	if len(w.ns) > 0 {
		parent = w.ns[len(w.ns)-1]
	}
	w.b.WriteByte('<')
	w.b.WriteString(t.Name.Local)
	if t.Name.Space != parent || len(w.ns) == 0 {
		if t.Name.Space != "" || len(w.ns) > 0 {
			w.b.WriteString(` xmlns="`)
			escapeAttr(&w.b, t.Name.Space)
			w.b.WriteByte('"')
		}
	}
	prefixes := map[string]string{}
	for _, a := range t.Attr {
		if isNSDecl(a.Name) || a.Name.Local == "" {
			continue
		}
		w.b.WriteByte(' ')
		switch a.Name.Space {
		case "":
		case xmlNS, "xml":
			w.b.WriteString("xml:")
		default:
			p, ok := prefixes[a.Name.Space]
			if !ok {
				p = fmt.Sprintf("ns%d", len(prefixes)+1)
				prefixes[a.Name.Space] = p
				fmt.Fprintf(&w.b, `xmlns:%s="`, p)
				escapeAttr(&w.b, a.Name.Space)
				w.b.WriteString(`" `)
			}
			w.b.WriteString(p + ":")
		}
		w.b.WriteString(a.Name.Local)
		w.b.WriteString(`="`)
		escapeAttr(&w.b, a.Value)
		w.b.WriteByte('"')
	}
	w.ns = append(w.ns, t.Name.Space)
	w.pending = true
}

func (w *writer) end(t xml.EndElement) {
	if len(w.ns) > 0 {
		w.ns = w.ns[:len(w.ns)-1]
	}
	if w.pending {
		w.b.WriteString("/>")
		w.pending = false
		return
	}
	w.b.WriteString("</")
	w.b.WriteString(t.Name.Local)
	w.b.WriteByte('>')
}

func (w *writer) text(t xml.CharData) {
	if len(t) == 0 {
		return
	}
	w.closePending()
	for _, r := range string(t) {
		switch r {
		case '&':
			w.b.WriteString("&amp;")
		case '<':
			w.b.WriteString("&lt;")
		case '>':
			w.b.WriteString("&gt;")
		case '\r':
			w.b.WriteString("&#xD;")
		default:
			w.b.WriteRune(r)
		}
	}
}

func escapeAttr(b *strings.Builder, s string) {
	for _, r := range s {
		switch r {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '"':
			b.WriteString("&quot;")
		case '\n':
			b.WriteString("&#xA;")
		case '\r':
			b.WriteString("&#xD;")
		case '\t':
			b.WriteString("&#x9;")
		default:
			b.WriteRune(r)
		}
	}
}
