package stanzaread

// The lexer under Reader: bytes, tags, names, namespaces, text and
// entities, each checked against the bounds as it is read.

import (
	"encoding/xml"
	"io"
	"unicode/utf8"

	"agentgw/wire"
)

func (r *Reader) getc() (byte, error) {
	b, err := r.br.ReadByte()
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return b, err
}

func isSpace(b byte) bool { return b == ' ' || b == '\r' || b == '\n' || b == '\t' }

func (r *Reader) space() (byte, error) {
	for {
		b, err := r.getc()
		if err != nil || !isSpace(b) {
			return b, err
		}
	}
}

// endOfTag reads optional space and the '>' of an end tag.
func (r *Reader) endOfTag() error {
	b, err := r.space()
	if err != nil {
		return err
	}
	if b != '>' {
		return syntax("invalid characters in end tag")
	}
	return nil
}

// endTag reads an end tag after "</", which must close the innermost open
// element, and pops it.
func (r *Reader) endTag() (xml.Name, error) {
	n, err := r.name()
	if err != nil {
		return xml.Name{}, err
	}
	top := r.stack[len(r.stack)-1]
	// The name is compared as written with the start's, without making
	// strings of it; only a mismatch is split, for its error. (n may be
	// in the reader's buffer: it is done with before reading on.)
	var wrong string
	if !top.is(n) {
		_, local, err := split(n)
		if err != nil {
			return xml.Name{}, err
		}
		wrong = string(local)
	}
	if err := r.endOfTag(); err != nil {
		return xml.Name{}, err
	}
	if wrong != "" {
		return xml.Name{}, syntax("element <" + top.local + "> closed by </" + wrong + ">")
	}
	r.pop()
	return top.name, nil
}

// is reports whether the element was opened with the name n as written.
// The start's name had at most one colon, so this is nsname's split of n
// matching the start's.
func (o *open) is(n []byte) bool {
	if o.prefix == "" {
		return string(n) == o.local
	}
	p := len(o.prefix)
	return len(n) == p+1+len(o.local) && n[p] == ':' &&
		string(n[:p]) == o.prefix && string(n[p+1:]) == o.local
}

func (r *Reader) pop() {
	top := r.stack[len(r.stack)-1]
	for i := len(r.undo) - 1; i >= top.nundo; i-- {
		u := r.undo[i]
		if u.had {
			r.ns[u.prefix] = u.old
		} else {
			delete(r.ns, u.prefix)
		}
	}
	r.undo = r.undo[:top.nundo]
	r.nsScope -= top.ndecl
	r.stack = r.stack[:len(r.stack)-1]
}

