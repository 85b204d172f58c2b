package wire_test

import (
	"testing"

	"agentgw/internal/fuzztest"
	"agentgw/wire"
)

// FuzzEndpointInfo covers what a client reads from a disco#info result
// (agentclient, agentgw client, agentgw mcp): identities, features and the
// XEP-0128 endpoint and tool information forms. Seeds are in testdata/fuzz.
func FuzzEndpointInfo(f *testing.F) {
	fuzztest.Element(f, nil, func(el wire.Element) (any, error) {
		r, err := wire.ParseInfoResult(el)
		if err != nil {
			return nil, nil
		}
		_ = r.Values()
		_ = r.Name()
		_ = r.HasIdentity("automation", "agent-endpoint")
		_ = r.HasFeature("urn:xmpp:agent-task:0")
		return nil, nil
	})
}
