package stanzaread_test

import (
	"bufio"
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"agentgw/wire"
	"agentgw/wire/stanzaread"
)

const header = `<stream:stream xmlns='jabber:component:accept' xmlns:stream='http://etherx.jabber.org/streams' xmlns:db='jabber:server:dialback' from='agents.example.org' id='s1'>`

// rawHeader is the stream header as xml.Decoder.RawToken reports it.
func rawHeader(t testing.TB) xml.StartElement {
	tok, err := xml.NewDecoder(strings.NewReader(header)).RawToken()
	if err != nil {
		t.Fatal(err)
	}
	return tok.(xml.StartElement)
}

// event is one outcome of reading the stream: a stanza, a stanza too
// large (its start only), a stream error element, the stream's end, or a
// failure.
type event struct {
	kind string // "el", "large", "streamerror", "eof", "fail"
	el   wire.Element
	err  error
}

func (e event) String() string {
	if e.kind == "fail" {
		return "fail: " + e.err.Error()
	}
	return e.kind + " " + dump(e.el)
}

func dump(el wire.Element) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s", tokStr(el.Start))
	for _, t := range el.Inner {
		b.WriteString(" ")
		b.WriteString(tokStr(t))
	}
	return b.String()
}

func tokStr(t xml.Token) string {
	switch t := t.(type) {
	case xml.StartElement:
		s := fmt.Sprintf("<{%s}%s", t.Name.Space, t.Name.Local)
		for _, a := range t.Attr {
			s += fmt.Sprintf(" {%s}%s=%q", a.Name.Space, a.Name.Local, a.Value)
		}
		return s + ">"
	case xml.EndElement:
		return fmt.Sprintf("</{%s}%s>", t.Name.Space, t.Name.Local)
	case xml.CharData:
		return fmt.Sprintf("%q", string(t))
	}
	return fmt.Sprintf("?%T", t)
}

// strict refuses what mellium's stream reader refused at any depth, and
// what stanzaread refuses past its own bounds, which encoding/xml does not
// have: namespace declarations per element and in scope.
type strict struct {
	d *xml.Decoder
	// raw reads the same input with RawToken, a start tag behind d, for
	// the names as written; cost is the last start tag's (startCost).
	raw  *xml.Decoder
	cost *int
	// decls holds the namespace declarations of each open element.
	decls *[]int
}

func (s strict) Token() (xml.Token, error) {
	tok, err := s.d.Token()
	switch t := tok.(type) {
	case xml.Comment, xml.ProcInst, xml.Directive:
		return nil, errors.New("refused token")
	case xml.StartElement:
		n, scope := 0, 0
		for _, a := range t.Attr {
			if a.Name.Space == "xmlns" || a.Name.Space == "" && a.Name.Local == "xmlns" {
				n++
			}
		}
		for _, d := range *s.decls {
			scope += d
		}
		if n > stanzaread.MaxNSPerElement || scope+n > stanzaread.MaxNSInScope {
			return nil, errors.New("too many namespace declarations")
		}
		if len(t.Attr) > stanzaread.MaxAttrs {
			return nil, errors.New("too many attributes")
		}
		*s.decls = append(*s.decls, n)
		for {
			rt, rerr := s.raw.RawToken()
			if rerr != nil {
				panic(rerr)
			}
			if st, ok := rt.(xml.StartElement); ok {
				*s.cost = startCost(st)
				break
			}
		}
	case xml.EndElement:
		if len(*s.decls) > 0 {
			*s.decls = (*s.decls)[:len(*s.decls)-1]
		}
	}
	return tok, err
}

// oracle reads input after the header the way the gateway read it through
// mellium: encoding/xml's Decoder, wire.ReadElement, stream-level rules.
func oracle(input []byte, maxTokens, maxBytes int) []event {
	d := xml.NewDecoder(io.MultiReader(strings.NewReader(header), bytes.NewReader(input)))
	if _, err := d.Token(); err != nil {
		panic(err)
	}
	raw := xml.NewDecoder(io.MultiReader(strings.NewReader(header), bytes.NewReader(input)))
	if _, err := raw.RawToken(); err != nil {
		panic(err)
	}
	r := strict{d: d, decls: new([]int), raw: raw, cost: new(int)}
	var out []event
	for {
		tok, err := r.Token()
		if err != nil {
			return append(out, event{kind: "fail", err: err})
		}
		switch t := tok.(type) {
		case xml.CharData:
			if len(bytes.Trim(t, " \t\r\n")) > 0 {
				return append(out, event{kind: "fail", err: errors.New("text between stanzas")})
			}
			if len(t) > stanzaread.MaxSpace {
				return append(out, event{kind: "fail", err: errors.New("long space")})
			}
		case xml.EndElement:
			return append(out, event{kind: "eof"})
		case xml.StartElement:
			if t.Name.Space == stanzaread.NSStream {
				if t.Name.Local != "error" {
					return append(out, event{kind: "fail", err: errors.New("stream element")})
				}
				el, err := readElement(r, t, maxTokens, maxBytes)
				if err != nil {
					return append(out, event{kind: "fail", err: err})
				}
				return append(out, event{kind: "streamerror", el: el})
			}
			if *r.cost > maxBytes {
				return append(out, event{kind: "fail", err: errors.New("start too large")})
			}
			el, err := readElement(r, t, maxTokens, maxBytes)
			if errors.Is(err, wire.ErrTooLarge) {
				out = append(out, event{kind: "large", el: wire.Element{Start: el.Start}})
				depth := 0
				for _, tok := range el.Inner {
					switch tok.(type) {
					case xml.StartElement:
						depth++
					case xml.EndElement:
						depth--
					}
				}
				for depth >= 0 {
					tok, err := r.Token()
					if err != nil {
						return append(out, event{kind: "fail", err: err})
					}
					switch tok.(type) {
					case xml.StartElement:
						depth++
					case xml.EndElement:
						depth--
					}
				}
				continue
			}
			if err != nil {
				return append(out, event{kind: "fail", err: err})
			}
			out = append(out, event{kind: "el", el: el})
		}
	}
}

