// Package stanzaread reads the stanzas of an established XML stream (the
// component stream, after its handshake) one top-level element at a time,
// straight from a bufio.Reader into a wire.Element.
//
// It replaces mellium's Serve over encoding/xml followed by
// wire.ReadElement, which copied every token twice, and returns what that
// pipeline returned (names resolved, entities decoded, the XML Char
// production checked), under bounds that make the cost of reading linear
// in the input: maxTokens, maxBytes, MaxAttrs, MaxNSPerElement,
// MaxNSInScope. The differential fuzz test (FuzzReader) holds it to that.
// What differs from mellium on purpose: docs/gateway.md, "Reading
// stanzas".
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
