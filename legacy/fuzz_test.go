package legacy_test

import (
	"testing"

	"agentgw/internal/fuzztest"
	"agentgw/legacy"
	"agentgw/wire"
)

// FuzzParseVCard covers the vCard answers a client parses: vcard-temp
// and vCard 4, by element name.
func FuzzParseVCard(f *testing.F) {
	fuzztest.Element(f, nil, func(el wire.Element) (any, error) {
		if el.Start.Name.Local == "vcard" {
			return legacy.ParseVCard4(el)
		}
		return legacy.ParseVCardTemp(el)
	})
}
