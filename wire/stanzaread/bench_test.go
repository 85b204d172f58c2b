package stanzaread_test

import (
	"bufio"
	"testing"

	"agentgw/wire/stanzaread"
)

// repeat reads its stanza again and again, so that a benchmark's input
// costs nothing to set up and does not sit in the heap (b.N copies of a
// stanza did: their copying was most of a CPU profile).
type repeat struct {
	b []byte
	i int
}

func (r *repeat) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], r.b[r.i:])
		n += c
		r.i = (r.i + c) % len(r.b)
	}
	return n, nil
}

func benchStanza(b *testing.B, stanza string) {
	r := stanzaread.New(bufio.NewReader(&repeat{b: []byte(stanza)}), rawHeader(b), 200_000, 2<<20)
	b.SetBytes(int64(len(stanza)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := r.Next(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReader reads typical IQs (a disco#info get with a namespaced
// payload) from one stream.
func BenchmarkReader(b *testing.B) {
	benchStanza(b, `<iq type='get' id='a1' from='alice@example.org/phone' to='weather@agents.example.org'><query xmlns='http://jabber.org/protocol/disco#info' node='x'/></iq>`)
}

// BenchmarkReaderStanzas reads other shapes: a chat message, a presence
// with entity capabilities, and an <invoke/> as the spec's example writes
// it (indented: the whitespace is character data).
func BenchmarkReaderStanzas(b *testing.B) {
	for _, c := range []struct{ name, stanza string }{
		{"message", `<message from='alice@example.org/phone' to='weather@agents.example.org' type='chat' id='m1'><body>What is the weather in Riga tomorrow?</body><active xmlns='http://jabber.org/protocol/chatstates'/></message>`},
		{"presence", `<presence from='alice@example.org/phone' to='weather@agents.example.org'><c xmlns='http://jabber.org/protocol/caps' hash='sha-1' node='https://example.org/client' ver='QgayPKawpkPSDYmwT/WM94uAlu0='/><show>away</show></presence>`},
		{"invoke", `<iq from='planner@agents.example/worker'
    id='invoke-1'
    to='weather@agents.example'
    type='set'>
  <invoke xmlns='urn:xmpp:agent-task:0'
          api-version='1.4.0'
          request-id='req-91a6d2f49c514f44a2d223f0f97bd9fe'
          tool='forecast.get'>
    <manifest-hash>
      <hash xmlns='urn:xmpp:hashes:2' algo='sha-256'>K2/YdwvIBAlfUIeZHiNCyiYA4m4W2wrEOqXQDoQyXp4=</hash>
    </manifest-hash>
    <arguments media-type='application/json'>{"city":"Riga"}</arguments>
    <deadline>2026-07-27T19:15:00Z</deadline>
  </invoke>
</iq>`},
	} {
		b.Run(c.name, func(b *testing.B) { benchStanza(b, c.stanza) })
	}
}
