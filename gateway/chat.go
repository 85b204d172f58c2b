package gateway

import (
	"encoding/xml"
	"time"

	"agentgw/chat"
	"agentgw/surface"
	"agentgw/wire"

	"mellium.im/xmpp/jid"
	"mellium.im/xmpp/stanza"
)

// The gateway's side of the Human Messaging profile (package chat): the
// read loop hands the chat service the messages it may take, and tells it
// of bounces; everything else about chats is the service's.

// AttachChat sets the chat service, before Run. Without one every message
// to an endpoint bounces.
func (g *Gateway) AttachChat(c *chat.Service) {
	g.chat.Store(c)
}

// SendChat writes one stanza the chat service built, from a hosted
// endpoint, on the live stream, or fails with ErrStreamLost.
func (g *Gateway) SendChat(r xml.TokenReader) error {
	return g.sendStanza(r)
}

// BounceChat answers a message from from to to, with the stanza id id,
// as a message to a nonexistent endpoint is answered (dispatchMessage):
// the chat service calls it for a message it took before finding its
// endpoint not active. It fails with ErrStreamLost when no stream is up.
func (g *Gateway) BounceChat(from, to jid.JID, id string) error {
	return g.sendStanza(messageBounce(from, to, id))
}

// messageBounce is the one answer to a message the gateway does not take:
// <service-unavailable/> from the addressed JID, without the body.
func messageBounce(from, to jid.JID, id string) xml.TokenReader {
	msg := stanza.Message{ID: id, From: to, To: from, Type: stanza.ErrorMessage}
	return msg.Wrap(surface.ErrServiceUnavailable.TokenReader())
}

// chatTakes reports whether the chat service takes a message of type typ
// (chat or normal; never groupchat) from a sender within its rates.
func (g *Gateway) chatTakes(from, to jid.JID, typ string, el wire.Element) bool {
	c := g.chat.Load()
	if c == nil {
		return false
	}
	switch stanza.MessageType(typ) {
	case stanza.ChatMessage, stanza.NormalMessage, "":
	default:
		return false
	}
	return c.Take(g.Policy(), from, to, el)
}

// chatBounced tells the chat service of an error message to an endpoint:
// one may mean that the recipient blocks it (XEP-0191). It counts against
// the sender's rates; errors are never answered.
func (g *Gateway) chatBounced(from, to jid.JID, el wire.Element) {
	c := g.chat.Load()
	if c == nil || !g.allowSender(from, time.Now()) {
		return
	}
	c.Bounced(g.Policy(), from, to, el)
}

// chatFeatures are the chat features of the addressed endpoint for the
// requester (disco#info).
func (g *Gateway) chatFeatures(req *Request) []string {
	c := g.chat.Load()
	if c == nil {
		return nil
	}
	return c.Features(req.Policy, req.From, req.To.Bare().String())
}