// startTag reads a start tag, whose '<' has been read, and pushes it,
// its name resolved; its attributes, resolved too, are appended to r.st's.
// budget bounds its cost (see AttrCost: names, attribute values, AttrCost
// for each attribute) kept; past it (n > budget) the values are checked
// but nothing of the tag is kept, and without keep nothing is kept.
func (r *Reader) startTag(budget int, keep bool) (empty bool, n int, err error) {
	if len(r.stack) >= MaxDepth {
		return false, 0, ErrTooDeep
	}
	prefix, local, err := r.nsname()
	if err != nil {
		return false, 0, err
	}
	st := &r.st
	lo, vlo := len(st.attrs), len(st.vals)
	ndecl, nattr := 0, 0
	// Names cost their bytes as written: prefix and local part.
	n = len(prefix) + len(local)
	if keep && n > budget {
		keep = false
		n = budget + 1
	}
	for {
		b, err := r.space()
		if err != nil {
			return false, 0, err
		}
		if b == '/' {
			if b, err = r.getc(); err != nil {
				return false, 0, err
			}
			if b != '>' {
				return false, 0, syntax("expected /> in element")
			}
			empty = true
			break
		}
		if b == '>' {
			break
		}
		_ = r.br.UnreadByte()
		ap, al, err := r.nsname()
		if err != nil {
			return false, 0, err
		}
		if nattr++; nattr > MaxAttrs {
			return false, 0, ErrStartTooLarge
		}
		decl := ap == "xmlns" || ap == "" && al == "xmlns"
		if decl {
			ndecl++
			if ndecl > MaxNSPerElement || r.nsScope+ndecl > MaxNSInScope {
				return false, 0, ErrTooManyNamespaces
			}
		}
		if b, err = r.space(); err != nil {
			return false, 0, err
		}
		if b != '=' {
			return false, 0, syntax("attribute name without = in element")
		}
		q, err := r.space()
		if err != nil {
			return false, 0, err
		}
		if q != '"' && q != '\'' {
			return false, 0, syntax("unquoted or missing attribute value in element")
		}
		var over bool
		if keep {
			n += len(ap) + len(al) + AttrCost
			over = n > budget
		}
		limit := budget - n
		if !keep || over {
			limit = 0
		}
		s := len(st.vals)
		var overText bool
		st.vals, overText, err = r.text(st.vals, int(q), false, limit)
		over = over || overText
		if err != nil {
			return false, 0, err
		}
		if over || !keep {
			if keep {
				keep = false
				n = budget + 1
				st.attrs, st.voffs = st.attrs[:lo], st.voffs[:lo]
			}
			st.vals = st.vals[:vlo]
			continue
		}
		n += len(st.vals) - s
		a := xml.Attr{Name: xml.Name{Space: ap, Local: al}}
		if decl {
			// Its value is needed now, to resolve names, and will be
			// again: the namespaces of a stream are few.
			a.Value = r.intern(st.vals[s:])
			st.vals = st.vals[:s]
		}
		st.attrs = append(st.attrs, a)
		st.voffs = append(st.voffs, len(st.vals))
	}
	o := open{prefix: prefix, local: local, nundo: len(r.undo), ndecl: ndecl}
	r.nsScope += ndecl
	attrs := st.attrs[lo:]
	for _, a := range attrs {
		switch {
		case a.Name.Space == "xmlns":
			r.bindNS(a.Name.Local, a.Value)
		case a.Name.Space == "" && a.Name.Local == "xmlns":
			r.bindNS("", a.Value)
		}
	}
	o.name = r.translate(xml.Name{Space: prefix, Local: local}, true)
	for i := range attrs {
		attrs[i].Name = r.translate(attrs[i].Name, false)
	}
	r.stack = append(r.stack, o)
	return empty, n, nil
}

// translate resolves a prefixed name as encoding/xml does: an attribute
// without a prefix has no namespace, an undeclared prefix stays as it is.
func (r *Reader) translate(n xml.Name, elem bool) xml.Name {
	switch {
	case n.Space == "xmlns":
		return n
	case n.Space == "" && !elem:
		return n
	case n.Space == "xml":
		n.Space = xmlURL
	case n.Space == "" && n.Local == "xmlns":
		return n
	}
	if uri, ok := r.ns[n.Space]; ok {
		n.Space = uri
	}
	return n
}

// bindNS binds prefix to uri until the element being read ends.
func (r *Reader) bindNS(prefix, uri string) {
	old, had := r.ns[prefix]
	r.undo = append(r.undo, undo{prefix: prefix, old: old, had: had})
	r.ns[prefix] = uri
}

