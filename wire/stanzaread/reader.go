// Package stanzaread reads the stanzas of an established XML stream (the
// component stream, after its handshake) one top-level element at a time,
// straight from a bufio.Reader into a wire.Element.
//
// It replaces, on the gateway's read loop, mellium's Serve over
// encoding/xml's Decoder followed by wire.ReadElement, which copied every
// token a second time. What it returns is what that pipeline returned: names
// resolved to namespace URIs under the declarations of the stream header and
// of the stanza, xmlns attributes kept in Attr as encoding/xml reports them,
// the five predefined entities and character references decoded, "\r\n" and
// "\r" read as "\n", CDATA sections as character data of their own, UTF-8 and
// the XML Char production checked, and the same bounds (maxTokens tokens,
// maxBytes bytes of character data, attribute values and names). The differential
// fuzz test (FuzzReader) holds it to that.
//
// Comments, processing instructions and DTDs are refused as a stream error,
// as mellium's stream reader refused them. One thing differs on purpose: an
// element in the streams namespace nested inside a stanza is an ordinary
// payload element here, where mellium took it for a stream-level element and
// ended the stream; only a top-level one is stream level.
//
// Its own bounds, which encoding/xml does not have, differ on purpose too,
// so that the cost of reading is bounded by the input's size and these
// values: names count toward maxBytes (with AttrCost for each attribute),
// an element has at most MaxAttrs attributes and MaxNSPerElement namespace
// declarations, and at most MaxNSInScope are in scope; a <stream:error/>
// past the bounds ends the stream (ErrStreamErrorTooLarge). FuzzReader's
// model applies the same rules. Text between stanzas fails at its first
// byte that is not whitespace, which changes when, not whether, it fails.
package stanzaread

import (
	"bufio"
	"encoding/xml"
	"errors"
	"io"
	"unicode/utf8"

	"agentgw/wire"
)

// NSStream is the namespace of the stream's own elements.
const NSStream = "http://etherx.jabber.org/streams"

const xmlURL = "http://www.w3.org/XML/1998/namespace"

// Errors that end the stream. A syntax error is a *SyntaxError.
var (
	// ErrStreamError means the peer sent <stream:error/>; Next returns it
	// with the element read.
	ErrStreamError = errors.New("stanzaread: stream error received")
	// ErrUnknownStreamElement is a top-level element in the streams
	// namespace other than error.
	ErrUnknownStreamElement = errors.New("stanzaread: unknown stream-level element")
	// ErrRestart is a second stream header on an established stream.
	ErrRestart = errors.New("stanzaread: unexpected stream restart")
	// ErrStartTooLarge is a stanza whose own attribute values hold more
	// than maxBytes bytes: with them cut, it could not even be answered.
	ErrStartTooLarge = errors.New("stanzaread: stanza start tag too large")
	// ErrStreamErrorTooLarge is a <stream:error/> past the bounds: the peer
	// ended its stream, with a condition too large to read.
	ErrStreamErrorTooLarge = errors.New("stanzaread: stream error received, too large to read")
	// ErrTooDeep is an element nested deeper than MaxDepth.
	ErrTooDeep = errors.New("stanzaread: elements nested too deeply")
	// ErrTooManyNamespaces is an element declaring more than
	// MaxNSPerElement namespaces, or one that brings the declarations in
	// scope past MaxNSInScope.
	ErrTooManyNamespaces = errors.New("stanzaread: too many namespace declarations")
)

// MaxDepth bounds the nesting of one stanza, and MaxName the length of a
// name: past them the stream ends (ErrTooDeep, a SyntaxError), so that a
// stanza skipped as too large is skipped in bounded memory.
// MaxSpace bounds a run of whitespace between stanzas.
const (
	MaxDepth = 10_000
	MaxName  = 4096
	MaxSpace = 64 << 10
)

