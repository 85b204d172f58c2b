package wire_test

import (
	"bytes"
	"encoding/xml"
	"io"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"agentgw/wire"
)

// TestAppendXML: {tokens, XML} cases of the compact writer: namespaces
// declared only where they change, attribute prefixes, self-closing, what
// is dropped and what is escaped.
func TestAppendXML(t *testing.T) {
	n := func(space, local string) xml.Name { return xml.Name{Space: space, Local: local} }
	for _, c := range []struct {
		name string
		in   xml.TokenReader
		want string
	}{
		{"top without namespace", wire.Elem(n("", "a"), nil), `<a/>`},
		{"top with namespace", wire.Elem(n("urn:a", "a"), nil), `<a xmlns='urn:a'/>`},
		{"child inherits", wire.Elem(n("urn:a", "a"), nil, wire.Elem(n("urn:a", "b"), nil)), `<a xmlns='urn:a'><b/></a>`},
		{"child changes", wire.Elem(n("urn:a", "a"), nil, wire.Elem(n("urn:b", "b"), nil, wire.Elem(n("urn:b", "c"), nil))),
			`<a xmlns='urn:a'><b xmlns='urn:b'><c/></b></a>`},
		{"empty space under a namespace", wire.Elem(n("urn:a", "a"), nil, wire.Elem(n("", "b"), nil)), `<a xmlns='urn:a'><b xmlns=''/></a>`},
		{"attributes in order", wire.Elem(n("", "a"), []xml.Attr{wire.Attr("z", "1"), wire.Attr("b", "2")}), `<a z='1' b='2'/>`},
		{"xml and other namespaces", wire.Elem(n("urn:a", "a"), []xml.Attr{
			{Name: n("http://www.w3.org/XML/1998/namespace", "lang"), Value: "en"},
			{Name: n("urn:p", "x"), Value: "1"},
			{Name: n("urn:q", "y"), Value: "2"},
			{Name: n("urn:p", "z"), Value: "3"},
		}), `<a xmlns='urn:a' xml:lang='en' xmlns:ns1='urn:p' ns1:x='1' xmlns:ns2='urn:q' ns2:y='2' ns1:z='3'/>`},
		{"declarations dropped", wire.Elem(n("urn:a", "a"), []xml.Attr{
			{Name: n("", "xmlns"), Value: "urn:wrong"},
			{Name: n("xmlns", "p"), Value: "urn:p"},
			wire.Attr("k", "v"),
		}), `<a xmlns='urn:a' k='v'/>`},
		{"comments and PIs dropped", wire.Tokens{
			xml.StartElement{Name: n("", "a")}, xml.Comment("c"), xml.ProcInst{Target: "p"}, xml.Directive("d"), xml.CharData(""), xml.EndElement{Name: n("", "a")},
		}.Reader(), `<a/>`},
		{"escaping", wire.Elem(n("", "a"), []xml.Attr{wire.Attr("v", "'\"<>&\t\n\r")}, wire.Text("'\"<>&\t\n\r]]>")),
			`<a v='&apos;&quot;&lt;&gt;&amp;&#x9;&#xA;&#xD;'>'"&lt;&gt;&amp;` + "\t\n" + `&#xD;]]&gt;</a>`},
		{"not XML becomes U+FFFD", wire.Elem(n("", "a"), []xml.Attr{wire.Attr("v", "a\x00b\xffc")}, wire.Text("\x1b\uFFFE\xed\xa0\x80ok é")),
			"<a v='a\uFFFDb\uFFFDc'>\uFFFD\uFFFD\uFFFD\uFFFD\uFFFDok é</a>"},
	} {
		got, err := wire.AppendXML([]byte("prefix:"), c.in)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if string(got) != "prefix:"+c.want {
			t.Errorf("%s:\n got %s\nwant prefix:%s", c.name, got, c.want)
		}
	}
	for _, bad := range []wire.Tokens{
		{xml.StartElement{Name: xml.Name{Local: "a"}}},
		{xml.StartElement{Name: xml.Name{Local: "a"}}, xml.EndElement{Name: xml.Name{Local: "b"}}},
		{xml.EndElement{Name: xml.Name{Local: "a"}}},
	} {
		if _, err := wire.AppendXML(nil, bad.Reader()); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}

// FuzzEscape: the one escaper writes only XML that parses back to the input
// (with what XML does not allow as U+FFFD), and EscapedLen bounds it.
func FuzzEscape(f *testing.F) {
	for _, s := range []string{"", "plain", `"<>&'`, "a\tb\nc\rd", "\x00\xff\xed\xa0\x80\uFFFE", "é𝄞"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, x := wire.AppendAttrValue(nil, s), wire.AppendText(nil, s)
		if n := wire.EscapedLen(s); n < len(v) || n < len(x) {
			t.Fatalf("EscapedLen(%q) = %d, escaper wrote %d and %d", s, n, len(v), len(x))
		}
		want := strings.Map(func(r rune) rune {
			if r == '\t' || r == '\n' || r == '\r' || r >= 0x20 && r <= 0xD7FF || r >= 0xE000 && r <= 0xFFFD || r >= 0x10000 {
				return r
			}
			return utf8.RuneError
		}, strings.ToValidUTF8(s, "\x00"))
		// ToValidUTF8 folds a run of bad bytes into one; the escaper
		// writes one U+FFFD per byte, so compare after folding both.
		fold := func(s string) string { return strings.ReplaceAll(s, "\uFFFD", "") }
		el, err := wire.Parse("<a v='" + string(v) + "'>" + string(x) + "</a>")
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		got, _ := el.AttrValue("v")
		if fold(got) != fold(want) || fold(el.Text()) != fold(want) {
			t.Fatalf("%q: attribute %q, text %q, want %q", s, got, el.Text(), want)
		}
	})
}

