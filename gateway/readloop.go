package gateway

import (
	"encoding/xml"
	"errors"
	"io"

	"agentgw/wire"
	"agentgw/wire/stanzaread"

	"mellium.im/xmpp/stream"
)

// readLoop reads the stream's stanzas after the handshake and dispatches
// each, as Serve with handler did: it returns nil when the server ends its
// stream, and the error otherwise. Either way it closes our stream
// (</stream:stream>), after a stream error of ours if the input was at
// fault.
func (s *session) readLoop() error {
	start, err := s.out.StreamHeader()
	if err != nil {
		return s.endStream(err)
	}
	r := stanzaread.New(s.out.Reader(), start, maxStanzaTokens, maxStanzaBytes)
	for {
		el, err := r.Next()
		tooLarge := errors.Is(err, wire.ErrTooLarge)
		if err != nil && !tooLarge {
			if errors.Is(err, stanzaread.ErrStreamError) {
				se := stream.Error{}
				if derr := xml.NewTokenDecoder(el.Reader()).Decode(&se); derr != nil {
					se = stream.UndefinedCondition
				}
				err = se
			}
			return s.endStream(err)
		}
		s.touch()
		s.dispatch(el, tooLarge)
	}
}

// endStream ends the read loop on err: the server's end of stream (io.EOF,
// which is no error), its stream error, a broken connection, or input we
// refuse, which gets a stream error first.
func (s *session) endStream(err error) error {
	var reply stream.Error
	var syn *stanzaread.SyntaxError
	switch {
	case errors.As(err, &syn):
		reply = stream.NotWellFormed
	case errors.Is(err, stanzaread.ErrStartTooLarge), errors.Is(err, stanzaread.ErrTooDeep),
		errors.Is(err, stanzaread.ErrTooManyNamespaces):
		reply = stream.PolicyViolation
	case errors.Is(err, stanzaread.ErrUnknownStreamElement), errors.Is(err, stanzaread.ErrRestart):
		reply = stream.UnsupportedStanzaType
	}
	if reply.Err != "" {
		s.wmu.Lock()
		_ = s.sendWhole(reply.TokenReader())
		s.wmu.Unlock()
	}
	_ = s.sess.Close()
	if err == io.EOF {
		return nil
	}
	return err
}
