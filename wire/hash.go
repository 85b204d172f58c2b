package wire

import (
	"encoding/base64"
	"encoding/xml"
	"strings"
)

// NSHashes is the XEP-0300 namespace.
const NSHashes = "urn:xmpp:hashes:2"

// HashAlgoSHA256 is the only XEP-0300 algorithm version 0 of the protocol
// uses.
const HashAlgoSHA256 = "sha-256"

// nameHash is the XEP-0300 <hash/> element.
var nameHash = xml.Name{Space: NSHashes, Local: "hash"}

// Hash is the SHA-256 digest an XEP-0300 <hash algo='sha-256'/> carries
// (Base64 content on the wire). Version 0 of the protocol uses no other
// algorithm, so the digest is the whole value.
type Hash [32]byte

// TokenReader implements xmlstream.Marshaler.
func (h Hash) TokenReader() xml.TokenReader {
	return Elem(nameHash, []xml.Attr{Attr("algo", HashAlgoSHA256)}, Text(h.Base64()))
}

// Base64 returns the padded standard Base64 of the digest: the content of
// the <hash/> element and the value of the *_hash_value form fields.
func (h Hash) Base64() string { return base64.StdEncoding.EncodeToString(h[:]) }

// ErrBadHash reports a <hash/> (or a Base64 digest) that version 0 does
// not accept; handlers answer it with bad-request.
type ErrBadHash struct{ Reason string }

func (e ErrBadHash) Error() string { return "hash: " + e.Reason }

// ParseHash reads an XEP-0300 <hash xmlns='urn:xmpp:hashes:2'/> element:
// algo sha-256, text content only, and the padded standard Base64 of 32
// bytes, with XML whitespace around it ignored. It is the one parser of a
// hash, for every surface and for the client.
func ParseHash(el Element) (Hash, error) {
	if el.Start.Name != nameHash {
		return Hash{}, ErrBadHash{"not an urn:xmpp:hashes:2 hash"}
	}
	if len(el.Children()) != 0 {
		return Hash{}, ErrBadHash{"must contain only text"}
	}
	if algo, _ := el.AttrValue("algo"); algo != HashAlgoSHA256 {
		return Hash{}, ErrBadHash{"algo must be sha-256"}
	}
	return ParseHashBase64(strings.Trim(el.Text(), xmlSpace))
}

// ParseHashBase64 reads a digest given as its padded standard Base64 (a
// *_hash_value form field, a command-line flag), by the rules of ParseHash.
func ParseHashBase64(s string) (Hash, error) {
	var h Hash
	raw, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil || len(raw) != len(h) {
		return Hash{}, ErrBadHash{"value must be the Base64 of a SHA-256 digest"}
	}
	copy(h[:], raw)
	return h, nil
}

// xmlSpace is the white space of XML (the S production).
const xmlSpace = " \t\r\n"