// startCost is what a start tag, as RawToken reads it, counts toward a
// stanza's byte bound in stanzaread: wire.ReadElement counted attribute
// values only, stanzaread counts names as written too, and
// stanzaread.AttrCost for each attribute.
func startCost(t xml.StartElement) int {
	n := len(t.Name.Space) + len(t.Name.Local)
	for _, a := range t.Attr {
		n += len(a.Name.Space) + len(a.Name.Local) + stanzaread.AttrCost + len(a.Value)
	}
	return n
}

// readElement is wire.ReadElement with start tags costed by startCost.
func readElement(r strict, start xml.StartElement, maxTokens, maxBytes int) (wire.Element, error) {
	el := wire.Element{Start: start.Copy()}
	depth, size := 0, 0
	for {
		tok, err := r.Token()
		if err != nil {
			return el, err
		}
		tok = xml.CopyToken(tok)
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			size += *r.cost
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
			return el, wire.ErrTooLarge
		}
	}
}

func ours(t testing.TB, input []byte, maxTokens, maxBytes int) []event {
	r := stanzaread.New(bufio.NewReader(bytes.NewReader(input)), rawHeader(t), maxTokens, maxBytes)
	var out []event
	for {
		el, err := r.Next()
		switch {
		case err == nil:
			out = append(out, event{kind: "el", el: el})
		case errors.Is(err, wire.ErrTooLarge):
			out = append(out, event{kind: "large", el: el})
		case errors.Is(err, stanzaread.ErrStreamError):
			return append(out, event{kind: "streamerror", el: el})
		case err == io.EOF:
			return append(out, event{kind: "eof"})
		default:
			return append(out, event{kind: "fail", err: err})
		}
	}
}

func same(a, b []event) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].kind != b[i].kind {
			return false
		}
		if a[i].kind != "fail" && dump(a[i].el) != dump(b[i].el) {
			return false
		}
	}
	return true
}

func compare(t *testing.T, input []byte, maxTokens, maxBytes int) {
	t.Helper()
	want := oracle(input, maxTokens, maxBytes)
	got := ours(t, input, maxTokens, maxBytes)
	if !same(want, got) {
		t.Fatalf("input %q\nencoding/xml: %v\nstanzaread:   %v", input, want, got)
	}
}

