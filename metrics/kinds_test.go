package metrics_test

import (
	"testing"

	"agentgw/metrics"
)

// The kinds these tests count under; in the binary the gateway registers
// every kind from its surface table.
func init() {
	metrics.RegisterIQKind("http://jabber.org/protocol/disco#info", "disco_info")
	metrics.RegisterIQKind("urn:xmpp:ping", "ping")
}

// TestRegisterIQKindPanics: a namespace or a kind registered twice, and a
// kind that is "other" or no label, never make series.
func TestRegisterIQKindPanics(t *testing.T) {
	for _, c := range []struct{ ns, kind string }{
		{"urn:xmpp:ping", "ping2"},     // namespace twice
		{"urn:example:a", "ping"},      // kind twice
		{"urn:example:b", "other"},     // the catch-all
		{"urn:example:c", "Has Space"}, // not a label
		{"urn:example:d", ""},          // empty
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("RegisterIQKind(%q, %q) did not panic", c.ns, c.kind)
				}
			}()
			metrics.RegisterIQKind(c.ns, c.kind)
		}()
	}
}
