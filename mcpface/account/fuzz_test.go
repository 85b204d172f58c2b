package account

import (
	"encoding/json"
	"strings"
	"testing"

	"agentgw/mcpface/layer"
	"agentgw/wire"
)

// FuzzToolArgs: the arguments of every tool of the interface, as an MCP
// client sends them. Decoding never panics, an accepted value has the
// argument's declared type, and only declared arguments come out.
func FuzzToolArgs(f *testing.F) {
	for _, s := range []string{
		`{}`, `null`, `{"To":"bob@example.org","Message":"hi","IsMarkdown":true,"Language":"pt-BR"}`,
		`{"TimeoutSeconds":300}`, `{"TimeoutSeconds":1e400}`, `{"TimeoutSeconds":-9223372036854775809}`,
		`{"BareJid":"a@b","NickName":null,"Groups":["x",null]}`, `{"MessageId":"mid:0123456789abcdef0123456789abcdef","Remove":true}`,
		`[]`, `"x"`, `{"Unknown":1}`, `{"Groups":[]}`, `{"From":"\u0000"}`,
	} {
		for i := range tools {
			f.Add(i, []byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, which int, raw []byte) {
		if which < 0 {
			which = -which
		}
		tl := tools[which%len(tools)]
		a, err := tl.decode(json.RawMessage(raw))
		if err != nil {
			if a != nil {
				t.Fatalf("%s: error %v with arguments %v", tl.name, err, a)
			}
			return
		}
		for name, v := range a {
			var decl *arg
			for i := range tl.args {
				if tl.args[i].name == name {
					decl = &tl.args[i]
				}
			}
			if decl == nil {
				t.Fatalf("%s: undeclared argument %q", tl.name, name)
			}
			ok := false
			switch decl.kind {
			case kindString:
				_, ok = v.(string)
			case kindBool:
				_, ok = v.(bool)
			case kindInt:
				_, ok = v.(int)
			case kindStrings:
				_, ok = v.([]string)
			}
			if !ok {
				t.Fatalf("%s: %s is %T", tl.name, name, v)
			}
		}
		for _, d := range tl.args {
			if _, ok := a[d.name]; d.required && !ok {
				t.Fatalf("%s: required %s missing without an error", tl.name, d.name)
			}
		}
	})
}

// FuzzResourceURI: the URIs of resources/read and GetMessage's MessageId.
// A contact URI parses back to what ContactURI made of it, and a message
// id is ours (32 lower-case hex digits) or refused.
func FuzzResourceURI(f *testing.F) {
	for _, s := range []string{"xmpp:bob@example.org", "xmpp:a%23b@example.org", "xmpp:%", "xmpp:a@b/c", "mid:0123456789abcdef0123456789abcdef", "MID:x", "mid:", "xmpp:%zz@x", "xmpp:..", "xmpp:a@.."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, uri string) {
		if bare, ok := ParseContactURI(uri); ok {
			if back, ok := ParseContactURI(ContactURI(bare)); !ok || back != bare {
				t.Fatalf("%q: %q does not round-trip (%q)", uri, bare, back)
			}
		}
		if id, ok := messageID(uri); ok {
			if len(id) != 32 || strings.Trim(id, "0123456789abcdef") != "" {
				t.Fatalf("%q: message id %q accepted", uri, id)
			}
		}
		_ = layer.IsMessageURI(uri)
	})
}

// FuzzParseMessage: a received <message/>, as any JID may send it, turned
// into the MessageResponse a client reads. It never panics, and what it
// keeps is valid JSON.
func FuzzParseMessage(f *testing.F) {
	for _, s := range []string{
		`<message xmlns="jabber:client" from="bob@example.org/x" type="chat"><body>hi</body><thread parent="p">t</thread></message>`,
		`<message xmlns="jabber:client" type="error"><error type="cancel" code="503"><service-unavailable xmlns="urn:ietf:params:xml:ns:xmpp-stanzas"/><text xmlns="urn:ietf:params:xml:ns:xmpp-stanzas">no</text></error></message>`,
		`<message xmlns="jabber:client"><composing xmlns="http://jabber.org/protocol/chatstates"/></message>`,
		`<message xmlns="jabber:client" type="weird"><x xmlns="jabber:x:oob"><url>u</url></x></message>`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		el, err := wire.Parse(s)
		if err != nil {
			return
		}
		m, ok := parseMessage(el)
		if !ok {
			return
		}
		if _, err := json.Marshal(m); err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		if m.Type == nil || m.ErrorMessage == nil || m.ErrorMessageType == nil {
			t.Fatalf("%q: nullable fields unset: %+v", s, m)
		}
	})
}
