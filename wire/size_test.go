package wire_test

import (
	"bytes"
	"encoding/xml"
	"errors"
	"strings"
	"testing"

	"agentgw/wire"
)

// TestStanzaSizeBoundsEncoder: the measured size is never below what Go's
// encoder writes, and an over-limit stanza is refused before it is read
// whole.
func TestStanzaSizeBoundsEncoder(t *testing.T) {
	for _, text := range []string{"", "plain", `"<>&'`, strings.Repeat(`"<`, 1000), "a\tb\nc\rd"} {
		el := wire.Elem(xml.Name{Space: "urn:x", Local: "e"}, []xml.Attr{wire.Attr("a", text)}, wire.Text(text))
		toks, size, err := wire.BufferStanza(el, wire.MaxStanzaBytes)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		enc := xml.NewEncoder(&b)
		r := toks.Reader()
		for {
			tok, err := r.Token()
			if err != nil {
				break
			}
			enc.EncodeToken(tok)
		}
		enc.Flush()
		if size < b.Len() {
			t.Errorf("%q: measured %d, encoder wrote %d", text, size, b.Len())
		}
		if n := wire.EscapedLen(text); n < len(text) {
			t.Errorf("EscapedLen(%q) = %d", text, n)
		}
	}
	if got := wire.EscapedLen(`"<`); got != 10 {
		t.Errorf(`EscapedLen("<) = %d, want 10 (&quot;&lt;)`, got)
	}
	big := wire.Text(strings.Repeat(`"`, wire.MaxStanzaBytes/6+1))
	if _, _, err := wire.BufferStanza(big, wire.MaxStanzaBytes); !errors.Is(err, wire.ErrStanzaTooLarge) {
		t.Errorf("over-limit stanza: %v", err)
	}
}
