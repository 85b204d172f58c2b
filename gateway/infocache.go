package gateway

import (
	"encoding/xml"

	"agentgw/db"
	"agentgw/gateway/internal/hotpath"
	"agentgw/wire"
)

// endpointInfo is the disco#info payload of e, an endpoint the requester
// may see, with the features tf (its task features and the requester's
// command and chat features), kept built in g.infos (hotpath.Infos).
func (g *Gateway) endpointInfo(e hotpath.Visible, tf []string) xml.TokenReader {
	f, err := g.infos.Info(e, tf, func(v db.Version, tf []string) (wire.Frozen, error) {
		return wire.Freeze(g.dir.EndpointInfo(v, features(g.endpointFeatures, tf)).TokenReader())
	})
	if err != nil {
		// Our own token streams do not fail; if one did, answer
		// unfrozen, as before.
		return g.dir.EndpointInfo(e.Version(), features(g.endpointFeatures, tf)).TokenReader()
	}
	return f.Reader()
}
