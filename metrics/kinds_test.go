package metrics_test

import (
	"os"
	"testing"

	"agentgw/metrics"
)

// TestMain puts in force the kinds these tests count under; in the binary
// the gateway builds them from its surface table when it is constructed.
func TestMain(m *testing.M) {
	k, err := metrics.NewIQKinds(map[string]string{
		"http://jabber.org/protocol/disco#info": "disco_info",
		"urn:xmpp:ping":                         "ping",
	})
	if err != nil {
		panic(err)
	}
	metrics.UseIQKinds(k)
	os.Exit(m.Run())
}

// TestNewIQKindsRefuses: a kind two namespaces share, "other", and a kind
// that is no label are refused; a good table is not.
func TestNewIQKindsRefuses(t *testing.T) {
	for _, byNS := range []map[string]string{
		{"urn:xmpp:ping": "ping", "urn:example:a": "ping"}, // kind twice
		{"urn:example:b": "other"},                         // the catch-all
		{"urn:example:c": "Has Space"},                     // not a label
		{"urn:example:d": ""},                              // empty
	} {
		if _, err := metrics.NewIQKinds(byNS); err == nil {
			t.Errorf("NewIQKinds(%v) took it", byNS)
		}
	}
	if _, err := metrics.NewIQKinds(map[string]string{"urn:xmpp:ping": "ping", "urn:example:e": "e_2"}); err != nil {
		t.Errorf("NewIQKinds of a good table: %v", err)
	}
}