// MaxNSPerElement bounds the namespace declarations (xmlns and xmlns:p
// attributes) of one element, and MaxNSInScope those in scope at once,
// counting every open element of the stanza; past either the stream ends
// (ErrTooManyNamespaces). encoding/xml has no such bound: a declaration
// such as xmlns:p=” costs a few bytes and no attribute-value bytes, so
// without them a stanza could hold any number of bindings.
const (
	MaxNSPerElement = 64
	MaxNSInScope    = 1024
)

// MaxAttrs bounds the attributes of one element: past it the stream ends
// (ErrStartTooLarge). AttrCost is what each attribute counts toward a
// stanza's byte bound besides its name and value: names (element and
// attribute, prefix and local part as written) count as their
// bytes, where encoding/xml with wire.ReadElement counted only values and
// character data, so that a million empty attributes are not read for free.
const (
	MaxAttrs = 256
	AttrCost = 32
)

// SyntaxError is input that is not well-formed XML, or markup the stream
// does not allow.
type SyntaxError struct{ Msg string }

func (e *SyntaxError) Error() string { return "stanzaread: " + e.Msg }

func syntax(msg string) error { return &SyntaxError{Msg: msg} }

// undo is one namespace declaration of an open element: what its prefix
// was bound to before (had false: it was not bound).
type undo struct {
	prefix, old string
	had         bool
}

// open is an element being read: its raw (prefixed) name, resolved name,
// and the length of the undo stack outside it.
type open struct {
	prefix, local string
	name          xml.Name
	nundo         int
	ndecl         int
}

// Reader reads stanzas. It is not safe for concurrent use.
type Reader struct {
	br *bufio.Reader
	// ns maps each prefix ("" for the default namespace) to the URI bound
	// to it now; undo holds what the open elements' declarations
	// replaced, so that leaving an element restores it. Lookup is one map
	// access whatever the number of declarations. nsScope counts the
	// declarations of the open elements.
	ns                  map[string]string
	undo                []undo
	nsScope             int
	streamPrefix        string
	streamLocal         string
	maxTokens, maxBytes int

	stack   []open
	skip    bool // the rest of a too-large element is to be skipped first
	err     error
	scratch []byte
	// The stanza being read is kept in these until it is whole, then
	// built (build) with one allocation of each kind at its exact size.
	st     stanzaScratch
	names  map[string]string
	recent [recentSets][2]string
	// valid holds short non-ASCII names found valid by nameDec.
	valid   map[string]struct{}
	nameDec *xml.Decoder
	nameIn  *nameInput
}

// New returns a Reader of the stanzas that follow the stream header start
// (as xml.Decoder.RawToken reports it: names not resolved) on br.
func New(br *bufio.Reader, start xml.StartElement, maxTokens, maxBytes int) *Reader {
	r := &Reader{br: br, streamPrefix: start.Name.Space, streamLocal: start.Name.Local,
		maxTokens: maxTokens, maxBytes: maxBytes, names: make(map[string]string),
		ns: make(map[string]string)}
	for _, a := range start.Attr {
		switch {
		case a.Name.Space == "xmlns":
			r.ns[a.Name.Local] = a.Value
		case a.Name.Space == "" && a.Name.Local == "xmlns":
			r.ns[""] = a.Value
		}
	}
	return r
}

// Next reads the next stanza. A stanza past the bounds comes back with its
// start only and wire.ErrTooLarge; the next call skips its rest. At the
// stream's end (</stream:stream>) the error is io.EOF; a <stream:error/>
// comes back whole with ErrStreamError. Any other error is final: the
// stream is broken, and every later call returns it again.
func (r *Reader) Next() (wire.Element, error) {
	if r.err != nil {
		return wire.Element{}, r.err
	}
	el, err := r.next()
	if err != nil && err != wire.ErrTooLarge {
		r.err = err
		if err == ErrStreamError {
			r.err = io.EOF
		}
	}
	return el, err
}

