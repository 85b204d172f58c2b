// Package chat implements the Human Messaging profile of the XMPP Agent
// Gateway ProtoXEP (§"Human Messaging Profile", and the XEP-0191 rules of
// §"Security Considerations"): people chat with hosted endpoints from any
// XMPP client, and an answerer (the builtin demo) answers as the endpoint.
//
// It implements, and advertises only to a requester who may chat, XEP-0085
// chat states, XEP-0184 receipts, XEP-0359 origin ids (the same on every
// retry, sending being at least once through the outbox), XEP-0461 replies
// and XEP-0334 store hints (docs/messaging.md, "What the endpoint sends").
// A chat is channel-owned: it never creates a task, a task event or a task
// row, and a task result is never sent as chat.
package chat

import (
	"encoding/xml"

	"agentgw/wire"

	"mellium.im/xmlstream"
	"mellium.im/xmpp/jid"
	"mellium.im/xmpp/stanza"
)

// Namespaces of the profile's extensions.
const (
	// NSChatStates is XEP-0085.
	NSChatStates = "http://jabber.org/protocol/chatstates"
	// NSReceipts is XEP-0184.
	NSReceipts = "urn:xmpp:receipts"
	// NSSID is XEP-0359.
	NSSID = "urn:xmpp:sid:0"
	// NSReply is XEP-0461.
	NSReply = "urn:xmpp:reply:0"
	// NSHints is XEP-0334.
	NSHints = "urn:xmpp:hints"
	// NSBlockingErrors is the XEP-0191 application error of a bounce
	// caused by a block.
	NSBlockingErrors = "urn:xmpp:blocking:errors"
	// nsStanzas is RFC 6120's stanza error namespace.
	nsStanzas = "urn:ietf:params:xml:ns:xmpp-stanzas"
	// nsComponent is the stanza namespace of an XEP-0114 stream.
	nsComponent = "jabber:component:accept"
)

// Features are the disco#info features of an endpoint that chats, shown
// only to a requester who may chat with it: each one is implemented here.
var Features = []string{NSChatStates, NSReceipts, NSSID, NSReply, NSHints}

// Inbound is a message received by an endpoint, as the profile reads it.
type Inbound struct {
	// From is the sender's full JID (stamped by its server), To the
	// endpoint.
	From, To jid.JID
	// ID is the stanza id, OriginID the sender's XEP-0359 origin-id.
	ID, OriginID string
	// Type is "chat" or "normal".
	Type string
	// Body, Subject, Lang, Thread and Parent (the thread's parent) are the
	// message's text.
	Body, Subject, Lang, Thread, Parent string
	// Receipt is set when the sender asked for an XEP-0184 receipt.
	Receipt bool
}

// stanzaChild reports whether name is a child of the stanza's own
// namespace (jabber:component:accept on our stream).
func stanzaChild(name xml.Name, local string) bool {
	if name.Local != local {
		return false
	}
	switch name.Space {
	case "", nsComponent, stanza.NSClient, stanza.NSServer:
		return true
	}
	return false
}

// ParseInbound reads a message of type chat or normal (no type is
// normal) addressed to an endpoint.
func ParseInbound(from, to jid.JID, el wire.Element) Inbound {
	in := Inbound{From: from, To: to, Type: string(stanza.NormalMessage)}
	in.ID, _ = el.AttrValue("id")
	if t, _ := el.AttrValue("type"); t == string(stanza.ChatMessage) {
		in.Type = t
	}
	for _, a := range el.Start.Attr {
		if a.Name.Local == "lang" && a.Name.Space == "http://www.w3.org/XML/1998/namespace" {
			in.Lang = a.Value
		}
	}
	for _, c := range el.Children() {
		switch {
		case stanzaChild(c.Start.Name, "body"):
			if in.Body == "" {
				in.Body = c.Text()
			}
		case stanzaChild(c.Start.Name, "subject"):
			if in.Subject == "" {
				in.Subject = c.Text()
			}
		case stanzaChild(c.Start.Name, "thread"):
			in.Thread = c.Text()
			in.Parent, _ = c.AttrValue("parent")
		case c.Start.Name == xml.Name{Space: NSReceipts, Local: "request"}:
			in.Receipt = true
		case c.Start.Name == xml.Name{Space: NSSID, Local: "origin-id"}:
			in.OriginID, _ = c.AttrValue("id")
		}
	}
	return in
}

// IsBlockBounce reports whether an error message means that its sender
// will not take messages from the endpoint: <service-unavailable/>
// (Prosody and ejabberd bounce a blocked sender's message so, and so does
// an unreachable account), or <not-acceptable/> with XEP-0191's
// <blocked/>. Any such bounce stops the endpoint writing to that JID
// until it writes again.
func IsBlockBounce(el wire.Element) bool {
	for _, c := range el.Children() {
		if !stanzaChild(c.Start.Name, "error") {
			continue
		}
		var unavailable, notAcceptable, blocked bool
		for _, e := range c.Children() {
			switch {
			case e.Start.Name == xml.Name{Space: nsStanzas, Local: "service-unavailable"}:
				unavailable = true
			case e.Start.Name == xml.Name{Space: nsStanzas, Local: "not-acceptable"}:
				notAcceptable = true
			case e.Start.Name.Space == NSBlockingErrors:
				blocked = true
			}
		}
		return unavailable || (notAcceptable && blocked)
	}
	return false
}

// Outbound builds a message an endpoint sends: body, <active/> in a
// chat, origin-id (also its stanza id), an XEP-0461 reply when it answers one,
// and a store hint.
func Outbound(from, to jid.JID, typ, originID, body, lang, replyTo, replyID string) xml.TokenReader {
	kids := []xml.TokenReader{wire.TextElem(xml.Name{Local: "body"}, body)}
	if typ == string(stanza.ChatMessage) {
		// Chat states belong to chat sessions (XEP-0085), not to
		// messages of type normal.
		kids = append(kids, wire.Elem(xml.Name{Space: NSChatStates, Local: "active"}, nil))
	}
	kids = append(kids, wire.Elem(xml.Name{Space: NSSID, Local: "origin-id"}, []xml.Attr{wire.Attr("id", originID)}))
	if replyID != "" {
		kids = append(kids, wire.Elem(xml.Name{Space: NSReply, Local: "reply"}, []xml.Attr{wire.Attr("to", replyTo), wire.Attr("id", replyID)}))
	}
	kids = append(kids, wire.Elem(xml.Name{Space: NSHints, Local: "store"}, nil))
	msg := stanza.Message{ID: originID, From: from, To: to, Type: stanza.MessageType(typ), Lang: lang}
	return msg.Wrap(xmlstream.MultiReader(kids...))
}

// Receipt builds the XEP-0184 <received/> for the message id.
func Receipt(from, to jid.JID, id, ack string) xml.TokenReader {
	return stanza.Message{ID: id, From: from, To: to, Type: stanza.NormalMessage}.Wrap(
		wire.Elem(xml.Name{Space: NSReceipts, Local: "received"}, []xml.Attr{wire.Attr("id", ack)}))
}

// ChatState builds a message that carries only an XEP-0085 chat state
// ("composing", "active"), with a no-store hint: it is not worth keeping.
func ChatState(from, to jid.JID, typ, id, state string) xml.TokenReader {
	return stanza.Message{ID: id, From: from, To: to, Type: stanza.MessageType(typ)}.Wrap(xmlstream.MultiReader(
		wire.Elem(xml.Name{Space: NSChatStates, Local: state}, nil),
		wire.Elem(xml.Name{Space: NSHints, Local: "no-store"}, nil)))
}
