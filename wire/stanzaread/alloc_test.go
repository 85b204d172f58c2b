//go:build !race

package stanzaread_test

import (
	"bufio"
	"testing"

	"agentgw/wire/stanzaread"
)

// Reading a stanza costs one allocation for its attributes, one for their
// values, one for its text, one for its tokens, and one for each start
// element with attributes and each piece of text inside it (an interface
// value holding a struct or a slice); end elements and start elements
// without attributes come from the Reader's cache once seen.
func TestStanzaAllocations(t *testing.T) {
	for _, c := range []struct {
		stanza string
		want   float64
	}{
		// attributes, values, tokens, <query/>
		{`<iq type='get' id='a1' from='alice@example.org/phone' to='weather@agents.example.org'><query xmlns='http://jabber.org/protocol/disco#info' node='x'/></iq>`, 4},
		// attributes, values, text, tokens, the body's text, <active/>
		{`<message from='alice@example.org/phone' to='weather@agents.example.org' type='chat' id='m1'><body>Riga?</body><active xmlns='http://jabber.org/protocol/chatstates'/></message>`, 6},
		// attributes, values
		{`<presence from='alice@example.org/phone' to='weather@agents.example.org'/>`, 2},
	} {
		r := stanzaread.New(bufio.NewReader(&repeat{b: []byte(c.stanza)}), rawHeader(t), 200_000, 2<<20)
		got := testing.AllocsPerRun(100, func() {
			if _, err := r.Next(); err != nil {
				t.Fatal(err)
			}
		})
		if got > c.want {
			t.Errorf("%d allocations a stanza, want %v: %s", int(got), c.want, c.stanza)
		}
	}
}
