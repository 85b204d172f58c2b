package wire

import (
	"encoding/xml"
	"io"
)

// Frozen is a token stream recorded once and replayed any number of times,
// from any number of goroutines at once: an answer that is the same for
// every requester (an endpoint's disco#info for one manifest version) is
// built once instead of per request.
//
// Replaying never hands out the recorded attribute slices: an encoder may
// filter a start element's attributes in place (mellium's stanza encoder
// does), so each replay copies them into a buffer of its own, one
// allocation per replay that is read (FrozenBytes reads none).
type Frozen struct {
	toks  []xml.Token
	attrs int // attributes of all start elements
	// raw is the stream encoded as XML once, at Freeze (nil if encoding
	// failed), for writers that can send bytes (FrozenBytes).
	raw []byte
}

// Freeze records r to its end.
func Freeze(r xml.TokenReader) (Frozen, error) {
	var f Frozen
	for {
		tok, err := r.Token()
		if tok != nil {
			tok = xml.CopyToken(tok)
			if se, ok := tok.(xml.StartElement); ok {
				f.attrs += len(se.Attr)
			}
			f.toks = append(f.toks, tok)
		}
		if err == io.EOF {
			f.raw = encodeTokens(f.toks)
			return f, nil
		}
		if err != nil {
			return Frozen{}, err
		}
	}
}

// Reader replays the recorded tokens.
func (f Frozen) Reader() xml.TokenReader {
	return &frozenReader{toks: f.toks, nattrs: f.attrs, raw: f.raw}
}

// Bytes returns the recorded stream as XML, written by AppendXML
// (namespaces declared only where they change), or nil if it could not be
// written. The bytes are shared: never modify them.
func (f Frozen) Bytes() []byte { return f.raw }

// FrozenBytes returns the XML of r if r is a replay of a Frozen (Reader)
// from which nothing has been read, so that a writer can send the bytes
// instead of encoding the tokens again. The bytes are shared: never modify
// them.
func FrozenBytes(r xml.TokenReader) ([]byte, bool) {
	fr, ok := r.(*frozenReader)
	if !ok || fr.raw == nil || fr.read {
		return nil, false
	}
	return fr.raw, true
}

// encodeTokens writes toks as XML with AppendXML, or returns nil.
func encodeTokens(toks []xml.Token) []byte {
	b, err := AppendXML(nil, Tokens(toks).Reader())
	if err != nil {
		return nil
	}
	return b
}

type frozenReader struct {
	toks   []xml.Token
	attrs  []xml.Attr // this replay's copies, carved in order
	nattrs int        // Frozen.attrs: attrs is made at the first token
	raw    []byte     // Frozen.raw
	read   bool       // a token has been asked for
}

func (r *frozenReader) Token() (xml.Token, error) {
	if !r.read {
		r.read = true
		r.attrs = make([]xml.Attr, 0, r.nattrs)
	}
	if len(r.toks) == 0 {
		return nil, io.EOF
	}
	tok := r.toks[0]
	r.toks = r.toks[1:]
	if se, ok := tok.(xml.StartElement); ok && len(se.Attr) > 0 {
		n := len(r.attrs)
		r.attrs = append(r.attrs, se.Attr...)
		se.Attr = r.attrs[n:len(r.attrs):len(r.attrs)]
		tok = se
	}
	return tok, nil
}
