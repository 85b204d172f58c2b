package account

import (
	"fmt"
	"net/url"
	"strings"

	"mellium.im/xmpp/jid"
)

// nodeAllowed are the characters besides RFC 3986 "unreserved" that RFC
// 5122's nodeallow lets stand unescaped in the node of an xmpp: URI.
const nodeAllowed = "!$()*+,;="

// ContactURI returns the xmpp: URI of a bare JID, escaped as RFC 5122
// says: in the node, every byte that is neither unreserved nor nodeallow is
// percent-encoded; in the domain, every byte that is neither unreserved
// nor a sub-delim. So no JID can break the URI (or make go-sdk refuse it).
func ContactURI(bare string) string {
	local, domain, found := strings.Cut(bare, "@")
	if !found {
		local, domain = "", bare
	}
	var b strings.Builder
	b.WriteString("xmpp:")
	if found {
		escape(&b, local, nodeAllowed)
		b.WriteByte('@')
	}
	escape(&b, domain, "!$&'()*+,;=")
	return b.String()
}

func escape(b *strings.Builder, s, allowed string) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9',
			c == '-', c == '.', c == '_', c == '~', strings.IndexByte(allowed, c) >= 0:
			b.WriteByte(c)
		default:
			fmt.Fprintf(b, "%%%02X", c)
		}
	}
}

// ParseContactURI returns the bare JID of an xmpp: URI made by ContactURI.
func ParseContactURI(uri string) (string, bool) {
	rest, ok := strings.CutPrefix(uri, "xmpp:")
	if !ok || strings.ContainsAny(rest, "/?#") {
		return "", false
	}
	s, err := url.PathUnescape(rest)
	if err != nil {
		return "", false
	}
	j, err := jid.Parse(s)
	if err != nil || j.Resourcepart() != "" {
		return "", false
	}
	// mellium drops one trailing dot of the domain, so "xmpp:.." parses
	// to the domain "." that no longer parses: a JID that does not parse
	// back to itself names no contact.
	bare := j.Bare().String()
	if again, err := jid.Parse(bare); err != nil || again.String() != bare {
		return "", false
	}
	return bare, true
}

// MessageURI is the mid: URI of a queued message.
func MessageURI(id string) string { return "mid:" + id }
