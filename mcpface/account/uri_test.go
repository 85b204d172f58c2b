package account_test

import (
	"net/url"
	"testing"

	"agentgw/mcpface/account"
)

func TestContactURI(t *testing.T) {
	cases := []struct{ bare, uri string }{
		{"alice@example.org", "xmpp:alice@example.org"},
		{"a#b?c%d@example.org", "xmpp:a%23b%3Fc%25d@example.org"},
		{"a!b+x=y@example.org", "xmpp:a!b+x=y@example.org"},
		{"a[b]@example.org", "xmpp:a%5Bb%5D@example.org"},
		{"jürgen@example.org", "xmpp:j%C3%BCrgen@example.org"},
		{"example.org", "xmpp:example.org"},
	}
	for _, c := range cases {
		got := account.ContactURI(c.bare)
		if got != c.uri {
			t.Errorf("ContactURI(%q) = %q, want %q", c.bare, got, c.uri)
		}
		if _, err := url.Parse(got); err != nil {
			t.Errorf("%q does not parse: %v", got, err)
		}
		back, ok := account.ParseContactURI(got)
		if !ok || back != c.bare {
			t.Errorf("ParseContactURI(%q) = %q %v", got, back, ok)
		}
	}
	for _, bad := range []string{"mid:x", "xmpp:a@b/c", "xmpp:%zz@b", "xmpp:a@b%2Fc", "xmpp:"} {
		if j, ok := account.ParseContactURI(bad); ok {
			t.Errorf("ParseContactURI(%q) = %q", bad, j)
		}
	}
}