var seeds = []string{
	`<iq type='get' id='a1' from='alice@example.org/phone' to='weather@agents.example.org'><query xmlns='http://jabber.org/protocol/disco#info'/></iq>`,
	`<message from='a@b/c' to='d@agents.example.org' type='chat' id='m'><body>hi &amp; &lt;there&gt; &quot;x&quot; &apos;y&apos; &#233;&#x263A;</body></message>`,
	`<presence from='a@b/c' to='d@agents.example.org'><show>away</show><status xml:lang='en'>gone</status></presence>`,
	`<iq type='set' id='x'><t:task xmlns:t='urn:xmpp:agent:0' t:a='1' b='2'><t:in>x</t:in><y xmlns=''/></t:task></iq>`,
	`<iq type='get' id='1'><db:x/><undeclared:y/><q xmlns='u'><r xmlns:p='v'><p:s p:k='1'/></r></q></iq>`,
	`<message><body><![CDATA[<not markup> & ]]>text<![CDATA[]]></body></message>`,
	"<message><body>ünïcødé 日本語 😀\r\nline\rline</body></message>",
	"<message><body>\x00</body></message>",
	"<message><body>\xff\xfe</body></message>",
	"<message><body>&#0;</body></message>",
	"<message><body>&#xD800;&#x10FFFF;</body></message>",
	"<message><body>&bogus;</body></message>",
	`<message><body>a]]>b</body></message>`,
	`<iq type='get' id='1'><query xmlns='a'/>`,
	` <presence/>  </stream:stream>`,
	`<stream:error><conflict xmlns='urn:ietf:params:xml:ns:xmpp-streams'/></stream:error>`,
	`<stream:features/>`,
	"<stream:error><text>" + strings.Repeat("x", 300) + "</text></stream:error><message/>",
	`<message><!-- c --></message>`,
	`<?xml version='1.0'?><message/>`,
	`<!DOCTYPE x><message/>`,
	`hello<message/>`,
	`<message><a></b></message>`,
	`<message><p:a xmlns:p='u'></q:a></message>`,
	`<message x='1'y="2" z = '&#x3c;'/>`,
	`<message x=1/>`,
	`<message x/>`,
	`<message><x xmlns='http://etherx.jabber.org/streams'/></message>`,
	`<iq type='get' id='big'>` + strings.Repeat(`<a>text</a>`, 40) + `</iq><message/>`,
	`<iq type='get' id='big'><a v='` + strings.Repeat(`x`, 300) + `'/></iq><message/>`,
	`<iq type='get' id='big'>` + strings.Repeat(`y`, 300) + `</iq><message/>`,
	`<iq type='get' id='big'><![CDATA[` + strings.Repeat(`y`, 300) + `]]></iq><message/>`,
	`<iq type='get' id='big'>` + strings.Repeat(`y`, 300) + `<!-- x --></iq><message/>`,
	`<éa:b xmlns:éa='u'/>`,
	`<a:b:c/>`,
	`<:a/><a:/>`,
	`<xmlns/><xmlns:a/><a xml:lang='x' xmlns:xml='y'/>`,
	`<message xmlns='jabber:client'><body>x</body></message>`,
	`<message>&#65</message>`,
	`<message>&#x;&#;</message>`,
	`<message>&#99999999999999999999999;</message>`,
	`<message a='<'/>`,
	`<message a='&#x9;&#xA;&#xD;'/>`,
	"<message a='\r\n\t'/>",
	`</stream:other>`,
	`</stream>`,
	`<stream:stream>`,
}

// The elements a Reader returns share nothing with each other or with the
// Reader: a later stanza, read into the same scratch, leaves an earlier one
// as it was, and changing one element's attributes changes no other's.
func TestElementsIndependent(t *testing.T) {
	in := `<iq type='get' id='a1'><query xmlns='q' node='x'/><query xmlns='q' node='y'>t</query></iq>` +
		`<iq type='set' id='b2'><query xmlns='q' node='z'/><query xmlns='q' node='w'>u</query></iq>`
	r := stanzaread.New(bufio.NewReader(strings.NewReader(in)), rawHeader(t), 200_000, 2<<20)
	first, err := r.Next()
	if err != nil {
		t.Fatal(err)
	}
	before := dump(first)
	second, err := r.Next()
	if err != nil {
		t.Fatal(err)
	}
	if got := dump(first); got != before {
		t.Fatalf("first stanza changed by reading the second:\n%s\n%s", before, got)
	}
	want2 := dump(second)
	// Appending to the start's attributes must not write into those of
	// the elements inside, which share their backing array.
	first.Start.Attr = append(first.Start.Attr, xml.Attr{Name: xml.Name{Local: "extra"}, Value: "v"})
	first.Start.Attr[0].Value = "changed"
	inner := first.Inner[0].(xml.StartElement)
	inner.Attr = append(inner.Attr, xml.Attr{Name: xml.Name{Local: "extra"}, Value: "v"})
	if got := dump(wire.Element{Start: first.Start, Inner: first.Inner}); got == before {
		t.Fatal("changing the start changed nothing")
	}
	if q := first.Inner[0].(xml.StartElement); len(q.Attr) != 2 || q.Attr[1].Value != "x" {
		t.Fatalf("inner attributes changed: %v", q.Attr)
	}
	if q := first.Inner[2].(xml.StartElement); q.Attr[1].Value != "y" {
		t.Fatalf("next element's attributes changed: %v", q.Attr)
	}
	if got := dump(second); got != want2 {
		t.Fatalf("second stanza changed:\n%s\n%s", want2, got)
	}
}

func TestAgainstEncodingXML(t *testing.T) {
	for _, s := range seeds {
		compare(t, []byte(s), 50, 200)
		compare(t, []byte(s), 200_000, 2<<20)
	}
}

// FuzzReader feeds any bytes after a fixed stream header to stanzaread and
// to encoding/xml with wire.ReadElement, under small bounds so that too
// large stanzas are common, and requires the same stanzas, or both failing.
func FuzzReader(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, input []byte) {
		compare(t, input, 50, 200)
		compare(t, input, 200_000, 2<<20)
	})
}
