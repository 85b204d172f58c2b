package gateway

import (
	"encoding/xml"
)

// sendWhole writes one stanza through mellium with its bytes gathered
// (traceConn.hold) and flushed at its end, so that it leaves in one write
// however many pieces mellium's encoder cuts it into. Like every send it
// passes only the session's own context (see session.send). A session
// whose connection is not a traceConn (none in production) sends as
// mellium does.
//
// The caller holds s.wmu (session.write), which keeps one stanza per hold:
// without it a second sender's stanza could be flushed half by the first
// sender's flush.
func (s *session) sendWhole(r xml.TokenReader) error {
	if s.out == nil {
		return s.sess.Send(s.ctx, r)
	}
	s.out.hold()
	err := s.sess.Send(s.ctx, r)
	if ferr := s.out.flush(); err == nil {
		err = ferr
	}
	return err
}
