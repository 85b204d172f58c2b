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
// allocation per replay.
type Frozen struct {
	toks  []xml.Token
	attrs int // attributes of all start elements
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
			return f, nil
		}
		if err != nil {
			return Frozen{}, err
		}
	}
}

// Reader replays the recorded tokens.
func (f Frozen) Reader() xml.TokenReader {
	return &frozenReader{toks: f.toks, attrs: make([]xml.Attr, 0, f.attrs)}
}

type frozenReader struct {
	toks  []xml.Token
	attrs []xml.Attr // this replay's copies, carved in order
}

func (r *frozenReader) Token() (xml.Token, error) {
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