// discoInfo is a disco#info as an endpoint answers it: identities,
// features and an extended-info form.
func discoInfo() wire.InfoResult {
	info := wire.InfoResult{
		Identities: []wire.Identity{
			{Category: "automation", Type: "agent-endpoint", Name: "Weather & <forecasts>"},
			{Category: "client", Type: "bot", Name: "Weather"},
		},
		Forms: []wire.Form{{Type: "result", FormType: "urn:xmpp:agent-gateway:0#endpoint", Fields: []wire.Field{
			{Var: "version", Values: []string{"3"}},
			{Var: "manifest-hash", Values: []string{"sha-256:" + strings.Repeat("ab", 32)}},
			{Var: "tools", Values: []string{"forecast", "alerts", "radar"}},
		}}},
	}
	info.Features = []string{
		"http://jabber.org/protocol/disco#info", "http://jabber.org/protocol/disco#items",
		"http://jabber.org/protocol/commands", "jabber:iq:version", "urn:xmpp:ping", "vcard-temp",
		"urn:xmpp:agent-gateway:0", "urn:xmpp:agent-gateway:0#tasks", "urn:xmpp:receipts",
		"http://jabber.org/protocol/chatstates", "jabber:iq:search", "urn:xmpp:time",
	}
	return info
}

// readAll reads r to its end, dropping namespace declarations, comments and
// empty or top-level whitespace text, so that two streams compare by
// content: names with their namespaces, attributes, text.
func readAll(t *testing.T, r xml.TokenReader) []xml.Token {
	t.Helper()
	var out []xml.Token
	depth := 0
	for {
		tok, err := r.Token()
		if tok != nil {
			switch tt := xml.CopyToken(tok).(type) {
			case xml.StartElement:
				depth++
				attrs := tt.Attr[:0]
				for _, a := range tt.Attr {
					if !(a.Name.Space == "" && a.Name.Local == "xmlns" || a.Name.Space == "xmlns") {
						attrs = append(attrs, a)
					}
				}
				tt.Attr = attrs
				if len(attrs) == 0 {
					tt.Attr = nil
				}
				out = append(out, tt)
			case xml.EndElement:
				depth--
				out = append(out, tt)
			case xml.CharData:
				if len(tt) > 0 {
					out = append(out, tt)
				}
			}
		}
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestFrozenBytesDecodeSame: the frozen bytes of a disco#info, written
// inside an <iq> of a component stream (default namespace
// jabber:component:accept), decode to the same tokens as the stream they
// were frozen from, namespaces and all.
func TestFrozenBytesDecodeSame(t *testing.T) {
	info := discoInfo()
	f, err := wire.Freeze(info.TokenReader())
	if err != nil {
		t.Fatal(err)
	}
	raw, ok := wire.FrozenBytes(f.Reader())
	if !ok {
		t.Fatal("no frozen bytes")
	}
	doc := `<stream:stream xmlns='jabber:component:accept' xmlns:stream='http://etherx.jabber.org/streams'>` +
		`<iq type='result' id='1'>` + string(raw) + `</iq></stream:stream>`
	d := xml.NewDecoder(strings.NewReader(doc))
	for {
		tok, err := d.Token()
		if err != nil {
			t.Fatalf("%v: %s", err, doc)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "iq" {
			if se.Name.Space != "jabber:component:accept" {
				t.Fatalf("iq in %q", se.Name.Space)
			}
			break
		}
	}
	el, err := wire.ReadElement(d, xml.StartElement{}, 1<<20, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	got, want := readAll(t, el.Inner.Reader()), readAll(t, info.TokenReader())
	if len(got) != len(want) {
		t.Fatalf("%d tokens decoded, %d frozen:\n%s", len(got), len(want), raw)
	}
	for i := range got {
		g, w := got[i], want[i]
		if gs, ok := g.(xml.StartElement); ok {
			ws, _ := w.(xml.StartElement)
			if gs.Name != ws.Name || len(gs.Attr) != len(ws.Attr) {
				t.Fatalf("token %d: decoded %v, frozen %v", i, gs, ws)
			}
			for j := range gs.Attr {
				if gs.Attr[j] != ws.Attr[j] {
					t.Fatalf("token %d attr %d: decoded %v, frozen %v", i, j, gs.Attr[j], ws.Attr[j])
				}
			}
			continue
		}
		if ge, ok := g.(xml.EndElement); ok {
			if we, _ := w.(xml.EndElement); ge.Name != we.Name {
				t.Fatalf("token %d: decoded %v, frozen %v", i, ge, we)
			}
			continue
		}
		if !bytes.Equal(g.(xml.CharData), w.(xml.CharData)) {
			t.Fatalf("token %d: decoded %q, frozen %q", i, g, w)
		}
	}
}

// encodingXML writes r with encoding/xml's Encoder, which declares xmlns on
// every element.
func encodingXML(r xml.TokenReader) ([]byte, error) {
	var b bytes.Buffer
	enc := xml.NewEncoder(&b)
	for {
		tok, err := r.Token()
		if tok != nil {
			if err := enc.EncodeToken(tok); err != nil {
				return nil, err
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	err := enc.Flush()
	return b.Bytes(), err
}

// TestFrozenBytesSmaller: the frozen bytes of a disco#info are smaller than
// encoding/xml's encoding of the same tokens.
func TestFrozenBytesSmaller(t *testing.T) {
	info := discoInfo()
	f, err := wire.Freeze(info.TokenReader())
	if err != nil {
		t.Fatal(err)
	}
	std, err := encodingXML(info.TokenReader())
	if err != nil {
		t.Fatal(err)
	}
	raw := f.Bytes()
	if len(raw) >= len(std) {
		t.Errorf("frozen bytes %d, encoding/xml %d:\n%s\n%s", len(raw), len(std), raw, std)
	}
	t.Logf("frozen %d bytes, encoding/xml %d bytes (%.2f×)", len(raw), len(std), float64(len(std))/float64(len(raw)))
}

// BenchmarkWriteDiscoInfo compares AppendXML with encoding/xml's Encoder on
// the token stream of a disco#info (a replay of a Frozen, as the gateway
// holds it); bytes/op is the size written. The "interleaved" case times
// both in every iteration, one after the other, and reports their ratio:
// on a noisy machine that ratio is steadier than two separate runs.
//
//	go test ./wire -run XXX -bench WriteDiscoInfo -benchmem -count 5
func BenchmarkWriteDiscoInfo(b *testing.B) {
	f, err := wire.Freeze(discoInfo().TokenReader())
	if err != nil {
		b.Fatal(err)
	}
	var ours []byte
	var std bytes.Buffer
	appendXML := func() {
		if ours, err = wire.AppendXML(ours[:0], f.Reader()); err != nil {
			b.Fatal(err)
		}
	}
	encodingXML := func() {
		std.Reset()
		enc := xml.NewEncoder(&std)
		r := f.Reader()
		for {
			tok, err := r.Token()
			if err != nil {
				break
			}
			if err := enc.EncodeToken(tok); err != nil {
				b.Fatal(err)
			}
		}
		if err := enc.Flush(); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("AppendXML", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			appendXML()
		}
		b.ReportMetric(float64(len(ours)), "bytes/op")
	})
	b.Run("encoding-xml", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			encodingXML()
		}
		b.ReportMetric(float64(std.Len()), "bytes/op")
	})
	b.Run("interleaved", func(b *testing.B) {
		var tOurs, tStd time.Duration
		for b.Loop() {
			t0 := time.Now()
			appendXML()
			t1 := time.Now()
			encodingXML()
			tOurs += t1.Sub(t0)
			tStd += time.Since(t1)
		}
		b.ReportMetric(float64(tStd)/float64(tOurs), "encoding-xml/AppendXML")
		b.ReportMetric(float64(std.Len())/float64(len(ours)), "size-ratio")
	})
}

// TestParseFragmentRoundTrip: text parsed by ParseFragment and written by
// AppendXML keeps its namespaces, with no declaration left among the
// attributes. (It was c2s's TestXMLRoundTrip, of the writer c2s had.)
func TestParseFragmentRoundTrip(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`<iq xmlns="jabber:client" type="result" id="1"/>`, `<iq xmlns='jabber:client' type='result' id='1'/>`},
		{`<query xmlns='http://jabber.org/protocol/disco#info'><identity category="a" type="b"></identity></query>`,
			`<query xmlns='http://jabber.org/protocol/disco#info'><identity category='a' type='b'/></query>`},
		{`<message xmlns="jabber:client" xml:lang="en"><body>a &lt; b &amp; "c"</body><x xmlns="urn:x"><y/></x><z xmlns=""/></message>`,
			`<message xmlns='jabber:client' xml:lang='en'><body>a &lt; b &amp; "c"</body><x xmlns='urn:x'><y/></x><z xmlns=''/></message>`},
		{`<p:a xmlns:p="urn:p" xmlns:q="urn:q" q:attr="v&quot;"/>`, `<a xmlns='urn:p' xmlns:ns1='urn:q' ns1:attr='v&quot;'/>`},
		{`<error type="cancel"><service-unavailable xmlns="urn:ietf:params:xml:ns:xmpp-stanzas"/></error>`,
			`<error type='cancel'><service-unavailable xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/></error>`},
	} {
		toks, err := wire.ParseFragment(tc.in)
		if err != nil {
			t.Fatalf("parse %s: %v", tc.in, err)
		}
		for _, tok := range toks {
			if se, ok := tok.(xml.StartElement); ok {
				for _, a := range se.Attr {
					if a.Name.Space == "" && a.Name.Local == "xmlns" || a.Name.Space == "xmlns" {
						t.Errorf("%s: namespace declaration %v kept", tc.in, a.Name)
					}
				}
			}
		}
		got, err := wire.AppendXML(nil, toks.Reader())
		if err != nil || string(got) != tc.want {
			t.Errorf("round trip %s\n got %s (%v)\nwant %s", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{`<a>`, `<a></b>`, `text`, `<a/>x`} {
		if _, err := wire.ParseFragment(bad); err == nil {
			t.Errorf("ParseFragment(%q) succeeded", bad)
		}
	}
}
