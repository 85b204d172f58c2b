package compstream

import (
	"encoding/xml"
	"errors"
	"sync"

	"agentgw/wire"
)

// Every stanza the gateway writes is first buffered and measured after
// XML escaping (wire.BufferStanza) against wire.MaxStanzaBytes, the one
// documented bound that fits Prosody's and ejabberd's default stanza
// limits: a stanza over them would make the server close the component
// stream, losing every reply and event in flight. The protocol packages
// keep what they produce under it (task results are settled failed with
// task.CodeResultTooLarge); this is the last guard. An IQ result over it
// is answered <resource-constraint/> instead; any other stanza over it is
// dropped and logged.

// Bound buffers r whole and returns a replay of it, or
// wire.ErrStanzaTooLarge.
func Bound(r xml.TokenReader) (xml.TokenReader, error) {
	toks, _, err := wire.BufferStanza(r, wire.MaxStanzaBytes)
	if err != nil {
		return nil, err
	}
	return toks.Reader(), nil
}

// BoundPayload is Bound for a reply payload: it is measured against the
// limit less the room an IQ's addresses can take (IQEnvelope).
func BoundPayload(payload xml.TokenReader) (xml.TokenReader, error) {
	toks, _, err := wire.BufferStanza(payload, wire.MaxStanzaBytes-IQEnvelope)
	if err != nil {
		return nil, err
	}
	return toks.Reader(), nil
}

// IQEnvelope bounds the wire size of an IQ around its payload: two JIDs of
// at most 3071 bytes each (RFC 7622), escaped, an ID and the type.
const IQEnvelope = 16 << 10

// IsTooLarge reports whether err is the wire-size refusal.
func IsTooLarge(err error) bool { return errors.Is(err, wire.ErrStanzaTooLarge) }

// Head is the beginning of an answer IQ that BuildIQ writes.
type Head string

// ResultHead and ErrorHead begin the IQs BuildIQ writes. The IQ takes the
// stream's default namespace (jabber:component:accept), as mellium's do.
const (
	ResultHead Head = `<iq type="result" id="`
	ErrorHead  Head = `<iq type="error" id="`
)

// AppendReplyAddrs appends the rest of an answer's start tag after its id
// to dst: `" from="` from, `" to="` to, `">`, escaped. An answer is from
// the JID its request was addressed to, to its sender.
func AppendReplyAddrs(dst []byte, from, to string) []byte {
	dst = append(dst, `" from="`...)
	dst = wire.AppendAttrValue(dst, from)
	dst = append(dst, `" to="`...)
	dst = wire.AppendAttrValue(dst, to)
	return append(dst, `">`...)
}

// iqBufs hold the bytes of the IQs BuildIQ builds.
var iqBufs = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

// IQ is one answer stanza's bytes in a pooled buffer (BuildIQ).
type IQ struct{ b *[]byte }

// BuildIQ builds the IQ head, id escaped, addrs (AppendReplyAddrs),
// payload and "</iq>" in a pooled buffer, and reports whether it fits
// wire.MaxStanzaBytes. These bytes are built by hand, not by a writer:
// this is the measured hot path (issue 26). Its values go through wire's
// one escaper; payload was written by wire.AppendXML. The caller writes
// Bytes (if it fits) and then calls Free.
func BuildIQ(head Head, id string, addrs, payload []byte) (IQ, bool) {
	bp := iqBufs.Get().(*[]byte)
	b := append((*bp)[:0], head...)
	b = wire.AppendAttrValue(b, id)
	b = append(b, addrs...)
	b = append(b, payload...)
	b = append(b, "</iq>"...)
	*bp = b
	return IQ{bp}, len(b) <= wire.MaxStanzaBytes
}

// Bytes is the stanza; it may not be used after Free.
func (q IQ) Bytes() []byte { return *q.b }

// Free returns the buffer to the pool, unless it grew large.
func (q IQ) Free() {
	if cap(*q.b) <= 64<<10 {
		iqBufs.Put(q.b)
	}
}
