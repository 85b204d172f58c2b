package stanzaread_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"agentgw/wire"
	"agentgw/wire/stanzaread"
)

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func readAll(t *testing.T, in []byte, maxTokens, maxBytes int) ([]wire.Element, *countingReader, error) {
	t.Helper()
	cr := &countingReader{r: bytes.NewReader(in)}
	r := stanzaread.New(bufio.NewReader(cr), rawHeader(t), maxTokens, maxBytes)
	var els []wire.Element
	for {
		el, err := r.Next()
		if err != nil && !errors.Is(err, wire.ErrTooLarge) {
			return els, cr, err
		}
		els = append(els, el)
	}
}

// Namespace declarations that cost no attribute-value bytes are bounded per
// element and in scope: the stream ends at the first declaration past
// either, before the rest of the input is read.
func TestNamespaceDeclarationsBounded(t *testing.T) {
	decls := func(from, n int) string {
		var b strings.Builder
		for i := from; i < from+n; i++ {
			fmt.Fprintf(&b, " xmlns:p%d=''", i)
		}
		return b.String()
	}
	// At the bounds: read, and every prefix resolves.
	ok := "<iq" + decls(0, stanzaread.MaxNSPerElement) + ">"
	for i := 1; i < stanzaread.MaxNSInScope/stanzaread.MaxNSPerElement; i++ {
		ok += "<x" + decls(i*stanzaread.MaxNSPerElement, stanzaread.MaxNSPerElement) + ">"
	}
	ok += "<p0:a/><p1023:b/>"
	for i := 1; i < stanzaread.MaxNSInScope/stanzaread.MaxNSPerElement; i++ {
		ok += "</x>"
	}
	ok += "</iq></stream:stream>"
	if _, _, err := readAll(t, []byte(ok), 200_000, 2<<20); err != io.EOF {
		t.Fatalf("at the bounds: %v, want EOF", err)
	}

	tail := strings.Repeat("<a/>", 100_000) + "</iq>"
	for name, in := range map[string]string{
		"per element": "<iq" + decls(0, stanzaread.MaxNSPerElement+1) + ">" + tail,
		"in scope":    "<iq" + decls(0, 64) + ">" + strings.Repeat("<x"+decls(0, 64)+">", 16) + tail,
		"skipped":     "<iq>" + strings.Repeat("t", 300) + "<x" + decls(0, stanzaread.MaxNSPerElement+1) + "/>" + tail,
	} {
		_, cr, err := readAll(t, []byte(in), 200_000, 2<<20)
		if name == "skipped" {
			_, cr, err = readAll(t, []byte(in), 50, 200)
		}
		if !errors.Is(err, stanzaread.ErrTooManyNamespaces) {
			t.Errorf("%s: %v, want ErrTooManyNamespaces", name, err)
		}
		if cr.n > len(in)-len(tail)+8192 {
			t.Errorf("%s: read %d of %d bytes before ending the stream", name, cr.n, len(in))
		}
	}
}

// Attributes are bounded in number, and their names count toward the
// stanza's bytes: empty attributes are not read for free.
func TestAttributesBounded(t *testing.T) {
	attrs := func(n int) string {
		var b strings.Builder
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, " a%d=''", i)
		}
		return b.String()
	}
	// MaxAttrs are read; one more ends the stream where it stands, in
	// the stanza's own start tag or nested, kept or skipped.
	in := "<iq" + attrs(stanzaread.MaxAttrs) + "/></stream:stream>"
	if els, _, err := readAll(t, []byte(in), 200_000, 2<<20); err != io.EOF || len(els) != 1 || len(els[0].Start.Attr) != stanzaread.MaxAttrs {
		t.Fatalf("at the bound: %d stanzas, %v", len(els), err)
	}
	rest := attrs(1_000_000)
	for _, in := range []string{
		"<iq" + rest + "/>",
		"<iq><x" + rest + "/></iq>",
		"<iq>" + strings.Repeat("t", 300) + "<x" + rest + "/></iq>",
	} {
		_, cr, err := readAll(t, []byte(in), 50, 200)
		if !errors.Is(err, stanzaread.ErrStartTooLarge) {
			t.Errorf("%.20q: %v, want ErrStartTooLarge", in, err)
		}
		if cr.n > 400+stanzaread.MaxAttrs*12+8192 {
			t.Errorf("%.20q: read %d bytes before ending the stream", in, cr.n)
		}
	}

	// Names count: 200 empty attributes cost their names and AttrCost
	// each, past a bound of 4 KiB that their values alone would not reach.
	start := "<iq" + attrs(200) + "/>"
	if _, _, err := readAll(t, []byte(start), 200_000, 4096); !errors.Is(err, stanzaread.ErrStartTooLarge) {
		t.Errorf("own start tag: %v, want ErrStartTooLarge", err)
	}
	nested := "<iq><x" + attrs(200) + "/></iq><message/></stream:stream>"
	els, _, err := readAll(t, []byte(nested), 200_000, 4096)
	if err != io.EOF || len(els) != 2 || els[0].Inner != nil || els[1].Start.Name.Local != "message" {
		t.Errorf("nested: %d stanzas, %v; want the iq too large, then the message", len(els), err)
	}
	// An element's name counts too.
	long := "<iq>" + strings.Repeat("<"+strings.Repeat("n", 1000)+"/>", 5) + "</iq></stream:stream>"
	if els, _, err := readAll(t, []byte(long), 200_000, 4096); err != io.EOF || len(els) != 1 || els[0].Inner != nil {
		t.Errorf("long names: %v, want the iq too large", err)
	}
}

// A <stream:error/> too large to read ends the stream: nothing after it is
// read as a stanza.
func TestStreamErrorTooLargeEnds(t *testing.T) {
	in := "<stream:error><text>" + strings.Repeat("x", 300) + "</text></stream:error><message/></stream:stream>"
	els, _, err := readAll(t, []byte(in), 50, 200)
	if !errors.Is(err, stanzaread.ErrStreamErrorTooLarge) || len(els) != 0 {
		t.Fatalf("%d stanzas, %v; want none and ErrStreamErrorTooLarge", len(els), err)
	}
}

// Text between stanzas fails at its first byte that is not whitespace, not
// at the next '<'.
func TestTextBetweenStanzasFailsEarly(t *testing.T) {
	for _, lead := range []string{"x", " \r\n&#x20;y", "<![CDATA[ z"} {
		in := "<message/>" + lead + strings.Repeat("y", 1<<20) + "<message/>"
		els, cr, err := readAll(t, []byte(in), 50, 200)
		var syn *stanzaread.SyntaxError
		if !errors.As(err, &syn) || len(els) != 1 {
			t.Errorf("%q: %d stanzas, %v; want one and a syntax error", lead, len(els), err)
		}
		if cr.n > 8192 {
			t.Errorf("%q: read %d of %d bytes before failing", lead, cr.n, len(in))
		}
	}
	// Whitespace, written or as references, still passes.
	in := " \t\r\n&#x20;&#9;<![CDATA[ \n]]><message/></stream:stream>"
	if els, _, err := readAll(t, []byte(in), 50, 200); err != io.EOF || len(els) != 1 {
		t.Errorf("whitespace: %d stanzas, %v", len(els), err)
	}
}
