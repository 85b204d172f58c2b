package gateway

import (
	"encoding/xml"
	"errors"

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

// boundStanza buffers r whole and returns a replay of it, or
// wire.ErrStanzaTooLarge.
func boundStanza(r xml.TokenReader) (xml.TokenReader, error) {
	toks, _, err := wire.BufferStanza(r, wire.MaxStanzaBytes)
	if err != nil {
		return nil, err
	}
	return toks.Reader(), nil
}

// boundPayload is boundStanza for a reply payload. An afterRead payload is
// measured through to its inner reader and re-wrapped, so its callback
// still runs only once the reply has been encoded; ok is false (and the
// callback has run) when the payload is too large.
func boundPayload(payload xml.TokenReader) (out xml.TokenReader, ok bool) {
	if payload == nil {
		return nil, true
	}
	ar, isAfter := payload.(*afterRead)
	if isAfter {
		payload = ar.r
	}
	// The envelope is accounted for by measuring the payload against the
	// limit less the room an IQ's addresses can take.
	toks, _, err := wire.BufferStanza(payload, wire.MaxStanzaBytes-iqEnvelope)
	if err != nil {
		if isAfter {
			ar.done()
		}
		return nil, false
	}
	if isAfter {
		// The same afterRead, so that its callback still runs once.
		ar.r = toks.Reader()
		return ar, true
	}
	return toks.Reader(), true
}

// iqEnvelope bounds the wire size of an IQ around its payload: two JIDs of
// at most 3071 bytes each (RFC 7622), escaped, an ID and the type.
const iqEnvelope = 16 << 10

// isTooLarge reports whether err is the wire-size refusal.
func isTooLarge(err error) bool { return errors.Is(err, wire.ErrStanzaTooLarge) }
