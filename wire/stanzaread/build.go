package stanzaread

import (
	"encoding/xml"

	"agentgw/wire"
)

// A stanza is read into a stanzaScratch that the Reader keeps, and built
// into a wire.Element only when it is whole: its attributes then take one
// []xml.Attr, their values one string, its character data one []byte and
// its tokens one wire.Tokens, each of exactly the size needed, where
// building as it was read took a slice and a string for every start tag
// with attributes and grew the token slice and the text arena as it went.
// The price is a copy of what was read, from the scratch into the
// allocations, which the profile shows is cheaper than growing them.
//
// Scratch past the caps below is dropped after the stanza, so that a large
// stanza does not stay in the memory of an idle session.
const (
	maxKeptToks  = 256
	maxKeptAttrs = 256
	maxKeptBytes = 16 << 10
)

// tokCacheSize is the number of slots of the caches of end elements, and
// of start elements without attributes, kept as xml.Token values for the
// stanzas that follow: storing a struct in an interface allocates, and the
// stanzas of a stream repeat their element names. A slot is chosen from a
// few bytes of the name (tokSlot) and holds the last token that fell in it.
const tokCacheSize = 64

// stanzaScratch is a stanza being read.
type stanzaScratch struct {
	// toks are the tokens after the start.
	toks []rawTok
	// attrs holds the attributes of every kept start tag, the stanza's
	// own first (nstart of them), with their names resolved. A namespace
	// declaration has its value already (it was needed to resolve names,
	// and is interned); another's value is vals[voffs[i-1]:voffs[i]].
	attrs  []xml.Attr
	voffs  []int
	vals   []byte
	nstart int
	// chars holds the character data of the stanza.
	chars []byte

	// ends and bare are the token caches (tokCacheSize).
	ends, bare [tokCacheSize]xml.Token
}

type tokKind uint8

const (
	kindStart tokKind = iota
	kindEnd
	kindChars
)

// rawTok is one token of a stanza being read: a start element with its
// attributes attrs[lo:hi], an end element, or character data chars[lo:hi].
type rawTok struct {
	name   xml.Name
	lo, hi int
	kind   tokKind
}

// reset empties the scratch for a new stanza.
func (s *stanzaScratch) reset() {
	s.toks, s.attrs, s.voffs = s.toks[:0], s.attrs[:0], s.voffs[:0]
	s.vals, s.chars = s.vals[:0], s.chars[:0]
	s.nstart = 0
}

// release drops what grew past the caps.
func (s *stanzaScratch) release() {
	s.toks = drop(s.toks, maxKeptToks)
	s.attrs = drop(s.attrs, maxKeptAttrs)
	s.voffs = drop(s.voffs, maxKeptAttrs)
	s.vals = drop(s.vals, maxKeptBytes)
	s.chars = drop(s.chars, maxKeptBytes)
}

func drop[T any](s []T, keep int) []T {
	if cap(s) > keep {
		return nil
	}
	return s
}

// build makes the element named name out of the scratch: its start only,
// or (whole) its start and its tokens; then it releases the scratch.
func (s *stanzaScratch) build(name xml.Name, whole bool) wire.Element {
	el := s.assemble(name, whole)
	s.release()
	return el
}

func (s *stanzaScratch) assemble(name xml.Name, whole bool) wire.Element {
	na, nt := s.nstart, 0
	if whole {
		na, nt = len(s.attrs), len(s.toks)
	}
	var attrs []xml.Attr
	if na > 0 {
		attrs = make([]xml.Attr, na)
		copy(attrs, s.attrs[:na])
		// One string for all the values: a value kept alone keeps the
		// stanza's values alive, as a CharData keeps its text.
		vals := string(s.vals[:s.voffs[na-1]])
		prev := 0
		for i := range attrs {
			if end := s.voffs[i]; end > prev {
				attrs[i].Value = vals[prev:end]
				prev = end
			}
		}
	}
	el := wire.Element{Start: xml.StartElement{Name: name}}
	if s.nstart > 0 {
		el.Start.Attr = attrs[:s.nstart:s.nstart]
	}
	if nt == 0 {
		return el
	}
	var chars []byte
	if len(s.chars) > 0 {
		chars = make([]byte, len(s.chars))
		copy(chars, s.chars)
	}
	el.Inner = make(wire.Tokens, nt)
	for i, t := range s.toks {
		switch t.kind {
		case kindStart:
			if t.lo == t.hi {
				el.Inner[i] = s.bareTok(t.name)
			} else {
				el.Inner[i] = xml.StartElement{Name: t.name, Attr: attrs[t.lo:t.hi:t.hi]}
			}
		case kindEnd:
			el.Inner[i] = s.endTok(t.name)
		case kindChars:
			el.Inner[i] = xml.CharData(chars[t.lo:t.hi:t.hi])
		}
	}
	return el
}

// endTok returns the end element named name: the cached one if its slot
// holds that name, otherwise a new one, cached. Sharing it between stanzas
// is safe: a value in an interface cannot be changed.
func (s *stanzaScratch) endTok(name xml.Name) xml.Token {
	c := &s.ends[tokSlot(name)]
	if e, ok := (*c).(xml.EndElement); ok && e.Name == name {
		return *c
	}
	*c = xml.EndElement{Name: name}
	return *c
}

// bareTok is endTok for a start element without attributes, which holds
// no slice either (Attr is nil).
func (s *stanzaScratch) bareTok(name xml.Name) xml.Token {
	c := &s.bare[tokSlot(name)]
	if e, ok := (*c).(xml.StartElement); ok && e.Name == name {
		return *c
	}
	*c = xml.StartElement{Name: name}
	return *c
}

// tokSlot picks a name's cache slot from its lengths and a few of its
// bytes: cheap, and different for the names one stanza holds often enough.
func tokSlot(n xml.Name) int {
	h := uint(len(n.Local))*131 + uint(len(n.Space))*31
	if l := n.Local; len(l) > 0 {
		h += uint(l[0])*7 + uint(l[len(l)-1])
	}
	if sp := n.Space; len(sp) > 0 {
		h += uint(sp[len(sp)-1]) * 17
	}
	return int(h % tokCacheSize)
}
