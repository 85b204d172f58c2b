// Package fuzztest holds the shared checks of agentgw's native Go fuzz
// targets (docs/fuzzing.md): every parser of outside input must return an
// error rather than panic, and what it accepts must survive its own
// encoding.
package fuzztest

import (
	"encoding/xml"
	"testing"

	"agentgw/wire"
)

// MaxInput bounds the inputs a target looks at, as the gateway's stanza
// reader bounds what reaches a parser; longer inputs only slow the fuzzer.
const MaxInput = 64 << 10

// Marshaler is a value that encodes itself as XML.
type Marshaler interface{ TokenReader() xml.TokenReader }

// Element fuzzes parse, a parser of one XML element, seeded with seeds.
// An input that is not one well-formed element is skipped. A value parse
// accepts that is a Marshaler must encode to an element that parse accepts
// again and that encodes to the same bytes: the encoding is a fixed point.
func Element[T any](f *testing.F, seeds []string, parse func(wire.Element) (T, error)) {
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > MaxInput {
			return
		}
		el, err := wire.Parse(s)
		if err != nil {
			return
		}
		v, err := parse(el)
		if err != nil {
			return
		}
		RoundTrip(t, v, parse)
	})
}

// RoundTrip checks that v, if it is a Marshaler, encodes to an element
// that parse accepts and that encodes to the same bytes again.
func RoundTrip[T any](t *testing.T, v T, parse func(wire.Element) (T, error)) {
	t.Helper()
	m, ok := any(v).(Marshaler)
	if !ok {
		return
	}
	first, err := wire.Marshal(m.TokenReader())
	if err != nil {
		t.Fatalf("accepted value does not encode: %v", err)
	}
	el, err := wire.Parse(first)
	if err != nil {
		t.Fatalf("encoding %q is not well formed: %v", first, err)
	}
	again, err := parse(el)
	if err != nil {
		t.Fatalf("encoding %q is refused: %v", first, err)
	}
	second, err := wire.Marshal(any(again).(Marshaler).TokenReader())
	if err != nil {
		t.Fatal(err)
	}
	if second != first {
		t.Fatalf("encoding is not a fixed point:\n%s\n%s", first, second)
	}
}
