package wire

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"

	"mellium.im/xmlstream"
)

// Attr returns an attribute without a namespace.
func Attr(local, value string) xml.Attr {
	return xml.Attr{Name: xml.Name{Local: local}, Value: value}
}

// Elem returns the token stream of one element named name with attrs and the
// concatenated children. Nil children are skipped.
func Elem(name xml.Name, attrs []xml.Attr, children ...xml.TokenReader) xml.TokenReader {
	kids := make([]xml.TokenReader, 0, len(children))
	for _, c := range children {
		if c != nil {
			kids = append(kids, c)
		}
	}
	return xmlstream.Wrap(xmlstream.MultiReader(kids...), xml.StartElement{Name: name, Attr: attrs})
}

// Text returns a token stream of character data; the empty string yields
// nothing.
func Text(s string) xml.TokenReader {
	if s == "" {
		return nil
	}
	return xmlstream.Token(xml.CharData(s))
}

// TextElem returns <name>text</name>.
func TextElem(name xml.Name, text string) xml.TokenReader {
	return Elem(name, nil, Text(text))
}

// Tokens replays a fixed slice of tokens.
type Tokens []xml.Token

// Reader returns a TokenReader over the tokens.
func (t Tokens) Reader() xml.TokenReader {
	i := 0
	return xmlstream.ReaderFunc(func() (xml.Token, error) {
		if i >= len(t) {
			return nil, io.EOF
		}
		tok := t[i]
		i++
		return tok, nil
	})
}

// ErrTooLarge is returned by ReadElement when an element exceeds its limit.
var ErrTooLarge = errors.New("wire: element too large")

// Element is one XML element read completely into memory: its start token
// and the tokens between start and end. It is how the gateway hands a stanza
// from the serial read loop to a worker goroutine.
type Element struct {
	Start xml.StartElement
	Inner Tokens
}

// ReadElement reads the inner tokens of the element begun by start from r,
// copying each token so that it survives the decoder's buffer reuse. It stops
// with ErrTooLarge after maxTokens tokens or maxBytes bytes of character data
// and attribute values.
func ReadElement(r xml.TokenReader, start xml.StartElement, maxTokens, maxBytes int) (Element, error) {
	el := Element{Start: start.Copy()}
	depth, size := 0, 0
	for {
		tok, err := r.Token()
		if err != nil {
			if err == io.EOF && depth == 0 {
				return el, nil
			}
			return el, err
		}
		tok = xml.CopyToken(tok)
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			for _, a := range t.Attr {
				size += len(a.Value)
			}
		case xml.EndElement:
			if depth == 0 {
				return el, nil
			}
			depth--
		case xml.CharData:
			size += len(t)
		}
		el.Inner = append(el.Inner, tok)
		if len(el.Inner) > maxTokens || size > maxBytes {
			return el, ErrTooLarge
		}
	}
}

// Children returns the direct child elements of e, each as an Element.
// A child's Inner is a capped window on e's, not a copy: the tokens are
// shared (neither may be modified), and appending to it reallocates.
func (e Element) Children() []Element {
	var out []Element
	depth, begin := 0, 0
	for i, tok := range e.Inner {
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			if depth == 1 {
				out = append(out, Element{Start: t})
				begin = i + 1
			}
		case xml.EndElement:
			depth--
			if depth == 0 && len(out) > 0 {
				if i > begin {
					out[len(out)-1].Inner = e.Inner[begin:i:i]
				}
			}
		}
	}
	return out
}

// Child returns the first direct child named name.
func (e Element) Child(name xml.Name) (Element, bool) {
	for _, c := range e.Children() {
		if c.Start.Name == name {
			return c, true
		}
	}
	return Element{}, false
}

// Text returns the concatenated character data directly inside e.
func (e Element) Text() string {
	var b strings.Builder
	depth := 0
	for _, tok := range e.Inner {
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
		case xml.EndElement:
			depth--
		case xml.CharData:
			if depth == 0 {
				b.Write(t)
			}
		}
	}
	return b.String()
}

// AttrValue returns the value of the attribute local (without namespace).
// An unprefixed attribute wins over one in the element's own namespace,
// whatever their order: a sender may add a prefixed from="…" beside the
// one its server stamped.
func (e Element) AttrValue(local string) (string, bool) {
	for _, a := range e.Start.Attr {
		if a.Name.Local == local && a.Name.Space == "" {
			return a.Value, true
		}
	}
	for _, a := range e.Start.Attr {
		if a.Name.Local == local && (a.Name.Space == "" || a.Name.Space == e.Start.Name.Space) {
			return a.Value, true
		}
	}
	return "", false
}

// Reader replays the whole element, start and end included.
func (e Element) Reader() xml.TokenReader {
	return xmlstream.Wrap(e.Inner.Reader(), e.Start)
}

// Marshal serializes a token stream canonically: namespaces are declared only
// where they change, an attribute in a namespace other than xml's gets a
// prefix ns1, ns2, … declared on its element, attributes are sorted, empty
// elements self-close, comments, directives and processing instructions
// are left out, and values and text are escaped by the one escaper
// (AppendAttrValue, AppendText). It is AppendXML's canonical mode: the
// same writer with attributes sorted. Golden files in testdata/ are
// written with it, so they do not depend on encoding/xml's habit of
// repeating xmlns on every element.
func Marshal(r xml.TokenReader) (string, error) {
	w := xmlWriter{sorted: true}
	if err := w.copy(r); err != nil {
		return "", err
	}
	return string(w.b), nil
}

// xmlNS is the namespace of the xml prefix.
const xmlNS = "http://www.w3.org/XML/1998/namespace"

// Parse decodes one XML element from s, for tests and for the client.
func Parse(s string) (Element, error) {
	d := xml.NewDecoder(strings.NewReader(s))
	for {
		tok, err := d.Token()
		if err != nil {
			return Element{}, err
		}
		if start, ok := tok.(xml.StartElement); ok {
			return ReadElement(d, start, 1<<20, 16<<20)
		}
	}
}

// ParseFragment decodes XML text of zero or more whole elements into
// tokens that can be written again (by AppendXML or by mellium's encoder):
// each element carries its namespace in its Name, so namespace
// declarations are dropped; comments, processing instructions and
// directives are dropped; whitespace between the elements is dropped, and
// other text there is an error, as are unbalanced elements.
func ParseFragment(s string) (Tokens, error) {
	d := xml.NewDecoder(strings.NewReader(s))
	var toks Tokens
	depth := 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
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
				if !IsNSDecl(a.Name) {
					attrs = append(attrs, a)
				}
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