// text reads character data, appending it decoded to dst: up to '<' (quote
// < 0, not cdata), to the closing quote, or to "]]>" (cdata). Once more
// than limit bytes have been read it keeps checking them but no longer keeps
// them (over).
func (r *Reader) text(dst []byte, quote int, cdata bool, limit int) (_ []byte, over bool, err error) {
	s := len(dst)
	checked := s
	// In a CDATA section the last two bytes kept may be the "]]" of its
	// end, which is not text.
	slack := 0
	if cdata {
		slack = 2
	}
	// stop is the classes that end a plain run.
	stop := uint8(classStop)
	switch quote {
	case '\'':
		stop |= classApos
	case '"':
		stop |= classQuot
	}
	var b0, b1 byte
	for {
		// Fast path: a run of plain ASCII in the buffer is appended whole.
		if checked == len(dst) && b1 != ']' && b1 != '\r' {
			buf, _ := r.br.Peek(r.br.Buffered())
			i := 0
			for i < len(buf) && byteClass[buf[i]]&stop == 0 {
				i++
			}
			if i > 0 {
				dst = append(dst, buf[:i]...)
				_, _ = r.br.Discard(i)
				checked = len(dst)
				b0, b1 = 0, 0
				if len(dst)-s > limit+slack {
					over = true
					dst = dst[:s]
					checked = s
				}
				continue
			}
		}
		b, err := r.getc()
		if err == io.ErrUnexpectedEOF && quote < 0 && !cdata {
			// Text at the end of the input is text; the end is an
			// error of the next read.
			break
		}
		if err != nil {
			return dst, over, err
		}
		if quote < 0 && b0 == ']' && b1 == ']' && b == '>' {
			if !cdata {
				return dst, over, syntax("unescaped ]]> not in CDATA section")
			}
			if err := check(dst, &checked, true); err != nil {
				return dst, over, err
			}
			if !over {
				dst = dst[:len(dst)-2]
				if len(dst)-s > limit {
					over = true
					dst = dst[:s]
				}
			}
			return dst, over, nil
		}
		if b == '<' && !cdata {
			if quote >= 0 {
				return dst, over, syntax("unescaped < inside quoted string")
			}
			_ = r.br.UnreadByte()
			break
		}
		if quote >= 0 && b == byte(quote) {
			break
		}
		if b == '&' && !cdata {
			if dst, err = r.entity(dst); err != nil {
				return dst, over, err
			}
			if err := check(dst, &checked, false); err != nil {
				return dst, over, err
			}
			b0, b1 = 0, 0
		} else {
			switch {
			case b == '\r':
				dst = append(dst, '\n')
			case b1 == '\r' && b == '\n':
			default:
				dst = append(dst, b)
			}
			if b < utf8.RuneSelf && checked == len(dst)-1 {
				if b < 0x20 && b != '\t' && b != '\n' && b != '\r' {
					return dst, over, syntax("illegal character in text")
				}
				checked = len(dst)
			} else if err := check(dst, &checked, false); err != nil {
				return dst, over, err
			}
			b0, b1 = b1, b
		}
		if len(dst)-s > limit+slack {
			over = true
			dst = append(dst[:s], dst[checked:]...)
			checked = s
		}
	}
	if err := check(dst, &checked, true); err != nil {
		return dst, over, err
	}
	return dst, over, nil
}

// check validates the runes of dst from *checked: whole ones, or all when
// final.
func check(dst []byte, checked *int, final bool) error {
	i := *checked
	for i < len(dst) && (final || utf8.FullRune(dst[i:])) {
		c, size := utf8.DecodeRune(dst[i:])
		if c == utf8.RuneError && size == 1 {
			return syntax("invalid UTF-8")
		}
		if !wire.IsChar(c) {
			return syntax("illegal character code")
		}
		i += size
	}
	*checked = i
	return nil
}

// entity reads a character reference or one of the five predefined
// entities, whose '&' has been read, and appends what it stands for.
func (r *Reader) entity(dst []byte) ([]byte, error) {
	b, err := r.getc()
	if err != nil {
		return dst, err
	}
	if b == '#' {
		if b, err = r.getc(); err != nil {
			return dst, err
		}
		base := uint64(10)
		if b == 'x' {
			base = 16
			if b, err = r.getc(); err != nil {
				return dst, err
			}
		}
		var n uint64
		digits := 0
		for {
			var d uint64
			switch {
			case '0' <= b && b <= '9':
				d = uint64(b - '0')
			case base == 16 && 'a' <= b && b <= 'f':
				d = uint64(b-'a') + 10
			case base == 16 && 'A' <= b && b <= 'F':
				d = uint64(b-'A') + 10
			default:
				d = 99
			}
			if d == 99 {
				break
			}
			digits++
			if n <= utf8.MaxRune {
				n = n*base + d
			}
			if b, err = r.getc(); err != nil {
				return dst, err
			}
		}
		if b != ';' || digits == 0 || n > utf8.MaxRune {
			return dst, syntax("invalid character reference")
		}
		return utf8.AppendRune(dst, rune(n)), nil
	}
	var name [5]byte
	i := 0
	for {
		if b == ';' {
			break
		}
		if i == len(name) {
			return dst, syntax("invalid character entity")
		}
		name[i] = b
		i++
		if b, err = r.getc(); err != nil {
			return dst, err
		}
	}
	switch string(name[:i]) {
	case "lt":
		return append(dst, '<'), nil
	case "gt":
		return append(dst, '>'), nil
	case "amp":
		return append(dst, '&'), nil
	case "apos":
		return append(dst, '\''), nil
	case "quot":
		return append(dst, '"'), nil
	}
	return dst, syntax("invalid character entity")
}
