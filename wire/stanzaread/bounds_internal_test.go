package stanzaread

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"strings"
	"testing"
)

// The name cache keeps short names only: distinct long names do not stay
// in the session's memory.
func TestNameCacheBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("<iq>")
	for i := 0; i < 5000; i++ {
		fmt.Fprintf(&b, "<%s%d/>", strings.Repeat("n", 4000), i)
	}
	b.WriteString("</iq>")
	start := xml.StartElement{Name: xml.Name{Space: "stream", Local: "stream"}}
	r := New(bufio.NewReader(strings.NewReader(b.String())), start, 200_000, 1<<30)
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	total := 0
	for k := range r.names {
		total += len(k)
	}
	if total > maxCached*maxCachedName {
		t.Fatalf("name cache holds %d bytes, want at most %d", total, maxCached*maxCachedName)
	}
}

// A non-ASCII name costs no more than an ASCII one once seen, and a new one
// costs no new decoder.
func TestNonASCIINamesCheap(t *testing.T) {
	start := xml.StartElement{Name: xml.Name{Space: "stream", Local: "stream"}}
	allocs := func(name func(i int) string) float64 {
		var b strings.Builder
		b.WriteString("<iq>")
		for i := 0; i < 1000; i++ {
			fmt.Fprintf(&b, "<%s/>", name(i))
		}
		b.WriteString("</iq>")
		in := b.String()
		return testing.AllocsPerRun(5, func() {
			r := New(bufio.NewReader(strings.NewReader(in)), start, 200_000, 2<<20)
			if _, err := r.Next(); err != nil {
				t.Fatal(err)
			}
		})
	}
	ascii := allocs(func(int) string { return "e" })
	same := allocs(func(int) string { return "é" })
	if same > ascii+20 {
		t.Errorf("1000 <é/>: %.0f allocations, <e/>: %.0f", same, ascii)
	}
	// Distinct names: each is a new string, a cache entry and the
	// decoder's token, but not a new decoder.
	asciiD := allocs(func(i int) string { return fmt.Sprintf("e%d", i) })
	distinct := allocs(func(i int) string { return fmt.Sprintf("é%d", i) })
	if distinct > asciiD+5*1000 {
		t.Errorf("1000 distinct non-ASCII names: %.0f allocations, ASCII: %.0f", distinct, asciiD)
	}
	t.Logf("allocations: <e/> %.0f, <é/> %.0f, distinct ASCII %.0f, distinct non-ASCII %.0f", ascii, same, asciiD, distinct)
}

// A large stanza does not stay in the Reader's scratch: what grew past the
// caps is dropped once the stanza is built, before the next one comes.
func TestScratchReleased(t *testing.T) {
	var b strings.Builder
	b.WriteString("<iq>")
	for i := 0; i < 2000; i++ {
		fmt.Fprintf(&b, "<a v='%d' w='x'>some text</a>", i)
	}
	b.WriteString("</iq>")
	start := xml.StartElement{Name: xml.Name{Space: "stream", Local: "stream"}}
	r := New(bufio.NewReader(strings.NewReader(b.String())), start, 200_000, 2<<20)
	el, err := r.Next()
	if err != nil {
		t.Fatal(err)
	}
	if len(el.Inner) != 2000*3 {
		t.Fatalf("%d tokens, want %d", len(el.Inner), 2000*3)
	}
	s := &r.st
	if cap(s.toks) > maxKeptToks || cap(s.attrs) > maxKeptAttrs || cap(s.voffs) > maxKeptAttrs ||
		cap(s.vals) > maxKeptBytes || cap(s.chars) > maxKeptBytes {
		t.Errorf("scratch kept: %d tokens, %d attributes, %d value bytes, %d text bytes",
			cap(s.toks), cap(s.attrs), cap(s.vals), cap(s.chars))
	}
}
