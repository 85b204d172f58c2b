package account

import (
	"encoding/xml"
	"maps"
	"slices"
	"strconv"
	"strings"

	"agentgw/surface"
	"agentgw/wire"

	"mellium.im/xmpp/jid"
	"mellium.im/xmpp/stanza"
)

// GenericResponse is the seed's GenericResponse: the result of every tool
// but the message tools.
type GenericResponse struct {
	Success bool   `json:"Success"`
	Message string `json:"Message"`
}

// MessageResponse is the seed's MessageResponse: a received message, or
// why there is none (Success false). MessageId is beyond the seed: our own
// identifier of the message (its resource is mid:MessageId).
type MessageResponse struct {
	Success          bool    `json:"Success"`
	Message          string  `json:"Message"`
	MessageId        string  `json:"MessageId,omitempty"`
	From             string  `json:"From,omitempty"`
	FromBareJid      string  `json:"FromBareJid,omitempty"`
	To               string  `json:"To,omitempty"`
	Body             string  `json:"Body,omitempty"`
	Subject          string  `json:"Subject,omitempty"`
	ThreadID         string  `json:"ThreadID,omitempty"`
	ParentThreadID   string  `json:"ParentThreadID,omitempty"`
	ContentXml       string  `json:"ContentXml,omitempty"`
	Type             *string `json:"Type"`
	ErrorMessage     *bool   `json:"ErrorMessage"`
	ErrorMessageCode *int32  `json:"ErrorMessageCode"`
	ErrorMessageType *string `json:"ErrorMessageType"`
	ErrorMessageText string  `json:"ErrorMessageText,omitempty"`
}

// The seed's MessageType and ErrorType values. The error types are the
// surface table's, capitalized, between None (not an error) and
// Undefined (a type outside the table).
var (
	messageTypes = map[string]string{
		"chat": "Chat", "error": "Error", "groupchat": "GroupChat", "headline": "Headline", "normal": "Normal", "": "Normal",
	}
	messageTypeValues = []string{"Chat", "Error", "GroupChat", "Headline", "Normal"}
	errorTypes        = func() map[string]string {
		m := make(map[string]string, len(surface.Types))
		for _, t := range surface.Types {
			m[string(t)] = strings.ToUpper(string(t[:1])) + string(t[1:])
		}
		return m
	}()
	errorTypeValues = func() []string {
		v := []string{"None"}
		for _, t := range surface.Types {
			v = append(v, errorTypes[string(t)])
		}
		return append(v, "Undefined")
	}()
)

// Namespaces of the message payloads that carry no content for an MCP
// client: a message holding only these is not queued.
const (
	nsClient    = "jabber:client"
	nsStyling   = "urn:xmpp:styling:0"
	nsChatState = "http://jabber.org/protocol/chatstates"
	// nsXML is the namespace the xml: prefix is bound to (xml:lang).
	nsXML = "http://www.w3.org/XML/1998/namespace"
)

var noiseNamespaces = map[string]bool{
	nsChatState:               true,
	"urn:xmpp:receipts":       true,
	"urn:xmpp:chat-markers:0": true,
}

// parseMessage turns a received <message/> into a MessageResponse; ok is
// false for a message without content (a chat state or a receipt alone).
func parseMessage(el wire.Element) (m MessageResponse, ok bool) {
	m.Success = true
	m.From, _ = el.AttrValue("from")
	m.To, _ = el.AttrValue("to")
	if j, err := jid.Parse(m.From); err == nil {
		m.FromBareJid = j.Bare().String()
	}
	typ, _ := el.AttrValue("type")
	t, known := messageTypes[typ]
	if !known {
		t = "Normal"
	}
	m.Type = &t
	isErr := typ == "error"
	m.ErrorMessage = &isErr
	none := "None"
	m.ErrorMessageType = &none
	var content []string
	for _, c := range el.Children() {
		switch c.Start.Name {
		case xml.Name{Space: nsClient, Local: "body"}:
			if m.Body == "" {
				m.Body = c.Text()
			}
			continue
		case xml.Name{Space: nsClient, Local: "subject"}:
			if m.Subject == "" {
				m.Subject = c.Text()
			}
			continue
		case xml.Name{Space: nsClient, Local: "thread"}:
			m.ThreadID = c.Text()
			m.ParentThreadID, _ = c.AttrValue("parent")
			continue
		case xml.Name{Space: nsClient, Local: "error"}:
			parseError(c, &m)
			continue
		}
		if noiseNamespaces[c.Start.Name.Space] {
			continue
		}
		if s, err := wire.Marshal(c.Reader()); err == nil {
			content = append(content, s)
		}
	}
	m.ContentXml = strings.Join(content, "")
	ok = m.Body != "" || m.Subject != "" || m.ContentXml != "" || isErr
	return m, ok
}

func parseError(c wire.Element, m *MessageResponse) {
	se := decodeError(c)
	et := ""
	if _, typed := c.AttrValue("type"); typed {
		et = string(se.Type)
	}
	t, known := errorTypes[et]
	if !known {
		t = "Undefined"
	}
	m.ErrorMessageType = &t
	// An <error/> without a condition reads as undefined-condition in
	// surface.Decode; the tool contract reports it as no condition.
	condition := ""
	if se.Condition != stanza.UndefinedCondition || hasCondition(c) {
		condition = string(se.Condition)
	}
	m.ErrorMessageText = errorText(se)
	if m.ErrorMessageText == "" {
		m.ErrorMessageText = condition
	}
	if code, err := strconv.ParseInt(attr(c, "code"), 10, 32); err == nil {
		c32 := int32(code)
		m.ErrorMessageCode = &c32
	} else if code, ok := surface.LegacyCode(stanza.Condition(condition)); ok {
		c32 := int32(code)
		m.ErrorMessageCode = &c32
	}
}

// decodeError reads one <error/> element with surface.Decode, the one
// table of stanza errors.
func decodeError(c wire.Element) stanza.Error {
	inner := make(wire.Tokens, 0, len(c.Inner)+2)
	inner = append(inner, c.Start)
	inner = append(inner, c.Inner...)
	inner = append(inner, c.Start.End())
	return surface.Decode(wire.Element{Inner: inner})
}

// hasCondition reports whether the <error/> c names a defined condition.
func hasCondition(c wire.Element) bool {
	for _, e := range c.Children() {
		if e.Start.Name.Space == stanza.NSError && e.Start.Name.Local != "text" {
			return true
		}
	}
	return false
}

// errorText is the human-readable text of se: the one without a language
// when there is one, else the first by language tag.
func errorText(se stanza.Error) string {
	if t, ok := se.Text[""]; ok {
		return t
	}
	keys := slices.Sorted(maps.Keys(se.Text))
	if len(keys) == 0 {
		return ""
	}
	return se.Text[keys[0]]
}

func attr(e wire.Element, name string) string {
	v, _ := e.AttrValue(name)
	return v
}
