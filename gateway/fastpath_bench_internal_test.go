package gateway

import (
	"testing"

	"agentgw/adhoc"

	"mellium.im/xmpp/stanza"
)

// BenchmarkFastIQLookup is the read loop's first step for every IQ: is it
// a hot read (a disco#info) or not (a command)?
func BenchmarkFastIQLookup(b *testing.B) {
	keys := []iqKey{{stanza.GetIQ, nameDiscoInfo}, {stanza.SetIQ, adhoc.Name}}
	n := 0
	for b.Loop() {
		for _, k := range keys {
			if fastIQs[k] {
				n++
			}
		}
	}
	if n == 0 {
		b.Fatal("disco#info is not a hot read")
	}
}
