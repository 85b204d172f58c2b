package stanzaread_test

import (
	"bufio"
	"bytes"
	"strings"
	"testing"

	"agentgw/wire/stanzaread"
)

// BenchmarkReader reads typical IQs (a disco#info get with a namespaced
// payload) from one stream.
func BenchmarkReader(b *testing.B) {
	const iq = `<iq type='get' id='a1' from='alice@example.org/phone' to='weather@agents.example.org'><query xmlns='http://jabber.org/protocol/disco#info' node='x'/></iq>`
	in := []byte(strings.Repeat(iq, b.N))
	r := stanzaread.New(bufio.NewReader(bytes.NewReader(in)), rawHeader(b), 200_000, 2<<20)
	b.SetBytes(int64(len(iq)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := r.Next(); err != nil {
			b.Fatal(err)
		}
	}
}
