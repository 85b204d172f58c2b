package hotpath

import (
	"strings"
	"sync"

	"agentgw/db"
	"agentgw/wire"
)

// maxInfos bounds the endpoint disco#info answers kept built; past it the
// cache starts over. The idle release drops it whole.
const maxInfos = 4096

// Infos holds endpoint disco#info payloads, built once per endpoint
// version (the hash says which content) and feature list: the task
// features and the requester's command and chat features, which differ
// between requesters, so a requester who may run a command and one who
// may not get different entries. Building its token stream was a fifth
// of the gateway's work per disco#info. It takes a Visible, which Decided
// makes from the visibility decision's result only when that is not an
// error, so a hidden or nonexistent endpoint never reaches it. The zero
// Infos is empty and ready to use.
type Infos struct {
	mu sync.Mutex
	m  map[infoKey]wire.Frozen
}

type infoKey struct {
	jid, version, features string
	hash                   [32]byte
}

// Visible is an endpoint the requester may see, as the visibility
// decision (directory.Service.EndpointSummary) returned it.
type Visible struct{ v db.Version }

// Decided is the outcome of the visibility decision: a Visible endpoint,
// or the decision's error (a hidden or nonexistent endpoint).
func Decided(v db.Version, err error) (Visible, error) {
	if err != nil {
		return Visible{}, err
	}
	return Visible{v}, nil
}

// Version is the endpoint's version as the decision read it.
func (e Visible) Version() db.Version { return e.v }

// Info returns the disco#info payload of e with features, built by build
// unless it is kept. A build that fails is not kept; its error is
// returned.
func (c *Infos) Info(e Visible, features []string, build func(db.Version, []string) (wire.Frozen, error)) (wire.Frozen, error) {
	v := e.v
	key := infoKey{jid: v.JID, version: v.Version, features: strings.Join(features, " "), hash: v.Hash}
	c.mu.Lock()
	f, ok := c.m[key]
	c.mu.Unlock()
	if ok {
		return f, nil
	}
	f, err := build(v, features)
	if err != nil {
		return f, err
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxInfos {
		c.m = make(map[infoKey]wire.Frozen)
	}
	c.m[key] = f
	c.mu.Unlock()
	return f, nil
}

// Drop forgets every built answer (the idle release); the next request
// for each endpoint builds its answer again.
func (c *Infos) Drop() {
	c.mu.Lock()
	c.m = nil
	c.mu.Unlock()
}

// Len is the number of kept answers (tests).
func (c *Infos) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}
