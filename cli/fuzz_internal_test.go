package cli

import (
	"testing"

	"agentgw/internal/fuzztest"
	"agentgw/wire"
)

// FuzzEndpointInfo covers what the client reads from a disco#info result:
// identities, features and the XEP-0128 endpoint and tool information
// forms. Seeds are in testdata/fuzz.
func FuzzEndpointInfo(f *testing.F) {
	fuzztest.Element(f, nil, func(el wire.Element) (any, error) {
		_ = formValues(el)
		_ = features(el)
		_ = identityName(el)
		_ = hasIdentity(el, "automation", "agent-endpoint")
		_ = hasFeature(el, "urn:xmpp:agent-task:0")
		return nil, nil
	})
}
