package wire

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
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
// are left out, and text is escaped with the five predefined entities. Golden files in
// testdata/ are written with it, so they do not depend on encoding/xml's
// habit of repeating xmlns on every element.
func Marshal(r xml.TokenReader) (string, error) {
	var toks []xml.Token
	for {
		tok, err := r.Token()
		switch t := tok.(type) {
		case xml.StartElement, xml.EndElement:
			toks = append(toks, xml.CopyToken(tok))
		case xml.CharData:
			// Comments, directives and processing instructions are
			// not written, and neither is empty text: what is left
			// decides whether an element self-closes.
			if len(t) > 0 {
				toks = append(toks, xml.CopyToken(tok))
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", err
		}
	}
	var b bytes.Buffer
	var nsStack []string
	for i, tok := range toks {
		switch t := tok.(type) {
		case xml.StartElement:
			parent := ""
			if len(nsStack) > 0 {
				parent = nsStack[len(nsStack)-1]
			}
			b.WriteByte('<')
			b.WriteString(t.Name.Local)
			attrs := make([]xml.Attr, 0, len(t.Attr)+1)
			for _, a := range t.Attr {
				if a.Name.Space == "" && a.Name.Local == "xmlns" || a.Name.Space == "xmlns" {
					// Declarations are written anew below.
					continue
				}
				attrs = append(attrs, a)
			}
			if t.Name.Space != parent {
				attrs = append(attrs, Attr("xmlns", t.Name.Space))
			}
			names := attrNames(attrs)
			for sp, prefix := range names {
				attrs = append(attrs, xml.Attr{Name: xml.Name{Space: "xmlns", Local: prefix}, Value: sp})
			}
			sort.Slice(attrs, func(i, j int) bool { return names.of(attrs[i]) < names.of(attrs[j]) })
			for _, a := range attrs {
				fmt.Fprintf(&b, " %s='%s'", names.of(a), escape(a.Value, true))
			}
			nsStack = append(nsStack, t.Name.Space)
			if i+1 < len(toks) {
				if _, ok := toks[i+1].(xml.EndElement); ok {
					b.WriteString("/>")
					continue
				}
			}
			b.WriteByte('>')
		case xml.EndElement:
			if _, ok := toks[i-1].(xml.StartElement); !ok {
				fmt.Fprintf(&b, "</%s>", t.Name.Local)
			}
			nsStack = nsStack[:len(nsStack)-1]
		case xml.CharData:
			b.WriteString(escape(string(t), false))
		}
	}
	return b.String(), nil
}

// xmlNS is the namespace of the xml prefix.
const xmlNS = "http://www.w3.org/XML/1998/namespace"

// prefixes names the namespaces of one element's attributes: ns1, ns2, …
// in the order of the namespaces, so that the names do not depend on how
// the input spelt its prefixes.
type prefixes map[string]string

// attrNames gives every attribute namespace of attrs other than xml's a
// prefix, which the element declares.
func attrNames(attrs []xml.Attr) prefixes {
	var spaces []string
	for _, a := range attrs {
		if a.Name.Space != "" && a.Name.Space != xmlNS && !slices.Contains(spaces, a.Name.Space) {
			spaces = append(spaces, a.Name.Space)
		}
	}
	sort.Strings(spaces)
	p := make(prefixes, len(spaces))
	for i, sp := range spaces {
		p[sp] = "ns" + strconv.Itoa(i+1)
	}
	return p
}

// of is the qualified name of a, or of the declaration it stands for.
func (p prefixes) of(a xml.Attr) string {
	switch {
	case a.Name.Space == "":
		return a.Name.Local
	case a.Name.Space == xmlNS:
		return "xml:" + a.Name.Local
	case a.Name.Space == "xmlns":
		return "xmlns:" + a.Name.Local
	}
	return p[a.Name.Space] + ":" + a.Name.Local
}

var (
	attrEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "'", "&apos;", "\"", "&quot;")
	textEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")
)

func escape(s string, attr bool) string {
	if attr {
		return attrEscaper.Replace(s)
	}
	return textEscaper.Replace(s)
}

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