func (r *Reader) next() (wire.Element, error) {
	if r.skip {
		r.skip = false
		if err := r.skipRest(); err != nil {
			return wire.Element{}, err
		}
	}
	for {
		b, err := r.getc()
		if err != nil {
			return wire.Element{}, err
		}
		if b != '<' {
			// Only whitespace may come between stanzas.
			_ = r.br.UnreadByte()
			if err := r.topText(false); err != nil {
				return wire.Element{}, err
			}
			continue
		}
		b, err = r.getc()
		if err != nil {
			return wire.Element{}, err
		}
		switch b {
		case '/':
			prefix, local, err := r.nsname()
			if err != nil {
				return wire.Element{}, err
			}
			if err := r.endOfTag(); err != nil {
				return wire.Element{}, err
			}
			if prefix != r.streamPrefix || local != r.streamLocal {
				return wire.Element{}, syntax("unexpected end element </" + local + ">")
			}
			return wire.Element{}, io.EOF
		case '?':
			return wire.Element{}, syntax("processing instruction in the stream")
		case '!':
			if err := r.cdataOpen(); err != nil {
				return wire.Element{}, err
			}
			if err := r.topText(true); err != nil {
				return wire.Element{}, err
			}
			continue
		}
		_ = r.br.UnreadByte()
		return r.stanza()
	}
}

// topText reads character data between stanzas (with cdata, a CDATA
// section's content), which must be whitespace: it fails at the first byte
// that is not, and after MaxSpace bytes. Lengths are those of the decoded
// text, as encoding/xml reports it ("\r\n" is one byte).
func (r *Reader) topText(cdata bool) error {
	n := 0
	var prev byte
	var ent [utf8.UTFMax]byte
	for {
		b, err := r.getc()
		if err != nil {
			return err
		}
		switch {
		case b == '<' && !cdata:
			_ = r.br.UnreadByte()
			return nil
		case b == ']' && cdata:
			for _, want := range []byte("]>") {
				if b, err = r.getc(); err != nil {
					return err
				}
				if b != want {
					return syntax("character data between stanzas")
				}
			}
			return nil
		case b == '&' && !cdata:
			dec, err := r.entity(ent[:0])
			if err != nil {
				return err
			}
			for _, c := range dec {
				if !isSpace(c) {
					return syntax("character data between stanzas")
				}
			}
			n += len(dec)
			b = 0
		case b == '\n' && prev == '\r':
		case isSpace(b):
			n++
		default:
			return syntax("character data between stanzas")
		}
		if n > MaxSpace {
			return syntax("whitespace between stanzas too long")
		}
		prev = b
	}
}

// cdataOpen reads the rest of "<![CDATA[" after "<!"; anything else (a
// comment, a DTD) is refused.
func (r *Reader) cdataOpen() error {
	for i := 0; i < 7; i++ {
		b, err := r.getc()
		if err != nil {
			return err
		}
		if b != "[CDATA["[i] {
			return syntax("comment or DTD in the stream")
		}
	}
	return nil
}

