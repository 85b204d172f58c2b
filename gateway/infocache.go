package gateway

import (
	"encoding/xml"
	"strings"
	"sync"

	"agentgw/db"
	"agentgw/wire"
)

// maxCachedInfos bounds the endpoint disco#info answers kept built; past
// it the cache starts over. The idle release drops it whole.
const maxCachedInfos = 4096

// infoCache holds endpoint disco#info payloads, built once per endpoint
// version (the hash says which content) and feature list: the task
// features and the requester's command features (adhocEndpointFeatures),
// which differ between requesters, so a requester who may run a command
// and one who may not get different entries. Building its token stream
// was a fifth of the gateway's work per disco#info. It is consulted only after the visibility decision, so a
// hidden or nonexistent endpoint never reaches it.
type infoCache struct {
	mu sync.Mutex
	m  map[infoKey]wire.Frozen
}

type infoKey struct {
	jid, version, features string
	hash                   [32]byte
}

// endpointInfo is the disco#info payload of v, a visible endpoint, with
// the features tf (its task features and the requester's command
// features).
func (g *Gateway) endpointInfo(v db.Version, tf []string) xml.TokenReader {
	key := infoKey{jid: v.JID, version: v.Version, features: strings.Join(tf, " "), hash: v.Hash}
	c := &g.infos
	c.mu.Lock()
	f, ok := c.m[key]
	c.mu.Unlock()
	if ok {
		return f.Reader()
	}
	r := g.dir.EndpointInfo(v, features(g.endpointFeatures, tf)).TokenReader()
	f, err := wire.Freeze(r)
	if err != nil {
		// Our own token streams do not fail; if one did, answer
		// unfrozen, as before.
		return g.dir.EndpointInfo(v, features(g.endpointFeatures, tf)).TokenReader()
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxCachedInfos {
		c.m = make(map[infoKey]wire.Frozen)
	}
	c.m[key] = f
	c.mu.Unlock()
	return f.Reader()
}

// drop forgets every built answer (the idle release); the next request
// for each endpoint builds its answer again.
func (c *infoCache) drop() {
	c.mu.Lock()
	c.m = nil
	c.mu.Unlock()
}
