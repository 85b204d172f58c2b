package stanzaread

import (
	"encoding/xml"
	"io"
	"unicode/utf8"
)

func isNameByte(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' ||
		c == '_' || c == ':' || c == '.' || c == '-'
}

// Classes of bytes, for the fast paths of name and text, which test each
// byte with one table load where a chain of comparisons took most of
// their instructions.
const (
	// className is an ASCII byte that can be in a name (isNameByte).
	className = 1 << iota
	// classStop ends a plain run of text: a control other than tab and
	// newline, '\r', '<', '&', ']', and any byte past ASCII.
	classStop
	// classApos and classQuot are the quotes, which end a run of an
	// attribute value quoted with them.
	classApos
	classQuot
)

var byteClass = func() (t [256]uint8) {
	for c := 0; c < 256; c++ {
		if c < utf8.RuneSelf && isNameByte(byte(c)) {
			t[c] |= className
		}
		if c < 0x20 && c != '\t' && c != '\n' || c >= utf8.RuneSelf || c == '<' || c == '&' || c == ']' || c == '\r' {
			t[c] |= classStop
		}
	}
	t['\''] |= classApos
	t['"'] |= classQuot
	return t
}()

// name reads a name into r.scratch[s:]: the bytes up to the first ASCII
// byte that cannot be in a name.
func (r *Reader) name() ([]byte, error) {
	// Fast path: an ASCII name ending inside the buffer is read in place.
	if buf, _ := r.br.Peek(r.br.Buffered()); len(buf) > 0 {
		i := 0
		for i < len(buf) && byteClass[buf[i]]&className != 0 {
			i++
		}
		if i < len(buf) && buf[i] < utf8.RuneSelf && i > 0 && i <= MaxName {
			n := buf[:i]
			_, _ = r.br.Discard(i)
			if c := n[0]; !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || c == '_' || c == ':') {
				return nil, syntax("invalid XML name")
			}
			return n, nil
		}
	}
	s := len(r.scratch)
	ascii := true
	for {
		b, err := r.getc()
		if err != nil {
			return nil, err
		}
		if b < utf8.RuneSelf && !isNameByte(b) {
			_ = r.br.UnreadByte()
			break
		}
		if b >= utf8.RuneSelf {
			ascii = false
		}
		r.scratch = append(r.scratch, b)
		if len(r.scratch)-s > MaxName {
			return nil, syntax("name too long")
		}
	}
	n := r.scratch[s:]
	r.scratch = r.scratch[:s]
	if len(n) == 0 {
		return nil, syntax("expected a name")
	}
	if ascii {
		if c := n[0]; !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || c == '_' || c == ':') {
			return nil, syntax("invalid XML name")
		}
	} else if !r.isNameSlow(n) {
		return nil, syntax("invalid XML name")
	}
	return n, nil
}

// isNameSlow checks a name with non-ASCII letters by encoding/xml's own
// rule (XML 1.0 Appendix B), asking its decoder: one decoder a Reader,
// reused, and only for a name not seen before (valid keeps the short ones
// found valid, as names keeps short names).
func (r *Reader) isNameSlow(n []byte) bool {
	if _, ok := r.valid[string(n)]; ok {
		return true
	}
	if r.nameDec == nil {
		r.nameIn = new(nameInput)
		r.nameDec = xml.NewDecoder(r.nameIn)
	}
	r.nameIn.b = append(append(append(r.nameIn.b[:0], '<'), n...), '/', '>')
	r.nameIn.i = 0
	if _, err := r.nameDec.RawToken(); err != nil {
		r.nameDec = nil // its error is sticky
		return false
	}
	// The end of the empty element, which reads nothing.
	if _, err := r.nameDec.RawToken(); err != nil {
		r.nameDec = nil
		return false
	}
	if len(n) <= maxCachedName && len(r.valid) < maxCached {
		if r.valid == nil {
			r.valid = make(map[string]struct{})
		}
		r.valid[string(n)] = struct{}{}
	}
	return true
}

// nameInput is the input of the name-checking decoder, refilled for each
// name. It is an io.ByteReader, so the decoder reads it byte by byte and
// never past the name's "/>".
type nameInput struct {
	b []byte
	i int
}

func (in *nameInput) ReadByte() (byte, error) {
	if in.i >= len(in.b) {
		return 0, io.EOF
	}
	in.i++
	return in.b[in.i-1], nil
}

func (in *nameInput) Read(p []byte) (int, error) {
	if in.i >= len(in.b) {
		return 0, io.EOF
	}
	n := copy(p, in.b[in.i:])
	in.i += n
	return n, nil
}

// nsname reads a qualified name: prefix and local part, the prefix empty
// unless one colon stands inside the name.
func (r *Reader) nsname() (prefix, local string, err error) {
	n, err := r.name()
	if err != nil {
		return "", "", err
	}
	p, l, err := split(n)
	if err != nil {
		return "", "", err
	}
	if p == nil {
		return "", r.intern(l), nil
	}
	return r.intern(p), r.intern(l), nil
}

// split splits a qualified name into prefix (nil if none) and local part.
func split(n []byte) (prefix, local []byte, err error) {
	colon := -1
	for i, c := range n {
		if c == ':' {
			if colon >= 0 {
				return nil, nil, syntax("name with two colons")
			}
			colon = i
		}
	}
	if colon <= 0 || colon == len(n)-1 {
		return nil, n, nil
	}
	return n[:colon], n[colon+1:], nil
}

// Names of at most maxCachedName bytes are kept in a cache of at most
// maxCached entries, so that the strings of the names a session sees again
// and again are made once: at most 256 KiB a session. A longer name is
// rare and made each time.
const (
	maxCachedName = 64
	maxCached     = 4096
)

// recentSets is the number of sets of the small cache in front of names
// (two strings each, 16 KiB of headers at most, names no longer than
// maxCachedName): a name is found there from a few of its bytes, without
// hashing it whole and probing a map, which the profile showed to be most
// of the cost of reading a name.
const recentSets = 256

func (r *Reader) intern(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	set := &r.recent[recentSet(b)]
	if set[0] == string(b) {
		return set[0]
	}
	if set[1] == string(b) {
		set[0], set[1] = set[1], set[0]
		return set[0]
	}
	s, ok := r.names[string(b)]
	if !ok {
		s = string(b)
		if len(r.names) < maxCached && len(s) <= maxCachedName {
			r.names[s] = s
		}
	}
	if len(s) <= maxCachedName {
		set[0], set[1] = s, set[0]
	}
	return s
}

// recentSet picks the set of a name (not empty) from its length and four
// of its bytes.
func recentSet(b []byte) int {
	n := len(b)
	h := uint32(n) * 0x9E3779B1
	h = (h ^ uint32(b[0])) * 0x01000193
	h = (h ^ uint32(b[n/2])) * 0x01000193
	h = (h ^ uint32(b[n-1])) * 0x01000193
	if n > 1 {
		h = (h ^ uint32(b[n-2])) * 0x01000193
	}
	return int(h>>8) % recentSets
}