// stanza reads one top-level element, whose '<' has been read.
func (r *Reader) stanza() (wire.Element, error) {
	st := &r.st
	st.reset()
	empty, n, err := r.startTag(r.maxBytes, true)
	if err != nil {
		return wire.Element{}, err
	}
	if n > r.maxBytes {
		return wire.Element{}, ErrStartTooLarge
	}
	name := r.stack[len(r.stack)-1].name
	st.nstart = len(st.attrs)
	var ferr error
	if name.Space == NSStream {
		switch name.Local {
		case "error":
			ferr = ErrStreamError
		case r.streamLocal:
			return wire.Element{}, ErrRestart
		default:
			return wire.Element{}, ErrUnknownStreamElement
		}
	}
	if empty {
		r.pop()
		return st.build(name, false), ferr
	}
	tokens, size := 0, 0
	// charData reads text (or, with cdata, a CDATA section's content) as
	// one token, within what is left of the bound.
	charData := func(cdata bool) (bool, error) {
		s := len(st.chars)
		var over bool
		var err error
		st.chars, over, err = r.text(st.chars, -1, cdata, r.maxBytes-size)
		if err != nil || over {
			return over, err
		}
		size += len(st.chars) - s
		st.toks = append(st.toks, rawTok{kind: kindChars, lo: s, hi: len(st.chars)})
		return false, nil
	}
	for len(r.stack) > 0 {
		b, err := r.getc()
		if err != nil {
			return st.build(name, true), err
		}
		if b != '<' {
			_ = r.br.UnreadByte()
			if over, err := charData(false); err != nil {
				return st.build(name, true), err
			} else if over {
				return r.tooLarge(name)
			}
		} else {
			b, err = r.getc()
			if err != nil {
				return st.build(name, true), err
			}
			switch b {
			case '/':
				end, err := r.endTag()
				if err != nil {
					return st.build(name, true), err
				}
				if len(r.stack) == 0 {
					return st.build(name, true), ferr
				}
				st.toks = append(st.toks, rawTok{kind: kindEnd, name: end})
			case '?':
				return st.build(name, true), syntax("processing instruction in the stream")
			case '!':
				if err := r.cdataOpen(); err != nil {
					return st.build(name, true), err
				}
				if over, err := charData(true); err != nil {
					return st.build(name, true), err
				} else if over {
					return r.tooLarge(name)
				}
			default:
				_ = r.br.UnreadByte()
				lo := len(st.attrs)
				empty, n, err := r.startTag(r.maxBytes-size, true)
				if err != nil {
					return st.build(name, true), err
				}
				size += n
				if size > r.maxBytes {
					if empty {
						r.pop()
					}
					return r.tooLarge(name)
				}
				tname := r.stack[len(r.stack)-1].name
				st.toks = append(st.toks, rawTok{kind: kindStart, name: tname, lo: lo, hi: len(st.attrs)})
				tokens++
				if empty {
					r.pop()
					st.toks = append(st.toks, rawTok{kind: kindEnd, name: tname})
				} else if tokens > r.maxTokens {
					return r.tooLarge(name)
				} else {
					continue
				}
			}
		}
		tokens++
		if tokens > r.maxTokens || size > r.maxBytes {
			return r.tooLarge(name)
		}
	}
	return st.build(name, true), ferr
}

// tooLarge ends a stanza past the bounds: its start goes back now, its rest
// is skipped by the next call. A <stream:error/> past them ends the stream
// (ErrStreamErrorTooLarge): nothing may follow it.
func (r *Reader) tooLarge(name xml.Name) (wire.Element, error) {
	el := r.st.build(name, false)
	if name.Space == NSStream {
		return el, ErrStreamErrorTooLarge
	}
	if len(r.stack) > 0 {
		r.skip = true
	}
	return el, wire.ErrTooLarge
}

// skipRest reads to the end of the element whose start is at the bottom of
// the stack, checking it as it goes but keeping nothing.
func (r *Reader) skipRest() error {
	for len(r.stack) > 0 {
		b, err := r.getc()
		if err != nil {
			return err
		}
		if b != '<' {
			_ = r.br.UnreadByte()
			if _, _, err := r.text(r.scratch[:0], -1, false, 0); err != nil {
				return err
			}
			continue
		}
		b, err = r.getc()
		if err != nil {
			return err
		}
		switch b {
		case '/':
			if _, err := r.endTag(); err != nil {
				return err
			}
		case '?':
			return syntax("processing instruction in the stream")
		case '!':
			if err := r.cdataOpen(); err != nil {
				return err
			}
			if _, _, err := r.text(r.scratch[:0], -1, true, 0); err != nil {
				return err
			}
		default:
			_ = r.br.UnreadByte()
			empty, _, err := r.startTag(0, false)
			if err != nil {
				return err
			}
			if empty {
				r.pop()
			}
		}
	}
	return nil
}

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
