package wire_test

import (
	"encoding/xml"
	"errors"
	"regexp"
	"testing"

	"agentgw/internal/fuzztest"
	"agentgw/wire"
)

// FuzzParse checks that an element read by Parse encodes to an element
// that Parse reads back to the same encoding. encoding/xml accepts element
// and attribute names that are not XML names (<A:0/> is read as local name
// "0"), which Marshal cannot write back; such inputs are skipped (seed
// 4d0b088e66be4364).
func FuzzParse(f *testing.F) {
	fuzztest.Element(f, nil, func(el wire.Element) (element, error) {
		if !namesValid(el) {
			return element{}, errBadName
		}
		return element{el}, nil
	})
}

var (
	xmlName    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9._-]*$`)
	errBadName = errors.New("not an XML name")
)

// namesValid reports whether every element and attribute name in el is a
// plain ASCII XML name.
func namesValid(el wire.Element) bool {
	check := func(t xml.StartElement) bool {
		if !xmlName.MatchString(t.Name.Local) {
			return false
		}
		for _, a := range t.Attr {
			if !xmlName.MatchString(a.Name.Local) {
				return false
			}
		}
		return true
	}
	if !check(el.Start) {
		return false
	}
	for _, tok := range el.Inner {
		if t, ok := tok.(xml.StartElement); ok && !check(t) {
			return false
		}
	}
	return true
}

// element makes an Element a fuzztest.Marshaler.
type element struct{ wire.Element }

func (e element) TokenReader() xml.TokenReader { return e.Reader() }

// FuzzParseRSM covers XEP-0059 <set/> requests.
func FuzzParseRSM(f *testing.F) {
	fuzztest.Element(f, nil, wire.ParseRSM)
}

// FuzzParseMultiResult covers XEP-0004 multi-item result forms.
func FuzzParseMultiResult(f *testing.F) {
	fuzztest.Element(f, nil, wire.ParseMultiResult)
}
