package wire

import "encoding/xml"

// NSHashes is the XEP-0300 namespace.
const NSHashes = "urn:xmpp:hashes:2"

// HashAlgoSHA256 is the only XEP-0300 algorithm version 0 of the protocol
// uses.
const HashAlgoSHA256 = "sha-256"

// Hash is an XEP-0300 <hash/> element with Base64 content.
type Hash struct {
	Algo, Value string
}

// TokenReader implements xmlstream.Marshaler.
func (h Hash) TokenReader() xml.TokenReader {
	return Elem(xml.Name{Space: NSHashes, Local: "hash"}, []xml.Attr{Attr("algo", h.Algo)}, Text(h.Value))
}
